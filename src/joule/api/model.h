#pragma once
// A Model: a graph loaded once and shared read-only by every workflow (copies share it).
// Workflows that transform a model (quantize) return a new Model; nothing mutates one.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "joule/ir/graph.h"

namespace joule::api {

class Model {
 public:
  Model() = default;
  // `path`: the file it came from ("" for none; the data layer looks for `<model>.json`
  // normalisation beside it); `name`: a file-name-safe label for reports (default: the
  // file's stem, else the graph's name, else "model").
  explicit Model(ir::Graph graph, std::string path = "", std::string name = "");

  // An ONNX file; "default" (or "fashion_cnn") is the bundled Fashion-MNIST CNN.
  static Model load(const std::string& path);
  // A serialized ONNX model (external data, if any, is looked up in `base_dir`).
  static Model from_bytes(const std::string& bytes, const std::string& name = "model",
                          const std::string& base_dir = ".");

  bool empty() const { return !graph_; }
  const ir::Graph& graph() const;
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  const std::vector<std::string>& input_names() const { return graph().inputs; }
  const std::vector<std::string>& output_names() const { return graph().outputs; }

  // The same model with these input shapes declared (symbolic dims resolved for inference,
  // cost and data loading). Key "": the only input of a one-input model. BadInput for an
  // unknown input or a rank that contradicts the model.
  Model with_input_shapes(const std::map<std::string, Shape>& shapes) const;
  // The same model with the symbolic dims of its inputs resolved from the tensors it is about to
  // run on (a dynamic-batch export then plans static shapes: fast kernels, memory plan). Inputs
  // declared static, absent from `inputs` or of another rank are left for the session to check.
  Model resolved_for(const std::map<std::string, Tensor>& inputs) const;

  // A model made from this one (quantized, pruned, trained): `graph` under `name`, no file yet,
  // the same data preprocessing.
  Model derived(ir::Graph graph, const std::string& name) const;
  // `<model>.json` beside the file the model (or the one it was derived from) was loaded from;
  // its "normalisation": {"mean", "std"} is the data preprocessing (api/data.h). "" when none.
  const std::string& sidecar() const { return sidecar_; }

  // Nodes of joule's own domain (FakeQuant for formats ONNX cannot express).
  std::vector<std::string> joule_op_nodes() const;

  // Writes ONNX (and the model's preprocessing sidecar JSON, when it has one, beside it as
  // PATH with .json). A model with joule-domain nodes is refused (BadInput listing them) unless
  // `allow_joule_ops`: only joule loads such a file.
  void save(const std::string& path, bool allow_joule_ops = false) const;
  std::string to_bytes(bool allow_joule_ops = false) const;

 private:
  std::shared_ptr<const ir::Graph> graph_;
  std::string path_, name_, sidecar_;
};

// Names of the joule-domain nodes of a graph.
std::vector<std::string> joule_op_nodes(const ir::Graph& g);

// The file a model name resolves to ("default" -> the bundled model's path; others unchanged).
std::string resolve_model_path(const std::string& path);

// "NAME=1,3,224,224" or "1,3,224,224" (the only input) -> {NAME or "", dims}.
std::pair<std::string, Shape> parse_input_shape(const std::string& spec);

// Replaces characters outside [A-Za-z0-9._-] with '_' (output file names).
std::string safe_filename(const std::string& s);

}  // namespace joule::api
