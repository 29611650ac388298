// Identity: the output shares the input's buffer (any value: tensor, sequence or optional).
#include "joule/ops/movement_util.h"

namespace joule::ops {
namespace {

void infer(InferContext& c) { infer_same_as_input(c); }
void run(KernelContext& c) { c.outputs[0] = c.in(0); }

}  // namespace

extern const OpDef kOpIdentity;
const OpDef kOpIdentity{"Identity", "", 1, 1, infer, run, data_movement_cost, nullptr, true, true};

}  // namespace joule::ops
