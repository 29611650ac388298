#include "joule/api/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "joule/core/error.h"
#include "joule/core/file_util.h"
#include "joule/onnx/model_io.h"
#include "joule/train/expand_gradient.h"

namespace joule::api {

namespace fs = std::filesystem;

Model::Model(ir::Graph graph, std::string path, std::string name) : path_(std::move(path)), name_(std::move(name)) {
  if (name_.empty()) name_ = !path_.empty() ? fs::path(path_).stem().string() : graph.name;
  name_ = safe_filename(name_.empty() ? "model" : name_);
  train::expand_gradient_nodes(graph);  // ONNX's in-graph Gradient requests become ordinary nodes
  graph_ = std::make_shared<const ir::Graph>(std::move(graph));
  if (!path_.empty()) {
    const fs::path side = fs::path(path_).replace_extension(".json");
    std::error_code ec;
    if (fs::is_regular_file(side, ec)) sidecar_ = side.string();
  }
}

Model Model::derived(ir::Graph graph, const std::string& name) const {
  Model m(std::move(graph), "", name);
  m.sidecar_ = sidecar_;
  return m;
}

Model Model::load(const std::string& path) {
  const std::string file = resolve_model_path(path);
  return Model(onnx::load_model(file), file);
}

Model Model::from_bytes(const std::string& bytes, const std::string& name, const std::string& base_dir) {
  return Model(onnx::parse_model(bytes, base_dir, name), "", name);
}

const ir::Graph& Model::graph() const {
  if (!graph_) fail("model: empty (load one first)");
  return *graph_;
}

Model Model::with_input_shapes(const std::map<std::string, Shape>& shapes) const {
  ir::Graph g = graph();
  for (const auto& [given, shape] : shapes) {
    std::string name = given;
    if (name.empty()) {
      if (g.inputs.size() != 1)
        fail("input shape " + shape_str(shape) + ": the model has several inputs, name the one it is for");
      name = g.inputs[0];
    }
    if (std::find(g.inputs.begin(), g.inputs.end(), name) == g.inputs.end())
      fail("input shape " + shape_str(shape) + ": '" + name + "' is not an input of the model");
    const ir::TensorType* t = g.type_of(name);
    if (t && t->has_shape && t->dims.size() != shape.size())
      fail("input shape " + name + "=" + shape_str(shape) + ": the model declares " + t->str() + " (rank " +
           std::to_string(t->dims.size()) + ")");
    g.types[name] = ir::TensorType::of(t ? t->dtype : DType::Float32, shape);
  }
  Model m = *this;
  m.graph_ = std::make_shared<const ir::Graph>(std::move(g));
  return m;
}

Model Model::resolved_for(const std::map<std::string, Tensor>& inputs) const {
  std::map<std::string, Shape> shapes;
  for (const std::string& name : graph().inputs) {
    const ir::TensorType* t = graph().type_of(name);
    auto it = inputs.find(name);
    if (!t || !t->is_tensor() || t->is_static() || it == inputs.end() || !it->second.is_tensor()) continue;
    if (t->has_shape && t->dims.size() != it->second.shape().size()) continue;
    shapes[name] = it->second.shape();
  }
  return shapes.empty() ? *this : with_input_shapes(shapes);
}

std::vector<std::string> joule_op_nodes(const ir::Graph& g) {
  std::vector<std::string> v;
  for (auto& n : g.nodes)
    if (n->domain == "joule") v.push_back(n->name);
  return v;
}

std::vector<std::string> Model::joule_op_nodes() const { return api::joule_op_nodes(graph()); }

namespace {
void check_exportable(const Model& m, bool allow_joule_ops, const std::string& where) {
  const std::vector<std::string> custom = m.joule_op_nodes();
  if (custom.empty() || allow_joule_ops) return;
  std::string names;
  std::set<std::string> types;
  for (size_t i = 0; i < custom.size() && i < 8; ++i) names += (i ? ", " : "") + custom[i];
  for (const auto& n : m.graph().nodes)
    if (n->domain == "joule") types.insert(n->op_type);
  std::string list;
  for (const auto& t : types) list += (list.empty() ? "" : ", ") + t;
  fail(fmt::format("{}: {} nodes are joule's own ops that no other runtime loads ({}: {}{}); FakeQuant: use 8-bit "
                   "integer formats, or allow joule ops (--allow-joule-ops, allow_joule_ops=True) for a file only joule loads",
                   where, custom.size(), list, names, custom.size() > 8 ? ", ..." : ""));
}
}  // namespace

void Model::save(const std::string& path, bool allow_joule_ops) const {
  check_exportable(*this, allow_joule_ops, path);
  onnx::save_model(graph(), path);
  // The preprocessing travels with the model: its sidecar JSON beside the new file.
  if (!sidecar_.empty()) {
    const fs::path side = fs::path(path).replace_extension(".json");
    std::error_code ec;
    if (!fs::equivalent(side, sidecar_, ec)) write_file_atomic(side.string(), read_file(sidecar_));
  }
}

std::string Model::to_bytes(bool allow_joule_ops) const {
  check_exportable(*this, allow_joule_ops, name_);
  return onnx::serialize_model(graph());
}

std::string resolve_model_path(const std::string& path) {
  if (path == "default" || path == "fashion_cnn") {
    for (const char* dir : {JOULE_MODELS_DIR, "models"}) {
      auto p = fs::path(dir) / "fashion_cnn.onnx";
      if (fs::exists(p)) return p.string();
    }
  }
  return path;
}

std::pair<std::string, Shape> parse_input_shape(const std::string& spec) {
  const auto eq = spec.find('=');
  const std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
  const std::string dims = eq == std::string::npos ? spec : spec.substr(eq + 1);
  Shape shape;
  size_t pos = 0;
  while (pos <= dims.size()) {
    const size_t comma = dims.find(',', pos);
    const std::string item = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0) fail("input shape " + spec + ": '" + item + "' is not a dimension");
    shape.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return {name, shape};
}

std::string safe_filename(const std::string& s) {
  std::string r = s;
  for (char& c : r)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (r.empty() || r == "." || r == "..") r = "_" + r;
  return r;
}

}  // namespace joule::api
