#pragma once
// Training checkpoints: a JSON header (step, epoch, settings, and where each tensor lies) and
// the raw tensors (weights, optimizer state, BatchNorm statistics) in one file, written
// through a temporary name so a killed run never leaves half a checkpoint.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "joule/core/tensor.h"

namespace joule::train {

struct Checkpoint {
  nlohmann::json meta;
  std::map<std::string, Tensor> tensors;
};

void save_checkpoint(const std::string& path, const Checkpoint& c);
// BadInput naming the file when it is missing, truncated or not a joule checkpoint.
Checkpoint load_checkpoint(const std::string& path);

}  // namespace joule::train
