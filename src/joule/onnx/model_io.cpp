#include "joule/onnx/model_io.h"

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include "joule/core/file_util.h"
#include "joule/core/parse.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <fstream>
#include <sstream>

namespace joule::onnx {

namespace fs = std::filesystem;

namespace {

// (The field's length was checked against the shape before t was made: stored_values.)
template <class Src, class Dst>
void copy_field(const Src& field, Tensor& t) {
  Dst* d = static_cast<Dst*>(t.raw());
  for (int i = 0; i < field.size(); ++i) d[i] = static_cast<Dst>(field.Get(i));
}

// 16-bit floats and small ints live in int32_data as their bit pattern / value.
void copy_int32_field_bits(const ::onnx::TensorProto& p, Tensor& t) {
  auto* d = static_cast<uint16_t*>(t.raw());
  for (int i = 0; i < p.int32_data_size(); ++i) d[i] = static_cast<uint16_t>(p.int32_data(i));
}

// The values a tensor stores in its typed field (float_data, int64_data, ...) for dtype dt.
int64_t stored_values(const ::onnx::TensorProto& p, DType dt) {
  switch (dt) {
    case DType::Float32: return p.float_data_size();
    case DType::Float64: return p.double_data_size();
    case DType::Int64: return p.int64_data_size();
    case DType::UInt64:
    case DType::UInt32: return p.uint64_data_size();
    default: return p.int32_data_size();
  }
}

// A tensor's external data file, positioned at its bytes, after checking the location stays in
// the model's folder and the file holds them.
std::ifstream external_data(const ::onnx::TensorProto& p, const std::string& base_dir, const std::string& what, size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_int64(kv.value(), what + ": external data offset");
    else if (kv.key() == "length") length = parse_int64(kv.value(), what + ": external data length");
  }
  if (location.empty()) fail(what + ": external data without a location");
  if (fs::path(location).is_absolute() || location.find("..") != std::string::npos)
    fail(what + ": external data location '" + location + "' must be relative to the model");
  std::string path = (fs::path(base_dir) / location).string();
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(what + ": external data file " + path + " not found");
  f.seekg(0, std::ios::end);
  int64_t size = f.tellg();
  if (length < 0) length = static_cast<int64_t>(nbytes);
  if (offset < 0 || length > size || offset > size - length)
    fail(what + ": external data " + path + " is too short (" + std::to_string(size) +
         " bytes, need " + std::to_string(offset + length) + ")");
  if (static_cast<size_t>(length) != nbytes)
    fail(what + ": external data has " + std::to_string(length) + " bytes, the shape needs " + std::to_string(nbytes));
  f.seekg(offset);
  return f;
}

Tensor tensor_from_proto(const ::onnx::TensorProto& p, const std::string& base_dir,
                         const std::string& what) {
  DType dt = dtype_from_onnx(p.data_type());
  if (dt == DType::Undefined)
    fail_unsupported(what + ": tensor data type " + std::to_string(p.data_type()) + " is not supported");
  if (p.has_segment()) fail_unsupported(what + ": segmented tensors are not supported");
  Shape shape(p.dims().begin(), p.dims().end());
  // The data the file holds is checked against the shape before the tensor is allocated: a
  // shape that claims more than the data (or than memory) is refused without allocating it.
  const size_t nbytes = checked_nbytes(dt, shape, what);
  if (dt != DType::String && p.data_location() != ::onnx::TensorProto::EXTERNAL) {
    const size_t have = p.has_raw_data() ? p.raw_data().size()
                                          : dtype_size(dt) * static_cast<size_t>(stored_values(p, dt));
    if (have != nbytes)
      fail(what + ": " + (p.has_raw_data() ? "raw_data has " + std::to_string(have) + " bytes"
                                            : "has " + std::to_string(stored_values(p, dt)) + " values") +
           ", shape " + shape_str(shape) + " of " + dtype_name(dt) + " needs " + std::to_string(nbytes / dtype_size(dt)) +
           " values (" + std::to_string(nbytes) + " bytes)");
  }
  if (dt == DType::String) {
    if (p.data_location() == ::onnx::TensorProto::EXTERNAL) fail(what + ": string tensors cannot have external data");
    if (p.string_data_size() != shape_numel(shape))
      fail(what + ": has " + std::to_string(p.string_data_size()) + " strings, shape needs " + std::to_string(shape_numel(shape)));
    Tensor t(dt, shape);
    std::copy(p.string_data().begin(), p.string_data().end(), t.data<std::string>());
    return t;
  }
  // Bytes copied into a bool tensor: any nonzero byte is true (1); a bool holding another value is
  // undefined behaviour in C++ (UBSan found a Loop condition of 185).
  auto bools_01 = [&](Tensor& t) {
    if (dt != DType::Bool) return;
    auto* b = static_cast<uint8_t*>(t.raw());
    for (size_t i = 0; i < nbytes; ++i) b[i] = b[i] != 0;
  };
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
    std::ifstream f = external_data(p, base_dir, what, nbytes);
    Tensor t(dt, shape);
    f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(nbytes));
    bools_01(t);
    return t;
  }
  if (p.has_raw_data()) {
    Tensor t = Tensor::uninitialized(dt, shape);  // every byte copied below
    if (nbytes) std::memcpy(t.raw(), p.raw_data().data(), nbytes);
    bools_01(t);
    return t;
  }
  Tensor t(dt, shape);
  switch (dt) {
    case DType::Float32: copy_field<decltype(p.float_data()), float>(p.float_data(), t); break;
    case DType::Float64: copy_field<decltype(p.double_data()), double>(p.double_data(), t); break;
    case DType::Int64: copy_field<decltype(p.int64_data()), int64_t>(p.int64_data(), t); break;
    case DType::UInt64: copy_field<decltype(p.uint64_data()), uint64_t>(p.uint64_data(), t); break;
    case DType::UInt32: copy_field<decltype(p.uint64_data()), uint32_t>(p.uint64_data(), t); break;
    case DType::Int32: copy_field<decltype(p.int32_data()), int32_t>(p.int32_data(), t); break;
    case DType::Int16: copy_field<decltype(p.int32_data()), int16_t>(p.int32_data(), t); break;
    case DType::UInt16: copy_field<decltype(p.int32_data()), uint16_t>(p.int32_data(), t); break;
    case DType::Int8: copy_field<decltype(p.int32_data()), int8_t>(p.int32_data(), t); break;
    case DType::UInt8: copy_field<decltype(p.int32_data()), uint8_t>(p.int32_data(), t); break;
    case DType::Bool: copy_field<decltype(p.int32_data()), bool>(p.int32_data(), t); break;
    case DType::Float16:
    case DType::BFloat16: copy_int32_field_bits(p, t); break;
    case DType::String:
    case DType::Undefined: break;
  }
  return t;
}

void tensor_to_proto(const Tensor& t, const std::string& name, ::onnx::TensorProto* p) {
  p->set_name(name);
  p->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.dtype() == DType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) p->add_string_data(t.data<std::string>()[i]);
    return;
  }
  p->set_raw_data(t.raw(), t.nbytes());
}

ir::TensorType tensor_type_from_proto(const ::onnx::TypeProto::Tensor& tt, const std::string& what) {
  ir::TensorType r;
  r.dtype = dtype_from_onnx(tt.elem_type());
  if (r.dtype == DType::Undefined)
    fail_unsupported(what + ": element type " + std::to_string(tt.elem_type()) + " is not supported");
  if (tt.has_shape()) {
    r.has_shape = true;
    for (auto& d : tt.shape().dim()) {
      ir::Dim dim;
      if (d.has_dim_value()) dim.value = d.dim_value();
      else if (d.has_dim_param()) dim.param = d.dim_param();
      r.dims.push_back(dim);
    }
  }
  return r;
}

// A tensor, a sequence of tensors, or an optional of either.
ir::TensorType type_from_proto(const ::onnx::TypeProto& tp, const std::string& what) {
  auto unsupported = [&](const ::onnx::TypeProto& t) {
    std::string kind = t.has_map_type() ? "map" : t.has_sparse_tensor_type() ? "sparse tensor" : "nested sequence or optional";
    fail_unsupported(what + ": " + kind + " values are not supported (tensors, sequences of tensors and optionals)");
  };
  // An element type left unset (a body input of a Loop) is a tensor of undefined dtype.
  auto element = [&](const ::onnx::TypeProto& e) {
    if (e.value_case() == ::onnx::TypeProto::VALUE_NOT_SET) return ir::TensorType{};
    if (!e.has_tensor_type()) unsupported(e);
    return tensor_type_from_proto(e.tensor_type(), what);
  };
  if (tp.has_tensor_type()) return tensor_type_from_proto(tp.tensor_type(), what);
  if (tp.has_sequence_type()) return element(tp.sequence_type().elem_type()).with_kind(ValueKind::Sequence);
  if (tp.has_optional_type()) {
    const auto& e = tp.optional_type().elem_type();
    if (e.has_sequence_type())
      return element(e.sequence_type().elem_type()).with_kind(ValueKind::Optional, ValueKind::Sequence);
    return element(e).with_kind(ValueKind::Optional);
  }
  unsupported(tp);
  return {};
}

void type_to_proto(const ir::TensorType& t, ::onnx::TypeProto* tp) {
  if (t.kind == ValueKind::Sequence) tp = tp->mutable_sequence_type()->mutable_elem_type();
  if (t.kind == ValueKind::Optional) {
    tp = tp->mutable_optional_type()->mutable_elem_type();
    if (t.held == ValueKind::Sequence) tp = tp->mutable_sequence_type()->mutable_elem_type();
  }
  auto* tt = tp->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(t.dtype));
  if (!t.has_shape) return;
  auto* sh = tt->mutable_shape();
  for (auto& d : t.dims) {
    auto* pd = sh->add_dim();
    if (d.is_static()) pd->set_dim_value(d.value);
    else if (!d.param.empty()) pd->set_dim_param(d.param);
  }
}

ir::Graph graph_part_from_proto(::onnx::GraphProto& gp, const std::map<std::string, int64_t>& opsets,
                                const std::string& base_dir, const std::string& what, bool body);

// Attribute lists (pads, perm, Constant's value_ints, ...) longer than this are refused: no op
// needs one, and a crafted file would otherwise have joule copy gigabytes of them.
constexpr int64_t kMaxAttributeList = int64_t{1} << 24;

void check_list(int64_t n, const ::onnx::AttributeProto& a, const std::string& what) {
  if (n > kMaxAttributeList)
    fail(what + ": attribute '" + a.name() + "' is a list of " + std::to_string(n) + " entries (joule takes at most " +
         std::to_string(kMaxAttributeList) + ")");
}

ir::Attribute attr_from_proto(::onnx::AttributeProto& a, const std::map<std::string, int64_t>& opsets,
                              const std::string& base_dir, const std::string& what) {
  using A = ::onnx::AttributeProto;
  switch (a.type()) {
    case A::GRAPH:
      return std::make_shared<const ir::Graph>(
          graph_part_from_proto(*a.mutable_g(), opsets, base_dir, what + " attribute '" + a.name() + "'", true));
    case A::FLOAT: return a.f();
    case A::INT: return static_cast<int64_t>(a.i());
    case A::STRING: return a.s();
    case A::TENSOR: return tensor_from_proto(a.t(), base_dir, what + " attribute '" + a.name() + "'");
    case A::FLOATS: check_list(a.floats_size(), a, what); return std::vector<float>(a.floats().begin(), a.floats().end());
    case A::INTS: check_list(a.ints_size(), a, what); return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case A::STRINGS: check_list(a.strings_size(), a, what); return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case A::TYPE_PROTO: return type_from_proto(a.tp(), what + " attribute '" + a.name() + "'");
    default: break;
  }
  fail_unsupported(what + ": attribute '" + a.name() + "' has a type joule does not support "
                   "(sparse tensor, type-list or graph-list attributes)");
}

void graph_part_to_proto(const ir::Graph& g, ::onnx::GraphProto* gp);

void attr_to_proto(const std::string& name, const ir::Attribute& v, ::onnx::AttributeProto* a) {
  using A = ::onnx::AttributeProto;
  a->set_name(name);
  std::visit(
      [&](const auto& x) {
        using V = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<V, int64_t>) {
          a->set_type(A::INT);
          a->set_i(x);
        } else if constexpr (std::is_same_v<V, float>) {
          a->set_type(A::FLOAT);
          a->set_f(x);
        } else if constexpr (std::is_same_v<V, std::string>) {
          a->set_type(A::STRING);
          a->set_s(x);
        } else if constexpr (std::is_same_v<V, Tensor>) {
          a->set_type(A::TENSOR);
          tensor_to_proto(x, "", a->mutable_t());
        } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
          a->set_type(A::INTS);
          for (auto i : x) a->add_ints(i);
        } else if constexpr (std::is_same_v<V, std::vector<float>>) {
          a->set_type(A::FLOATS);
          for (auto f : x) a->add_floats(f);
        } else if constexpr (std::is_same_v<V, ir::GraphRef>) {
          a->set_type(A::GRAPH);
          graph_part_to_proto(*x, a->mutable_g());
        } else if constexpr (std::is_same_v<V, ir::TensorType>) {
          a->set_type(A::TYPE_PROTO);
          type_to_proto(x, a->mutable_tp());
        } else {
          a->set_type(A::STRINGS);
          for (auto& s : x) a->add_strings(s);
        }
      },
      v);
}

}  // namespace

namespace {

// The graph of a parsed model. Each initializer's bytes are released from `m` as soon as they
// are copied into a tensor, so the weights are never held three times (file, protobuf, tensors).
ir::Graph graph_from_proto(::onnx::ModelProto& m, const std::string& base_dir, const std::string& what) {
  if (!m.has_graph()) fail(what + ": ONNX model has no graph");
  if (m.ir_version() <= 0) fail(what + ": ONNX model has no ir_version (not an ONNX model?)");
  std::map<std::string, int64_t> opsets;
  for (auto& op : m.opset_import()) {
    std::string dom = op.domain() == "ai.onnx" ? "" : op.domain();
    opsets[dom] = op.version();
  }
  if (!opsets.count("")) opsets[""] = 1;  // ONNX: missing default domain means opset 1
  ir::Graph g = graph_part_from_proto(*m.mutable_graph(), opsets, base_dir, what, false);
  if (!m.producer_name().empty()) g.model_props["producer"] = m.producer_name();
  if (!m.producer_version().empty()) g.model_props["producer_version"] = m.producer_version();
  for (auto& kv : m.metadata_props()) g.model_props[kv.key()] = kv.value();
  return g;
}

}  // namespace

namespace {

// The names graph `g` reads without defining them (inputs, initializers, node outputs): the
// outer-scope values a body captures, in order of first use.
std::vector<std::string> free_names(const ir::Graph& g) {
  std::set<std::string> defined(g.inputs.begin(), g.inputs.end()), seen;
  for (auto& [name, t] : g.initializers) defined.insert(name);
  for (auto& n : g.nodes) defined.insert(n->outputs.begin(), n->outputs.end());
  std::vector<std::string> r;
  auto use = [&](const std::string& v) {
    if (!v.empty() && !defined.count(v) && seen.insert(v).second) r.push_back(v);
  };
  for (auto& n : g.nodes)
    for (auto& in : n->inputs) use(in);
  for (auto& o : g.outputs) use(o);
  return r;
}

// Inputs, outputs, initializers and nodes of a GraphProto (the model's graph or, `body`, a graph
// attribute, whose inputs may leave their type to the node). Each initializer's bytes are
// released from `gp` once copied. A node with graph attributes gets the outer-scope values its
// bodies read as implicit inputs (Node::captured).
ir::Graph graph_part_from_proto(::onnx::GraphProto& gp, const std::map<std::string, int64_t>& opsets,
                                const std::string& base_dir, const std::string& what, bool body) {
  if (gp.sparse_initializer_size() > 0) fail_unsupported(what + ": sparse initializers are not supported");
  ir::Graph g;
  g.name = gp.name();
  g.opsets = opsets;
  for (auto& init : *gp.mutable_initializer()) {
    if (init.name().empty()) fail(what + ": initializer without a name");
    Tensor t = tensor_from_proto(init, base_dir, what + ": initializer '" + init.name() + "'");
    std::string().swap(*init.mutable_raw_data());
    init.clear_float_data();  // typed fields: small models; their capacity goes with the proto
    g.types[init.name()] = ir::TensorType::of(t.dtype(), t.shape());
    g.initializers[init.name()] = std::move(t);
  }
  for (auto& vi : gp.input()) {
    if (g.initializers.count(vi.name())) continue;  // initializer listed as input (IR < 4)
    g.inputs.push_back(vi.name());
    if (!body || vi.has_type()) g.types[vi.name()] = type_from_proto(vi.type(), what + ": input '" + vi.name() + "'");
  }
  for (auto& vi : gp.output()) {
    g.outputs.push_back(vi.name());
    if (vi.has_type()) g.types[vi.name()] = type_from_proto(vi.type(), what + ": output '" + vi.name() + "'");
  }
  int idx = 0;
  for (auto& np : *gp.mutable_node()) {
    ir::Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? n.op_type + "_" + std::to_string(idx) : np.name();
    ++idx;
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (auto& a : *np.mutable_attribute()) {
      if (!a.ref_attr_name().empty())
        fail_unsupported(what + ": " + n.where() + " uses a function attribute reference");
      n.attrs[a.name()] = attr_from_proto(a, opsets, base_dir, what + ": " + n.where());
    }
    std::set<std::string> captured;
    for (auto& [k, a] : n.attrs)
      if (auto* body = std::get_if<ir::GraphRef>(&a))
        for (const std::string& v : free_names(**body))
          if (captured.insert(v).second) n.captured.push_back(v);
    n.inputs.insert(n.inputs.end(), n.captured.begin(), n.captured.end());
    g.add_node(std::move(n));
  }
  // Names go into JSON reports, which must be UTF-8 (ONNX says they are; protobuf's proto2 does
  // not check).
  auto check_name = [&](const std::string& name, const std::string& kind) {
    if (!is_utf8(name)) fail(what + ": a " + kind + " name is not UTF-8");
  };
  check_name(g.name, "graph");
  for (const auto& [name, t] : g.initializers) check_name(name, "initializer");
  for (const auto& name : g.inputs) check_name(name, "graph input");
  for (const auto& name : g.outputs) check_name(name, "graph output");
  for (auto& n : g.nodes) {
    check_name(n->name, "node");
    check_name(n->op_type, "op type");
    check_name(n->domain, "domain");
    for (const auto& v : n->inputs) check_name(v, "node input");
    for (const auto& v : n->outputs) check_name(v, "node output");
  }
  // Node names must be unique for per-layer reports and --algo NAME.
  std::map<std::string, int> seen;
  for (auto& n : g.nodes)
    if (seen[n->name]++) n->name += "_" + std::to_string(seen[n->name] - 1);
  return g;
}

constexpr const char* kNotOnnx =
    ": not a valid ONNX model (protobuf parse failed: a truncated or corrupt file, a field claiming more bytes than "
    "the file holds, or messages nested over 100 deep)";

}  // namespace

ir::Graph parse_model(const std::string& bytes, const std::string& base_dir, const std::string& what) {
  if (bytes.empty()) fail(what + ": file is empty, expected an ONNX model");
  ::onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) fail(what + kNotOnnx);
  return graph_from_proto(m, base_dir, what);
}

ir::Graph load_model(const std::string& path) {
  std::ifstream f = open_file(path);  // parsed from the stream: the file's bytes are never held whole
  if (f.peek() == std::ifstream::traits_type::eof()) fail(path + ": file is empty, expected an ONNX model");
  ::onnx::ModelProto m;
  if (!m.ParseFromIstream(&f)) fail(path + kNotOnnx);
  std::string dir = fs::path(path).parent_path().string();
  return graph_from_proto(m, dir.empty() ? "." : dir, path);
}

namespace {
::onnx::ModelProto to_proto(const ir::Graph& g) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("joule");
  m.set_producer_version(JOULE_VERSION);
  for (auto& [dom, ver] : g.opsets) {
    auto* op = m.add_opset_import();
    op->set_domain(dom);
    op->set_version(ver);
  }
  graph_part_to_proto(g, m.mutable_graph());
  return m;
}

}  // namespace

namespace {

void graph_part_to_proto(const ir::Graph& g, ::onnx::GraphProto* gp) {
  gp->set_name(g.name.empty() ? "joule" : g.name);
  for (auto& [name, t] : g.initializers) tensor_to_proto(t, name, gp->add_initializer());
  auto add_vi = [&](const std::string& name, auto* list) {
    auto* vi = list->Add();
    vi->set_name(name);
    if (auto* t = g.type_of(name); t && t->dtype != DType::Undefined) type_to_proto(*t, vi->mutable_type());
  };
  for (auto& i : g.inputs) add_vi(i, gp->mutable_input());
  for (auto& o : g.outputs) add_vi(o, gp->mutable_output());
  for (auto& n : g.nodes) {
    auto* np = gp->add_node();
    np->set_name(n->name);
    np->set_op_type(n->op_type);
    if (!n->domain.empty()) np->set_domain(n->domain);
    for (size_t i = 0; i < n->explicit_inputs(); ++i) np->add_input(n->inputs[i]);  // not the captured values
    for (auto& o : n->outputs) {
      np->add_output(o);
      bool is_out = std::find(g.outputs.begin(), g.outputs.end(), o) != g.outputs.end();
      if (!is_out && !o.empty())
        if (auto* t = g.type_of(o); t && t->dtype != DType::Undefined) add_vi(o, gp->mutable_value_info());
    }
    for (auto& [k, v] : n->attrs) attr_to_proto(k, v, np->add_attribute());
  }
}

std::string to_bytes(const ::onnx::ModelProto& m) {
  std::string out;
  if (!m.SerializeToString(&out))
    fail("cannot serialize model: it exceeds protobuf's 2 GB limit");
  return out;
}
}  // namespace

std::string serialize_model(const ir::Graph& g) { return to_bytes(to_proto(g)); }

void save_model(const ir::Graph& g, const std::string& path, const SaveOptions& options) {
  ::onnx::ModelProto m = to_proto(g);
  if (options.external_data_threshold > 0) {
    const std::string data_name = fs::path(path).filename().string() + ".data";
    std::string blob;
    for (auto& t : *m.mutable_graph()->mutable_initializer()) {
      if (t.raw_data().size() < options.external_data_threshold) continue;
      while (blob.size() % 64) blob.push_back('\0');  // aligned, so the file can be mapped
      auto add = [&](const char* k, const std::string& v) {
        auto* e = t.add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", data_name);
      add("offset", std::to_string(blob.size()));
      add("length", std::to_string(t.raw_data().size()));
      blob += t.raw_data();
      t.clear_raw_data();
      t.set_data_location(::onnx::TensorProto::EXTERNAL);
    }
    if (!blob.empty()) write_file_atomic((fs::path(path).parent_path() / data_name).string(), blob);
  }
  write_file_atomic(path, to_bytes(m));
}

Tensor parse_tensor_pb(const std::string& bytes, const std::string& what) {
  ::onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) fail(what + ": not a valid ONNX TensorProto");
  return tensor_from_proto(p, ".", what);
}

Tensor load_tensor_pb(const std::string& path) { return parse_tensor_pb(read_file(path), path); }

namespace {
Tensor sequence_from_proto(const ::onnx::SequenceProto& p, DType elem, const std::string& what) {
  if (p.elem_type() != ::onnx::SequenceProto::TENSOR && p.elem_type() != ::onnx::SequenceProto::UNDEFINED)
    fail_unsupported(what + ": only sequences of tensors are supported");
  std::vector<Tensor> items;
  for (auto& t : p.tensor_values()) items.push_back(tensor_from_proto(t, ".", what));
  for (auto& t : items)
    if (t.dtype() != elem) fail(what + ": sequence of " + dtype_name(elem) + " holds " + t.describe());
  return Tensor::sequence(elem, std::move(items));
}
}  // namespace

Tensor load_value_pb(const std::string& path, const ir::TensorType& type) {
  const std::string bytes = read_file(path);
  if (type.kind == ValueKind::Tensor) return parse_tensor_pb(bytes, path);
  if (type.kind == ValueKind::Sequence) {
    ::onnx::SequenceProto p;
    if (!p.ParseFromString(bytes)) fail(path + ": not a valid ONNX SequenceProto");
    return sequence_from_proto(p, type.dtype, path);
  }
  ::onnx::OptionalProto p;
  if (!p.ParseFromString(bytes)) fail(path + ": not a valid ONNX OptionalProto");
  if (p.has_tensor_value()) {
    Tensor t = tensor_from_proto(p.tensor_value(), ".", path);
    return Tensor::optional(t.dtype(), &t);
  }
  if (p.has_sequence_value()) {
    Tensor s = sequence_from_proto(p.sequence_value(), type.dtype, path);
    return Tensor::optional(type.dtype, &s);
  }
  if (p.elem_type() != ::onnx::OptionalProto::UNDEFINED && p.elem_type() != ::onnx::OptionalProto::TENSOR &&
      p.elem_type() != ::onnx::OptionalProto::SEQUENCE)
    fail_unsupported(path + ": only optionals of tensors or sequences are supported");
  return Tensor::optional(type.dtype, nullptr);
}

void save_tensor_pb(const Tensor& t, const std::string& name, const std::string& path) {
  ::onnx::TensorProto p;
  tensor_to_proto(t, name, &p);
  write_file_atomic(path, p.SerializeAsString());
}

}  // namespace joule::onnx
