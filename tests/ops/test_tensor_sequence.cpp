// Sequences, optionals and string tensors: the ops one by one, whole graphs through the Session
// (sequence values flowing between nodes, out of If and Loop), the ONNX round trip of their
// types, and the refusal of such values by ops that take numeric tensors only.
#include "joule/onnx/model_io.h"
#include "joule/runtime/session.h"
#include "op_test_util.h"
#include "test_tensor_util.h"

using namespace joule;
using namespace joule::testing;
using ir::Attribute;

namespace {

Tensor strings(std::vector<std::string> v, Shape s) {
  Tensor t(DType::String, std::move(s));
  std::copy(v.begin(), v.end(), t.data<std::string>());
  return t;
}

std::vector<std::string> texts(const Tensor& t) {
  return std::vector<std::string>(t.data<std::string>(), t.data<std::string>() + t.numel());
}

TEST(TensorSequence, ConstructInsertEraseAtLength) {
  const Tensor a = iota_f({2, 3}), b = f32({7, 8, 9}, {1, 3}), c = f32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  Tensor s = run_op(make_node("SequenceConstruct", 2, 1), {a, b})[0];
  ASSERT_EQ(s.kind(), ValueKind::Sequence);
  ASSERT_EQ(s.items().size(), 2u);
  // insert at the front (position -2 = 0), then erase the last (no position), then read item 1
  s = run_op(make_node("SequenceInsert", 3, 1), {s, c, i64v({-2}).reshaped({})})[0];
  ASSERT_EQ(s.items().size(), 3u);
  EXPECT_EQ(s.items()[0].shape(), (Shape{3, 3}));
  s = run_op(make_node("SequenceErase", 1, 1), {s})[0];
  ASSERT_EQ(s.items().size(), 2u);
  Tensor at = run_op(make_node("SequenceAt", 2, 1), {s, i64v({-1}).reshaped({})})[0];
  EXPECT_EQ(vals<float>(at), vals<float>(a));
  Tensor len = run_op(make_node("SequenceLength", 1, 1), {s})[0];
  EXPECT_EQ(len.value_as_int(0), 2);
  // positions out of range are errors naming the node
  EXPECT_THROW(run_op(make_node("SequenceAt", 2, 1), {s, i64v({2}).reshaped({})}), Error);
  EXPECT_THROW(run_op(make_node("SequenceInsert", 3, 1), {s, c, i64v({3}).reshaped({})}), Error);
  // the items are shared, not copied, and the input sequence is unchanged
  EXPECT_EQ(s.items()[1].raw(), a.raw());
  Tensor empty = run_op(make_node("SequenceEmpty", 0, 1, {{"dtype", Attribute{int64_t{7}}}}), {})[0];
  EXPECT_EQ(empty.dtype(), DType::Int64);
  EXPECT_TRUE(empty.items().empty());
  EXPECT_THROW(run_op(make_node("SequenceErase", 1, 1), {empty}), Error);
}

TEST(TensorSequence, SplitAndConcatRoundTrip) {
  const Tensor x = iota_f({2, 5, 3});
  // scalar split: pieces of 2, 2, 1 along axis 1
  Tensor s = run_op(make_node("SplitToSequence", 2, 1, {{"axis", Attribute{int64_t{1}}}}), {x, i64v({2}).reshaped({})})[0];
  ASSERT_EQ(s.items().size(), 3u);
  EXPECT_EQ(s.items()[2].shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(vals<float>(s.items()[1])[0], 6.f);  // x[0, 2, 0]
  Tensor back = run_op(make_node("ConcatFromSequence", 1, 1, {{"axis", Attribute{int64_t{1}}}}), {s})[0];
  EXPECT_EQ(back.shape(), x.shape());
  EXPECT_EQ(vals<float>(back), vals<float>(x));
  // lengths; they must add up
  s = run_op(make_node("SplitToSequence", 2, 1, {{"axis", Attribute{int64_t{-1}}}}), {x, i64v({1, 2})})[0];
  EXPECT_EQ(s.items()[1].shape(), (Shape{2, 5, 2}));
  EXPECT_THROW(run_op(make_node("SplitToSequence", 2, 1, {{"axis", Attribute{int64_t{-1}}}}), {x, i64v({1, 1})}), Error);
  // no split, keepdims 0: one item per index, the axis dropped; stacked back with new_axis
  s = run_op(make_node("SplitToSequence", 1, 1, {{"keepdims", Attribute{int64_t{0}}}}), {x})[0];
  ASSERT_EQ(s.items().size(), 2u);
  EXPECT_EQ(s.items()[0].shape(), (Shape{5, 3}));
  back = run_op(make_node("ConcatFromSequence", 1, 1, {{"axis", Attribute{int64_t{0}}}, {"new_axis", Attribute{int64_t{1}}}}), {s})[0];
  EXPECT_EQ(back.shape(), x.shape());
  EXPECT_EQ(vals<float>(back), vals<float>(x));
  // stacking along the last (new) axis: [5, 3, 2]
  back = run_op(make_node("ConcatFromSequence", 1, 1, {{"axis", Attribute{int64_t{-1}}}, {"new_axis", Attribute{int64_t{1}}}}), {s})[0];
  EXPECT_EQ(back.shape(), (Shape{5, 3, 2}));
  EXPECT_EQ(vals<float>(back)[1], vals<float>(x)[15]);  // back[0,0,1] = x[1,0,0]
}

TEST(TensorSequence, OptionalWrapsTestsAndUnwraps) {
  const Tensor x = iota_f({4});
  Tensor o = run_op(make_node("Optional", 1, 1), {x})[0];
  ASSERT_EQ(o.kind(), ValueKind::Optional);
  EXPECT_TRUE(run_op(make_node("OptionalHasElement", 1, 1), {o})[0].value_as_int(0));
  EXPECT_EQ(run_op(make_node("OptionalGetElement", 1, 1), {o})[0].raw(), x.raw());
  ir::TensorType seq_type = ttype(DType::Float32, {S(5)}).with_kind(ValueKind::Sequence);
  Tensor none = run_op(make_node("Optional", 0, 1, {{"type", Attribute{seq_type}}}), {})[0];
  EXPECT_TRUE(none.items().empty());
  EXPECT_FALSE(run_op(make_node("OptionalHasElement", 1, 1), {none})[0].value_as_int(0));
  EXPECT_THROW(run_op(make_node("OptionalGetElement", 1, 1), {none}), Error);
  // opset 18: an absent input has no element, a plain tensor has one
  EXPECT_FALSE(run_op(make_node("OptionalHasElement", 1, 1), {Tensor()}, 18)[0].value_as_int(0));
  EXPECT_TRUE(run_op(make_node("OptionalHasElement", 1, 1), {x}, 18)[0].value_as_int(0));
}

TEST(TensorString, CastToAndFromNumbers) {
  const Tensor x = f32({0.1f, -2.5f, 1e-6f, 3e20f, std::numeric_limits<float>::infinity(), std::nanf("")}, {6});
  Tensor s = run_op(make_node("Cast", 1, 1, {{"to", Attribute{int64_t{8}}}}), {x})[0];
  ASSERT_EQ(s.dtype(), DType::String);
  EXPECT_EQ(texts(s), (std::vector<std::string>{"0.1", "-2.5", "1e-06", "3e+20", "INF", "NaN"}));
  Tensor back = run_op(make_node("Cast", 1, 1, {{"to", Attribute{int64_t{1}}}}), {s})[0];
  for (int i = 0; i < 5; ++i) EXPECT_EQ(vals<float>(back)[i], vals<float>(x)[i]);  // shortest text round-trips
  EXPECT_TRUE(std::isnan(vals<float>(back)[5]));
  Tensor ints = run_op(make_node("Cast", 1, 1, {{"to", Attribute{int64_t{7}}}}), {strings({"12", "-3 "}, {2})})[0];
  EXPECT_EQ(vals<int64_t>(ints), (std::vector<int64_t>{12, -3}));
  EXPECT_THROW(run_op(make_node("Cast", 1, 1, {{"to", Attribute{int64_t{1}}}}), {strings({"1.5x"}, {1})}), Error);
  // a string tensor's copy owns its strings
  Tensor c = s.clone();
  c.data<std::string>()[0] = "changed";
  EXPECT_EQ(texts(s)[0], "0.1");
}

TEST(TensorString, StringNormalizerStopwordsAndCase) {
  std::map<std::string, Attribute> attrs = {{"stopwords", Attribute{std::vector<std::string>{"MONDAY", "größe"}}},
                                            {"case_change_action", Attribute{std::string("UPPER")}}};
  Tensor y = run_op(make_node("StringNormalizer", 1, 1, attrs), {strings({"Monday", "tuesday", "Größe", "ärger"}, {1, 4})})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2}));
  EXPECT_EQ(texts(y), (std::vector<std::string>{"TUESDAY", "ÄRGER"}));
  attrs["is_case_sensitive"] = Attribute{int64_t{1}};
  y = run_op(make_node("StringNormalizer", 1, 1, attrs), {strings({"Monday", "MONDAY"}, {2})})[0];
  EXPECT_EQ(texts(y), (std::vector<std::string>{"MONDAY"}));
  // everything removed: one empty string
  y = run_op(make_node("StringNormalizer", 1, 1, attrs), {strings({"MONDAY"}, {1})})[0];
  EXPECT_EQ(texts(y), (std::vector<std::string>{""}));
}

TEST(TensorString, TfIdfVectorizerCountsSkipGramsOfStringsAndInts) {
  // pool: 1-grams {the, cat}, 2-grams {(the, cat), (cat, sat)}; output columns 3, 0, 1, 2
  std::map<std::string, Attribute> attrs = {
      {"pool_strings", Attribute{std::vector<std::string>{"the", "cat", "the", "cat", "cat", "sat"}}},
      {"ngram_counts", Attribute{std::vector<int64_t>{0, 2}}},
      {"ngram_indexes", Attribute{std::vector<int64_t>{3, 0, 1, 2}}},
      {"min_gram_length", Attribute{int64_t{1}}},
      {"max_gram_length", Attribute{int64_t{2}}},
      {"max_skip_count", Attribute{int64_t{1}}},
      {"mode", Attribute{std::string("TF")}}};
  // row 0: the cat sat the ; row 1: cat dog sat cat
  const Tensor x = strings({"the", "cat", "sat", "the", "cat", "dog", "sat", "cat"}, {2, 4});
  Tensor y = run_op(make_node("TfIdfVectorizer", 1, 1, attrs), {x})[0];
  ASSERT_EQ(y.shape(), (Shape{2, 4}));
  // row 0: "cat" 1, (the,cat) 1 (skip 0), (cat,sat) 1 (skip 0), "the" 2; the skip-1 pair (the, sat)
  // and (cat, the) are not in the pool. row 1: "cat" 2, (cat,sat) 1 (skip 1), "the" 0.
  EXPECT_EQ(vals<float>(y), (std::vector<float>{1, 1, 1, 2, 2, 0, 1, 0}));
  // TFIDF scales the counts by the weights; IDF gives the weight wherever the count is non-zero
  attrs["weights"] = Attribute{std::vector<float>{0.5f, 2.f, 3.f, 4.f}};
  attrs["mode"] = Attribute{std::string("TFIDF")};
  EXPECT_EQ(vals<float>(run_op(make_node("TfIdfVectorizer", 1, 1, attrs), {x})[0]), (std::vector<float>{2, 3, 4, 1, 4, 0, 4, 0}));
  attrs["mode"] = Attribute{std::string("IDF")};
  EXPECT_EQ(vals<float>(run_op(make_node("TfIdfVectorizer", 1, 1, attrs), {x})[0]), (std::vector<float>{2, 3, 4, 0.5f, 2, 0, 4, 0}));
  // the same pool as integers, 1-D input
  attrs.erase("pool_strings");
  attrs["pool_int64s"] = Attribute{std::vector<int64_t>{1, 2, 1, 2, 2, 3}};
  attrs["mode"] = Attribute{std::string("TF")};
  attrs.erase("weights");
  y = run_op(make_node("TfIdfVectorizer", 1, 1, attrs), {i64v({1, 2, 3, 1})})[0];
  EXPECT_EQ(vals<float>(y), (std::vector<float>{1, 1, 1, 2}));
  // a pool that does not split into whole n-grams is an error
  attrs["ngram_counts"] = Attribute{std::vector<int64_t>{0, 3}};
  EXPECT_THROW(run_op(make_node("TfIdfVectorizer", 1, 1, attrs), {i64v({1, 2})}), Error);
}

// x -> SplitToSequence -> SequenceMap(Mul by 2) -> If(cond: ConcatFromSequence, else: the first
// item) -> y: sequences cross node boundaries, a body and a branch in one Session.
ir::Graph sequence_graph() {
  ir::Graph g;
  g.opsets[""] = 17;
  g.inputs = {"x", "cond"};
  g.types["x"] = ttype(DType::Float32, {S(4), S(3)});
  g.types["cond"] = ttype(DType::Bool, {});
  g.initializers["two"] = Tensor::scalar<float>(2.f);
  auto body = std::make_shared<ir::Graph>();
  body->opsets = g.opsets;
  body->inputs = {"item"};
  body->types["item"] = ttype(DType::Float32, {U(), S(3)});
  body->add_node(node("Mul", {"item", "two"}, {"doubled"}));
  body->outputs = {"doubled"};
  body->types["doubled"] = ttype(DType::Float32, {U(), S(3)});
  ir::Node map = node("SequenceMap", {"pieces"}, {"mapped"}, {{"body", Attribute{ir::GraphRef(body)}}});
  map.captured = {"two"};
  map.inputs.push_back("two");
  auto then_g = std::make_shared<ir::Graph>(), else_g = std::make_shared<ir::Graph>();
  then_g->opsets = else_g->opsets = g.opsets;
  then_g->add_node(node("ConcatFromSequence", {"mapped"}, {"joined"}, {{"axis", Attribute{int64_t{0}}}}));
  then_g->outputs = {"joined"};
  else_g->add_node(node("SequenceAt", {"mapped", "zero"}, {"first"}));
  else_g->initializers["zero"] = Tensor::scalar<int64_t>(0);
  else_g->outputs = {"first"};
  ir::Node branch = node("If", {"cond"}, {"y"}, {{"then_branch", Attribute{ir::GraphRef(then_g)}}, {"else_branch", Attribute{ir::GraphRef(else_g)}}});
  branch.captured = {"mapped"};
  branch.inputs.push_back("mapped");
  g.add_node(node("SplitToSequence", {"x", "two_i"}, {"pieces"}));
  g.initializers["two_i"] = Tensor::scalar<int64_t>(2);
  g.add_node(std::move(map));
  g.add_node(std::move(branch));
  g.outputs = {"y"};
  return g;
}

TEST(TensorSequence, SequencesFlowThroughBodiesBranchesAndTheSession) {
  const Tensor x = iota_f({4, 3});
  runtime::Session session(sequence_graph(), {});
  runtime::TensorMap out = session.run({{"x", x}, {"cond", Tensor::scalar<bool>(true)}});
  std::vector<float> want = vals<float>(x);
  for (float& v : want) v *= 2;
  EXPECT_EQ(out.at("y").shape(), (Shape{4, 3}));
  EXPECT_EQ(vals<float>(out.at("y")), want);
  out = session.run({{"x", x}, {"cond", Tensor::scalar<bool>(false)}});
  EXPECT_EQ(out.at("y").shape(), (Shape{2, 3}));
  EXPECT_EQ(vals<float>(out.at("y")), std::vector<float>(want.begin(), want.begin() + 6));
}

TEST(TensorSequence, OnnxRoundTripKeepsSequenceOptionalAndStringTypes) {
  ir::Graph g;
  g.opsets[""] = 16;
  g.inputs = {"s", "words"};
  g.types["s"] = ttype(DType::Float32, {P("N"), S(3)}).with_kind(ValueKind::Sequence);
  g.types["words"] = ttype(DType::String, {S(2)});
  g.initializers["stop"] = strings({"a", "b"}, {2});
  ir::TensorType opt_seq = ttype(DType::Int64, {S(5)}).with_kind(ValueKind::Optional, ValueKind::Sequence);
  // Optional's `type` attribute is the type of what it holds
  g.add_node(node("Optional", {}, {"none"}, {{"type", Attribute{opt_seq.with_kind(ValueKind::Sequence)}}}));
  g.add_node(node("Identity", {"s"}, {"s2"}));
  g.add_node(node("Identity", {"words"}, {"w2"}));
  g.outputs = {"s2", "none", "w2"};
  g.types["none"] = opt_seq;
  ir::Graph r = onnx::parse_model(onnx::serialize_model(g), ".", "round trip");
  EXPECT_EQ(r.types.at("s").str(), "seq(float32[N,3])");
  EXPECT_EQ(r.types.at("none").str(), "optional(seq(int64[5]))");
  EXPECT_EQ(r.types.at("words").str(), "string[2]");
  EXPECT_EQ(texts(r.initializers.at("stop")), (std::vector<std::string>{"a", "b"}));
  const ir::Node& opt = *r.nodes[0];
  EXPECT_EQ(std::get<ir::TensorType>(opt.attrs.at("type")).str(), "seq(int64[5])");
  runtime::Session session(r, {});
  Tensor seq = Tensor::sequence(DType::Float32, {iota_f({1, 3}), iota_f({2, 3})});
  runtime::TensorMap out = session.run({{"s", seq}, {"words", strings({"x", "y"}, {2})}});
  EXPECT_EQ(out.at("s2").items().size(), 2u);
  EXPECT_EQ(out.at("none").kind(), ValueKind::Optional);
  EXPECT_TRUE(out.at("none").items().empty());
  EXPECT_EQ(texts(out.at("w2")), (std::vector<std::string>{"x", "y"}));
  // a tensor where a sequence is declared is an input error
  EXPECT_THROW(session.run({{"s", iota_f({1, 3})}, {"words", strings({"x", "y"}, {2})}}), Error);
}

TEST(TensorSequence, OpsThatTakeTensorsRefuseSequencesAndStrings) {
  ir::Graph g;
  g.opsets[""] = 13;
  g.inputs = {"s"};
  g.types["s"] = ttype(DType::Float32, {S(3)}).with_kind(ValueKind::Sequence);
  g.add_node(node("Relu", {"s"}, {"y"}));
  g.outputs = {"y"};
  try {
    runtime::Session session(g, {});
    FAIL() << "a sequence into Relu was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("node 'y' (Relu): input 0 is a sequence"), std::string::npos) << e.what();
  }
  g.types["s"] = ttype(DType::String, {S(3)});
  g.nodes[0]->op_type = "Transpose";
  try {
    runtime::Session session(g, {});
    FAIL() << "a string tensor into Transpose was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), Error::Kind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("string tensors are not supported"), std::string::npos) << e.what();
  }
}

}  // namespace
