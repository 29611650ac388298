// The CUDA backend. Host-side (every machine): device names, placement and its copy nodes,
// refusals without a GPU. On a GPU (skipped without one): every GPU kernel against the CPU
// reference kernels on random values, single nodes and whole small graphs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph_builder.h"
#include "joule/cuda/backend.h"
#include "joule/passes/infer_shapes.h"
#include "joule/runtime/inputs.h"
#include "joule/runtime/placement.h"
#include "joule/runtime/session.h"

namespace joule {
namespace {

using testing::GraphBuilder;

bool have_gpu() {
  static const bool yes = [] {
    const cuda::DeviceList l = cuda::list_devices();
    return !l.gpus.empty() && l.gpus[0].usable;
  }();
  return yes;
}

TEST(CudaDevice, ParsesDeviceNames) {
  EXPECT_EQ(cuda::parse_device_syntax("cpu"), -1);
  EXPECT_EQ(cuda::parse_device_syntax("cuda"), 0);
  EXPECT_EQ(cuda::parse_device_syntax("cuda:3"), 3);
  EXPECT_EQ(cuda::device_name(-1), "cpu");
  EXPECT_EQ(cuda::device_name(2), "cuda:2");
  for (const char* bad : {"cuda:", "cuda:x", "tpu", "cuda:-1", ""}) EXPECT_THROW(cuda::parse_device_syntax(bad), Error) << bad;
  EXPECT_EQ(cuda::parse_device("cpu"), -1);
}

TEST(CudaDevice, ListsDevicesOrSaysWhyNone) {
  const cuda::DeviceList l = cuda::list_devices();
  EXPECT_EQ(l.cuda_built, cuda::built());
  if (l.gpus.empty()) {
    EXPECT_FALSE(l.why.empty());
    try {
      cuda::parse_device("cuda:0");
      FAIL() << "a GPU request without a GPU must be refused";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--device cuda:0: "), std::string::npos) << e.what();
    }
  } else {
    EXPECT_FALSE(l.gpus[0].name.empty());
    EXPECT_GT(l.gpus[0].memory_bytes, 0u);
  }
}

// A fake placement rule: Relu, Add and Reshape on the GPU (Reshape reads its shape on the host),
// everything else on the CPU.
runtime::DeviceSupport fake_support(const kernels::NodeView& v) {
  const std::string& t = v.node.op_type;
  if (t == "Relu" || t == "Add") return {"", {}};
  if (t == "Reshape") return {"", {false, true}};
  return {"no CUDA kernel for " + t, {}};
}

int count_op(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node->op_type == op;
  return n;
}

TEST(CudaPlacement, CopiesOnlyWhereValuesCross) {
  // x -> Relu(gpu) -> Sigmoid(cpu) -> Add(gpu, with Relu's output and a constant) -> out
  //                     \-> Reshape(gpu, shape constant) -> out2
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3})
      .init("c", testing::iota_tensor({2, 3}))
      .init("shape", Tensor::from_vector<int64_t>({3, 2}, {2}))
      .node("Relu", {"x"}, {"r"})
      .node("Sigmoid", {"r"}, {"s"})
      .node("Add", {"s", "r"}, {"a"})
      .node("Add", {"a", "c"}, {"out"})
      .node("Reshape", {"r", "shape"}, {"out2"})
      .output("out")
      .output("out2")
      .output("s");
  ir::Graph g = b.build();
  const runtime::PlacementReport r = runtime::place_on_device(g, 0, fake_support);
  EXPECT_EQ(r.gpu_nodes, 4);
  EXPECT_EQ(r.cpu_nodes, 1);
  ASSERT_EQ(r.cpu_fallbacks.size(), 1u);
  EXPECT_EQ(r.cpu_fallbacks[0].second, "no CUDA kernel for Sigmoid");
  // x to the GPU; r back for Sigmoid; s to the GPU for Add; out and out2 back to the host.
  EXPECT_EQ(count_op(g, "MemcpyToDevice"), 2);
  EXPECT_EQ(count_op(g, "MemcpyToHost"), 3);
  EXPECT_EQ(r.copies, 5);
  // The outputs keep their names and are made by copies to the host; s stays a CPU value.
  auto producers = g.producers();
  for (const char* o : {"out", "out2"}) {
    ASSERT_TRUE(producers.count(o)) << o;
    EXPECT_EQ(g.nodes[producers.at(o)]->op_type, "MemcpyToHost") << o;
  }
  EXPECT_EQ(g.nodes[producers.at("s")]->op_type, "Sigmoid");
  // Constants are not copied per run; Reshape's shape is read on the host.
  for (auto& n : g.nodes) {
    if (runtime::is_memcpy(*n)) {
      EXPECT_NE(n->inputs[0], "c");
      EXPECT_NE(n->inputs[0], "shape");
      EXPECT_EQ(n->meta["device"], "cuda:0");
    }
    if (n->op_type == "Reshape") {
      EXPECT_EQ(n->inputs[1], "shape");
    }
    if (n->op_type == "Sigmoid") {
      EXPECT_EQ(n->meta["device"], "cpu");
    }
    if (n->op_type == "Relu") {
      EXPECT_EQ(runtime::node_device(*n), 0);
    }
  }
  // Still a valid, sorted graph: every input made before it is read.
  EXPECT_NO_THROW(g.topo_order());
  std::set<std::string> made(g.inputs.begin(), g.inputs.end());
  for (auto& [k, t] : g.initializers) made.insert(k);
  for (auto& n : g.nodes) {
    for (auto& in : n->inputs) EXPECT_TRUE(in.empty() || made.count(in)) << n->name << " reads " << in;
    made.insert(n->outputs.begin(), n->outputs.end());
  }
}

TEST(CudaPlacement, HalfPrecisionLowersGpuValuesAndTwinsTheirConstants) {
  // x -> Relu(gpu) -> Sigmoid(cpu) -> Add(gpu, constant c) -> BatchNormalization(gpu) -> out;
  // c is read by the CPU's Mul as well.
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 4, 4})
      .init("c", testing::iota_tensor({2, 3, 4, 4}))
      .init("s", Tensor::from_vector<float>({1, 2, 3}, {3}))
      .init("sh", Tensor::from_vector<float>({0, 0, 0}, {3}))
      .init("mean", Tensor::from_vector<float>({0, 1, 0}, {3}))
      .init("var", Tensor::from_vector<float>({1, 1, 2}, {3}))
      .node("Relu", {"x"}, {"r"})
      .node("Sigmoid", {"r"}, {"sg"})
      .node("Add", {"sg", "c"}, {"a"})
      .node("BatchNormalization", {"a", "s", "sh", "mean", "var"}, {"out"})
      .node("Neg", {"c"}, {"nc"})
      .output("out")
      .output("nc");
  ir::Graph g = b.build();
  passes::infer_shapes(g, {});
  runtime::place_on_device(g, 0, [](const kernels::NodeView& v) {
    const std::string& t = v.node.op_type;
    if (t == "Sigmoid" || t == "Neg") return runtime::DeviceSupport{"cpu", {}};
    return runtime::DeviceSupport{"", {}};
  });
  EXPECT_THROW(runtime::lower_gpu_floats(g, DType::Float32), Error);
  // The copies of x and sg to the GPU, r, a, and out's GPU value: five values become float16.
  EXPECT_EQ(runtime::lower_gpu_floats(g, DType::Float16), 5);
  for (auto& n : g.nodes) {
    const ir::TensorType* out = g.type_of(n->outputs[0]);
    ASSERT_TRUE(out) << n->name;
    if (n->op_type == "MemcpyToHost" || runtime::node_device(*n) < 0) {
      EXPECT_EQ(out->dtype, DType::Float32) << n->name;  // host values stay float32
    } else {
      EXPECT_EQ(out->dtype, DType::Float16) << n->name;
    }
    if (n->op_type == "Add") {
      ASSERT_EQ(n->inputs[1], "c@float16");
      EXPECT_EQ(g.initializers.at("c@float16").dtype(), DType::Float16);
      EXPECT_EQ(static_cast<float>(g.initializers.at("c@float16").data<Half>()[5]), 5.f);
    }
    if (n->op_type == "BatchNormalization") {
      EXPECT_EQ(n->inputs[1], "s");  // statistics stay float32
      EXPECT_EQ(n->inputs[4], "var");
    }
    if (n->op_type == "Neg") {
      EXPECT_EQ(n->inputs[0], "c");  // the CPU reads the original
    }
  }
  EXPECT_EQ(g.initializers.at("c").dtype(), DType::Float32);
}

TEST(CudaPlacement, NodesKeptInFloat32GetCastsWhereTheyMeetHalfValues) {
  // x -> Relu -> Tanh (kept) -> Add(Tanh, Relu) -> out, all on the GPU.
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 8})
      .init("c", testing::iota_tensor({2, 8}))
      .node("Relu", {"x"}, {"r"})
      .node("Tanh", {"r"}, {"t"})
      .node("Mul", {"t", "c"}, {"m"})
      .node("Add", {"m", "r"}, {"out"})
      .output("out");
  ir::Graph g = b.build();
  passes::infer_shapes(g, {});
  std::string tanh, mul;
  for (auto& n : g.nodes) {
    if (n->op_type == "Tanh") tanh = n->name;
    if (n->op_type == "Mul") mul = n->name;
  }
  runtime::place_on_device(g, 0, [](const kernels::NodeView&) { return runtime::DeviceSupport{"", {}}; });
  EXPECT_THROW(runtime::lower_gpu_floats(g, DType::BFloat16, {tanh, "no_such_node"}), Error);
  runtime::lower_gpu_floats(g, DType::BFloat16, {tanh, mul});
  // Tanh reads r (bfloat16) through a Cast to float32; Add reads m (float32, kept) through a
  // Cast to bfloat16; Mul reads the original float32 constant.
  EXPECT_EQ(count_op(g, "Cast"), 2);
  for (auto& n : g.nodes) {
    const DType out = g.type_of(n->outputs[0])->dtype;
    if (n->op_type == "Cast") {
      EXPECT_EQ(runtime::node_device(*n), 0);
      EXPECT_EQ(g.type_of(n->inputs[0])->dtype == DType::Float32 ? DType::BFloat16 : DType::Float32, out) << n->name;
    }
    if (n->op_type == "Tanh" || n->op_type == "Mul") {
      EXPECT_EQ(out, DType::Float32);
      EXPECT_EQ(g.type_of(n->inputs[0])->dtype, DType::Float32);
    }
    if (n->op_type == "Mul") {
      EXPECT_EQ(n->inputs[1], "c");
    }
    if (n->op_type == "Add") {
      EXPECT_EQ(out, DType::BFloat16);
      for (auto& in : n->inputs) EXPECT_EQ(g.type_of(in)->dtype, DType::BFloat16) << in;
    }
  }
  EXPECT_NO_THROW(g.topo_order());

  // A copy to the GPU read only by a kept node stays float32: x -> Tanh (kept) -> Relu.
  GraphBuilder b2;
  b2.input("x", DType::Float32, {2, 8}).node("Tanh", {"x"}, {"t"}).node("Relu", {"t"}, {"out"}).output("out");
  ir::Graph g2 = b2.build();
  passes::infer_shapes(g2, {});
  runtime::place_on_device(g2, 0, [](const kernels::NodeView&) { return runtime::DeviceSupport{"", {}}; });
  runtime::lower_gpu_floats(g2, DType::Float16, {g2.nodes[1]->name});  // (nodes[0] is x's copy)
  ASSERT_EQ(g2.nodes[1]->op_type, "Tanh");
  EXPECT_EQ(count_op(g2, "Cast"), 1);  // only Tanh -> Relu
  EXPECT_EQ(g2.type_of(g2.nodes[0]->outputs[0])->dtype, DType::Float32);
  EXPECT_EQ(g2.nodes[1]->inputs[0], g2.nodes[0]->outputs[0]);
}

TEST(CudaPlacement, ShapeReadsNeedNoCopy) {
  GraphBuilder b = testing::torch_flatten_graph();
  b.output("flat");
  ir::Graph g = b.build();
  // Only Reshape on the GPU: Shape reads x's shape on the CPU without a copy of x.
  runtime::place_on_device(g, 0, [](const kernels::NodeView& v) {
    return v.node.op_type == "Reshape" ? runtime::DeviceSupport{"", {false, true}} : runtime::DeviceSupport{"cpu", {}};
  });
  EXPECT_EQ(count_op(g, "MemcpyToDevice"), 1);  // x, for Reshape
  EXPECT_EQ(count_op(g, "MemcpyToHost"), 1);    // flat
  for (auto& n : g.nodes) {
    if (n->op_type == "Shape") {
      EXPECT_EQ(n->inputs[0], "x");
    }
  }
}

TEST(CudaSession, RefusesAGpuRequestWithoutOne) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present";
  GraphBuilder b;
  b.input("x", DType::Float32, {2}).node("Relu", {"x"}, {"y"}).output("y");
  runtime::SessionOptions so;
  so.device = 0;
  EXPECT_THROW(runtime::Session(b.build(), so), Error);
}

// ---------------------------------------------------------------- on a GPU

Tensor random_tensor(const Shape& s, uint32_t seed, float lo = -2.f, float hi = 2.f) {
  Tensor t(DType::Float32, s);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// Runs `g` on the CPU's reference kernels and on GPU 0; every output must agree within `tol`
// relative to the output's largest magnitude, and every node but the copies must be on the GPU
// unless `cpu_nodes_ok`. `math`: the session's --gpu-math.
void expect_same_on_gpu(const ir::Graph& g, const runtime::TensorMap& inputs, double tol = 1e-5, bool cpu_nodes_ok = false,
                        const std::string& math = "fp32") {
  runtime::SessionOptions cpu;
  cpu.threads = 1;
  cpu.algo.policy = "reference";
  runtime::Session ref(ir::Graph(g), cpu);
  runtime::SessionOptions gpu;
  gpu.device = 0;
  gpu.gpu_math = math;
  runtime::Session dev(ir::Graph(g), gpu);
  for (size_t i = 0; i < dev.num_steps() && !cpu_nodes_ok; ++i) {
    EXPECT_EQ(runtime::node_device(dev.step_node(i)), 0)
        << dev.step_node(i).where() << " on the CPU: " << dev.step_node(i).meta.value("device_reason", std::string());
  }
  const runtime::TensorMap want = ref.run(inputs);
  for (int pass = 0; pass < 3; ++pass) {  // node by node, captured as a CUDA graph, replayed
    const runtime::TensorMap got = dev.run(inputs);
    for (auto& [name, w] : want) {
      const Tensor& o = got.at(name);
      ASSERT_TRUE(o.on_host()) << name;
      ASSERT_EQ(o.shape(), w.shape()) << name;
      ASSERT_EQ(o.dtype(), w.dtype()) << name;
      if (w.dtype() != DType::Float32) continue;
      double scale = 1e-6, err = 0;
      for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::fabs(static_cast<double>(w.data<float>()[i])));
      for (int64_t i = 0; i < w.numel(); ++i)
        err = std::max(err, std::fabs(static_cast<double>(w.data<float>()[i]) - o.data<float>()[i]));
      EXPECT_LE(err / scale, tol) << name << " of " << g.nodes.front()->op_type << " in " << math;
    }
  }
}

// The --gpu-math of one_node's runs, and its tolerance (float32: 1e-5).
std::string g_math = "fp32";
double g_tol = 1e-5;

void one_node(const std::string& op, const std::vector<Shape>& ins, std::map<std::string, ir::Attribute> attrs = {},
              std::vector<Tensor> constants = {}, double tol = 1e-5) {
  if (g_math != "fp32") tol = std::max(tol, g_tol);
  GraphBuilder b;
  std::vector<std::string> names;
  runtime::TensorMap feed;
  for (size_t i = 0; i < ins.size(); ++i) {
    const std::string n = "in" + std::to_string(i);
    b.input(n, DType::Float32, ins[i]);
    feed[n] = random_tensor(ins[i], static_cast<uint32_t>(i + 7), op == "Log" || op == "Sqrt" || op == "Pow" ? 0.1f : -2.f);
    names.push_back(n);
  }
  for (size_t i = 0; i < constants.size(); ++i) {
    const std::string n = "c" + std::to_string(i);
    b.init(n, constants[i]);
    names.push_back(n);
  }
  b.node(op, names, {"y"}, std::move(attrs)).output("y");
  SCOPED_TRACE(op);
  expect_same_on_gpu(b.build(), feed, tol, false, g_math);
}

TEST(CudaKernels, UnaryAndBinaryMatchTheReference) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "HardSwish", "Softplus", "Floor", "Sin",
                         "Softsign", "Gelu"})
    one_node(op, {{3, 5, 7}});
  one_node("LeakyRelu", {{4, 9}}, {{"alpha", 0.2f}});
  one_node("HardSigmoid", {{4, 9}}, {{"alpha", 0.3f}, {"beta", 0.4f}});
  one_node("Clip", {{4, 9}}, {}, {Tensor::scalar<float>(-0.5f), Tensor::scalar<float>(0.7f)});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    one_node(op, {{2, 3, 4, 5}, {2, 3, 4, 5}});
    one_node(op, {{2, 3, 4, 5}, {3, 1, 5}});
    one_node(op, {{1, 4, 1}, {3, 1, 6}});
  }
  one_node("Pow", {{3, 4}, {3, 4}});
  one_node("Add", {{2, 3, 4, 5}}, {}, {random_tensor({4, 1}, 3)});
  // 16-byte packs: aligned, a multiple of the pack; one operand a single value.
  one_node("Gelu", {{4, 64}});
  one_node("Mul", {{4, 64}}, {}, {Tensor::scalar<float>(0.125f)});
  one_node("Sub", {{4, 64}, {4, 64}});
}

TEST(CudaKernels, ConvAlgorithmsMatchTheReference) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  struct Case {
    Shape x, w;
    int64_t group, stride, pad, dil;
  };
  for (const Case& c : std::vector<Case>{{{1, 3, 17, 19}, {8, 3, 3, 3}, 1, 1, 1, 1},
                                         {{2, 8, 16, 16}, {8, 1, 3, 3}, 8, 2, 1, 1},
                                         {{1, 16, 9, 9}, {32, 16, 1, 1}, 1, 1, 0, 1},
                                         {{1, 4, 20, 20}, {6, 2, 5, 5}, 2, 1, 2, 2},
                                         {{1, 6, 30}, {4, 6, 3}, 1, 2, 1, 1}}) {
    const size_t nsp = c.x.size() - 2;
    std::map<std::string, ir::Attribute> attrs = {{"group", c.group},
                                                  {"strides", std::vector<int64_t>(nsp, c.stride)},
                                                  {"pads", std::vector<int64_t>(2 * nsp, c.pad)},
                                                  {"dilations", std::vector<int64_t>(nsp, c.dil)}};
    GraphBuilder b;
    b.input("x", DType::Float32, c.x)
        .init("w", random_tensor(c.w, 11))
        .init("b", random_tensor({c.w[0]}, 12))
        .node("Conv", {"x", "w", "b"}, {"y"}, attrs)
        .output("y");
    const ir::Graph g = b.build();
    runtime::TensorMap feed{{"x", random_tensor(c.x, 5)}};
    expect_same_on_gpu(g, feed, 1e-5);
    // Every cuDNN algorithm that supports the shape, forced.
    for (const kernels::Algorithm* a : cuda::algorithms()) {
      if (std::string(a->op_class) != "conv") continue;
      runtime::SessionOptions so;
      so.device = 0;
      so.algo.add(std::string("conv=") + a->name + ",guess");
      runtime::Session s(ir::Graph(g), so);
      runtime::SessionOptions cpu;
      cpu.algo.policy = "reference";
      const Tensor want = runtime::Session(ir::Graph(g), cpu).run(feed).at("y");
      const Tensor got = s.run(feed).at("y");
      double scale = 1e-6, err = 0;
      for (int64_t i = 0; i < want.numel(); ++i) {
        scale = std::max(scale, static_cast<double>(std::fabs(want.data<float>()[i])));
        err = std::max(err, static_cast<double>(std::fabs(want.data<float>()[i] - got.data<float>()[i])));
      }
      EXPECT_LE(err / scale, 1e-4) << a->name << " on " << shape_str(c.x);  // FFT/Winograd round differently
    }
  }
}

TEST(CudaKernels, FusedConvEpiloguesMatchTheReference) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  struct Case {
    Shape x, w;
    int64_t group;
    const char* act;
    std::vector<float> params;
  };
  for (const Case& c : std::vector<Case>{{{2, 8, 10, 10}, {8, 1, 3, 3}, 8, "Clip", {0.f, 6.f}},
                                         {{1, 6, 9, 9}, {6, 6, 3, 3}, 1, "SiLU", {}},
                                         {{1, 16, 7, 7}, {16, 1, 5, 5}, 16, "HardSwish", {}},
                                         {{1, 4, 8, 8}, {4, 4, 1, 1}, 1, "Relu", {}}}) {
    GraphBuilder b;
    const Shape y{c.x[0], c.w[0], c.x[2], c.x[3]};
    const int64_t pad = c.w[2] / 2;
    b.input("x", DType::Float32, c.x)
        .input("z", DType::Float32, y)
        .init("w", random_tensor(c.w, 21))
        .init("b", random_tensor({c.w[0]}, 22))
        .node("FusedConv", {"x", "w", "b", "z"}, {"y"},
              {{"group", c.group}, {"pads", std::vector<int64_t>(4, pad)}, {"activation", std::string(c.act)},
               {"activation_params", c.params}})
        .output("y");
    ir::Graph g = b.build();
    g.nodes.back()->domain = "joule";
    g.opsets["joule"] = 1;
    SCOPED_TRACE(c.act);
    expect_same_on_gpu(g, {{"x", random_tensor(c.x, 1)}, {"z", random_tensor(y, 2)}}, 1e-5);
  }
}

void gemm_pool_norm_movement_cases() {
  one_node("Gemm", {{5, 7}}, {{"transB", int64_t{1}}}, {random_tensor({9, 7}, 1), random_tensor({9}, 2)});
  one_node("Gemm", {{7, 5}}, {{"transA", int64_t{1}}, {"alpha", 0.5f}}, {random_tensor({7, 9}, 1), random_tensor({5, 9}, 2)});
  one_node("Gemm", {{5, 7}}, {{"transB", int64_t{1}}}, {random_tensor({16, 7}, 1), random_tensor({16}, 2)});  // bias in packs
  one_node("MatMul", {{2, 3, 5, 7}, {2, 3, 7, 4}});
  one_node("MatMul", {{2, 3, 5, 7}}, {}, {random_tensor({7, 4}, 3)});
  one_node("MatMul", {{5, 7}, {3, 7, 4}});
  one_node("MaxPool", {{2, 3, 11, 13}}, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  one_node("AveragePool", {{2, 3, 11, 13}}, {{"kernel_shape", std::vector<int64_t>{3, 2}}, {"strides", std::vector<int64_t>{2, 1}}, {"pads", std::vector<int64_t>{1, 0, 1, 1}}, {"count_include_pad", int64_t{1}}, {"ceil_mode", int64_t{1}}});
  one_node("AveragePool", {{1, 2, 7, 7}}, {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  one_node("GlobalAveragePool", {{2, 5, 6, 7}});
  one_node("GlobalMaxPool", {{2, 5, 6, 7}});
  one_node("ReduceMean", {{2, 5, 6, 7}}, {{"axes", std::vector<int64_t>{2, 3}}, {"keepdims", int64_t{1}}});
  one_node("ReduceSum", {{2, 5, 6}}, {{"keepdims", int64_t{0}}}, {Tensor::from_vector<int64_t>({1}, {1})});
  one_node("Softmax", {{3, 4, 50}});
  one_node("Softmax", {{3, 4, 50}}, {{"axis", int64_t{1}}});
  one_node("LogSoftmax", {{6, 700}});
  one_node("Softmax", {{2, 5000}});  // a block per row
  one_node("LayerNormalization", {{2, 7, 96}}, {{"epsilon", 1e-5f}}, {random_tensor({96}, 4), random_tensor({96}, 5)});
  one_node("LayerNormalization", {{3, 5000}}, {{"epsilon", 1e-5f}}, {random_tensor({5000}, 4), random_tensor({5000}, 5)});
  one_node("BatchNormalization", {{2, 4, 5, 5}}, {},
           {random_tensor({4}, 1), random_tensor({4}, 2), random_tensor({4}, 3), random_tensor({4}, 4, 0.5f, 2.f)});
  one_node("BatchNormalization", {{2, 4, 4, 4}}, {},
           {random_tensor({4}, 1), random_tensor({4}, 2), random_tensor({4}, 3), random_tensor({4}, 4, 0.5f, 2.f)});
  one_node("Transpose", {{2, 3, 4, 5}}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  one_node("Transpose", {{2, 3, 4, 8}}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});  // rows of 16-byte words
  one_node("Concat", {{2, 4, 8}, {2, 4, 8}}, {{"axis", int64_t{0}}});
  one_node("Slice", {{4, 10, 6}}, {},
           {Tensor::from_vector<int64_t>({1, 9}, {2}), Tensor::from_vector<int64_t>({4, 0}, {2}), Tensor::from_vector<int64_t>({0, 1}, {2}),
            Tensor::from_vector<int64_t>({2, -3}, {2})});
  one_node("Concat", {{2, 3, 4}, {2, 5, 4}, {2, 1, 4}}, {{"axis", int64_t{1}}});
  one_node("Expand", {{3, 1, 5}}, {}, {Tensor::from_vector<int64_t>({2, 3, 4, 5}, {4})});
  one_node("Reshape", {{2, 3, 4}}, {}, {Tensor::from_vector<int64_t>({6, -1}, {2})});
  one_node("Gather", {{5, 6, 7}}, {{"axis", int64_t{1}}}, {Tensor::from_vector<int64_t>({0, -1, 3}, {3})});
  one_node("Gather", {{3, 5, 16}}, {{"axis", int64_t{1}}}, {Tensor::from_vector<int64_t>({4, -5}, {2})});  // rows as 16-byte words
}

TEST(CudaKernels, GemmMatMulPoolNormMovementMatchTheReference) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  gemm_pool_norm_movement_cases();
}

// --gpu-math fp16 / bf16: the same kernels on half-precision activations (weights converted
// once, float32 accumulation) within the rounding of the half type: float16 keeps 11 bits
// (relative step 9.8e-4), bfloat16 8 (7.8e-3); a value is rounded on each node's input and output.
TEST(CudaKernels, HalfPrecisionMatchesTheReferenceWithinItsRounding) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  for (auto [math, tol] : {std::pair<const char*, double>{"fp16", 6e-3}, {"bf16", 4e-2}}) {
    SCOPED_TRACE(math);
    g_math = math;
    g_tol = tol;
    for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Erf", "HardSwish", "Gelu"}) one_node(op, {{3, 5, 7}});
    one_node("Clip", {{4, 9}}, {}, {Tensor::scalar<float>(-0.5f), Tensor::scalar<float>(0.7f)});
    for (const char* op : {"Add", "Mul", "Max"}) one_node(op, {{2, 3, 4, 5}, {3, 1, 5}});
    one_node("Add", {{2, 3, 4, 5}}, {}, {random_tensor({4, 1}, 3)});
    one_node("Gelu", {{4, 64}});
    one_node("Mul", {{4, 64}}, {}, {Tensor::scalar<float>(0.125f)});
    one_node("Sub", {{4, 64}, {4, 64}});
    gemm_pool_norm_movement_cases();
    // Convolutions through cuDNN in the half type, and the depthwise kernel, with epilogues.
    one_node("Conv", {{2, 8, 12, 12}}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}},
             {random_tensor({16, 8, 3, 3}, 4, -0.3f, 0.3f), random_tensor({16}, 5)});
    one_node("Conv", {{2, 8, 12, 12}}, {{"group", int64_t{8}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
             {random_tensor({8, 1, 3, 3}, 6), random_tensor({8}, 7)});
  }
  g_math = "fp32";
}

// A half-precision plan with a CPU node in the middle: the copies convert (float32 on the host,
// half on the GPU), the graph output comes back float32.
TEST(CudaSession, HalfPrecisionPlansConvertAtTheCopies) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  GraphBuilder b;
  b.input("x", DType::Float32, {2, 3, 8, 8})
      .init("scales", Tensor::from_vector<float>({1, 1, 2, 2}, {4}))
      .init("w", random_tensor({4, 3, 3, 3}, 3, -0.5f, 0.5f))
      .init("fc", random_tensor({4, 5}, 4))
      .node("Relu", {"x"}, {"r"})
      .node("Resize", {"r", "", "scales"}, {"u"}, {{"mode", std::string("nearest")}})
      .node("Conv", {"u", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .node("GlobalAveragePool", {"c"}, {"p"})
      .node("Flatten", {"p"}, {"f"})
      .node("MatMul", {"f", "fc"}, {"m"})
      .node("Softmax", {"m"}, {"y"})
      .output("y")
      .output("c");
  const ir::Graph g = b.build();
  runtime::TensorMap feed{{"x", random_tensor({2, 3, 8, 8}, 1)}};
  expect_same_on_gpu(g, feed, 6e-3, true, "fp16");
  expect_same_on_gpu(g, feed, 4e-2, true, "bf16");
  // The convolution kept in float32: casts around it, the same results.
  std::string conv;
  for (auto& n : g.nodes)
    if (n->op_type == "Conv") conv = n->name;
  runtime::SessionOptions so;
  so.device = 0;
  so.gpu_math = "bf16";
  so.gpu_fp32 = {conv};
  runtime::Session s(ir::Graph(g), so);
  int casts = 0;
  for (size_t i = 0; i < s.num_steps(); ++i) casts += s.step_node(i).op_type == "Cast";
  EXPECT_EQ(casts, 1);  // after the convolution (u's copy, read by it alone, stays float32)
  runtime::SessionOptions cpu;
  cpu.algo.policy = "reference";
  const Tensor want = runtime::Session(ir::Graph(g), cpu).run(feed).at("c");
  const Tensor got = s.run(feed).at("c");
  double err = 0, scale = 1e-6;
  for (int64_t i = 0; i < want.numel(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(want.data<float>()[i])));
    err = std::max(err, static_cast<double>(std::fabs(want.data<float>()[i] - got.data<float>()[i])));
  }
  EXPECT_LE(err / scale, 1e-2);  // only the bfloat16 rounding of Relu's output remains
}

TEST(CudaSession, MixedPlansWithCpuFallbackAndTiming) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU";
  // Relu (GPU) -> Resize (CPU: no CUDA kernel) -> Conv (GPU): copies both ways.
  GraphBuilder b;
  b.input("x", DType::Float32, {1, 3, 8, 8})
      .init("scales", Tensor::from_vector<float>({1, 1, 2, 2}, {4}))
      .init("w", random_tensor({4, 3, 3, 3}, 3))
      .node("Relu", {"x"}, {"r"})
      .node("Resize", {"r", "", "scales"}, {"u"}, {{"mode", std::string("nearest")}})
      .node("Conv", {"u", "w"}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})
      .output("y");
  const ir::Graph g = b.build();
  runtime::TensorMap feed{{"x", random_tensor({1, 3, 8, 8}, 1)}};
  expect_same_on_gpu(g, feed, 1e-5, true);
  runtime::SessionOptions so;
  so.device = 0;
  runtime::Session s(ir::Graph(g), so);
  EXPECT_EQ(s.gpu_nodes(), 2);
  EXPECT_EQ(s.copy_nodes(), 4);  // x in, r out for Resize, u back in, y out
  struct Nop : runtime::Observer {} nop;
  s.add_observer(&nop);
  s.run(feed);
  const std::vector<double>& ms = s.device_step_ms();
  ASSERT_EQ(ms.size(), s.num_steps());
  for (size_t i = 0; i < ms.size(); ++i) {
    if (runtime::node_device(s.step_node(i)) >= 0) {
      EXPECT_GE(ms[i], 0.0) << s.step_node(i).name;
    } else {
      EXPECT_LT(ms[i], 0.0) << s.step_node(i).name;
    }
  }
}

}  // namespace
}  // namespace joule
