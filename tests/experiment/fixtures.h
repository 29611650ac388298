#pragma once
// Small CNN classifiers written as ONNX files with calibration data, for experiment tests.
#include <filesystem>
#include <string>

#include "graph_builder.h"
#include "joule/core/npy.h"
#include "joule/onnx/model_io.h"
#include "test_tensors.h"

namespace joule::testing {

// Conv(3x3, `channels`) + Relu + GlobalAveragePool + Flatten + Gemm(10), input [1,3,`size`,`size`];
// writes DIR/NAME.onnx and DIR/NAME_calib.npy (4 samples). Returns the model's path.
inline std::string write_small_cnn(const std::filesystem::path& dir, const std::string& name, int64_t channels,
                                   int64_t size, uint32_t seed) {
  const std::string path = (dir / (name + ".onnx")).string();
  ir::Graph g = GraphBuilder()
                    .input("x", DType::Float32, {1, 3, size, size})
                    .init("w", random_tensor({channels, 3, 3, 3}, seed, -0.5f, 0.5f))
                    .init("b", random_tensor({channels}, seed + 1, -0.1f, 0.1f))
                    .init("fw", random_tensor({10, channels}, seed + 2, -0.5f, 0.5f))
                    .init("fb", random_tensor({10}, seed + 3, -0.1f, 0.1f))
                    .node("Conv", {"x", "w", "b"}, {"c"},
                          {{"pads", ir::Attribute(std::vector<int64_t>{1, 1, 1, 1})},
                           {"kernel_shape", ir::Attribute(std::vector<int64_t>{3, 3})}},
                          "conv")
                    .node("Relu", {"c"}, {"r"}, {}, "relu")
                    .node("GlobalAveragePool", {"r"}, {"p"}, {}, "pool")
                    .node("Flatten", {"p"}, {"f"}, {}, "flatten")
                    .node("Gemm", {"f", "fw", "fb"}, {"y"}, {{"transB", ir::Attribute(int64_t{1})}}, "fc")
                    .output("y")
                    .build();
  onnx::save_model(g, path);
  save_npy(random_tensor({4, 3, size, size}, seed + 4, 0.f, 1.f), (dir / (name + "_calib.npy")).string());
  return path;
}

}  // namespace joule::testing
