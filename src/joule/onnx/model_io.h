#pragma once
// ONNX import and export. The only place in joule that sees ONNX protobuf types.
#include <string>

#include "joule/core/tensor.h"
#include "joule/ir/graph.h"

namespace joule::onnx {

// Reads an .onnx file (external data files are resolved next to it). Throws BadInput for a
// missing, truncated or malformed file; Unsupported for constructs joule cannot represent
// (sequence/map types, graph attributes, sparse initializers), naming where.
ir::Graph load_model(const std::string& path);
ir::Graph parse_model(const std::string& bytes, const std::string& base_dir, const std::string& what);

struct SaveOptions {
  // Initializers of at least this many bytes go to one external data file beside the model
  // (`<model file name>.data`), as ONNX does for models over protobuf's 2 GB limit. 0: never.
  size_t external_data_threshold = 0;
};

// Writes the graph as an ONNX model (initializers as raw data, inferred types as value_info).
void save_model(const ir::Graph& g, const std::string& path, const SaveOptions& options = {});
std::string serialize_model(const ir::Graph& g);

// A serialized TensorProto (.pb), as in ONNX test data.
Tensor load_tensor_pb(const std::string& path);
Tensor parse_tensor_pb(const std::string& bytes, const std::string& what);
// A serialized TensorProto, SequenceProto or OptionalProto (ONNX test data), read as `type`'s
// kind says.
Tensor load_value_pb(const std::string& path, const ir::TensorType& type);
void save_tensor_pb(const Tensor& t, const std::string& name, const std::string& path);

}  // namespace joule::onnx
