// Tests for the IR: type inference per op class and its errors, the op name table, dead-node
// removal, the verifier and the text printer.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/limits.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "ir/infer.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace texel::ir {
namespace {

using Ints = std::vector<int64_t>;

TensorType F32(Shape s) { return {DType::kFloat32, std::move(s)}; }
TensorType I64(Shape s) { return {DType::kInt64, std::move(s)}; }

TensorType InferOne(OpKind op, const std::vector<TensorType>& in, const Attrs& a = {}) {
  std::vector<TensorType> out = InferTypes(op, in, a);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

// Expects f to throw texel::Error with the given code; returns its what() text.
std::string ExpectError(const std::function<void()>& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected texel::Error(" << ErrorCodeName(code) << ")";
  return "";
}

void ExpectInvalid(OpKind op, const std::vector<TensorType>& in, const Attrs& a = {}) {
  ExpectError([&] { InferTypes(op, in, a); }, ErrorCode::kInvalidModel);
}

ConstTensorPtr RandomF32(Shape s, uint32_t seed) {
  auto t = std::make_shared<HostTensor>(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(0.5f, 2.0f);
  for (int64_t i = 0; i < t->size(); ++i) t->data<float>()[i] = dist(rng);
  return t;
}

Attrs ConvAttrs(Ints strides, Ints pads, Ints dilations, int64_t group) {
  return {{"strides", strides}, {"pads", pads}, {"dilations", dilations}, {"group", group}};
}

Attrs PoolAttrs(Ints kernel, Ints strides, Ints pads, int64_t ceil_mode) {
  return {{"kernel", kernel},
          {"strides", strides},
          {"pads", pads},
          {"dilations", Ints(kernel.size(), 1)},
          {"ceil_mode", ceil_mode}};
}

TEST(InferTypesTest, BinaryBroadcast) {
  EXPECT_EQ(InferOne(OpKind::kAdd, {F32({2, 1, 4}), F32({3, 1})}), F32({2, 3, 4}));
  EXPECT_EQ(InferOne(OpKind::kMul, {F32({5}), F32({})}), F32({5}));
  EXPECT_EQ(InferOne(OpKind::kLess, {I64({2, 3}), I64({3})}), (TensorType{DType::kBool, {2, 3}}));
  EXPECT_EQ(InferOne(OpKind::kWhere, {{DType::kBool, {2, 1}}, I64({3}), I64({1, 3})}), I64({2, 3}));
  ExpectInvalid(OpKind::kAdd, {F32({2, 3}), F32({4})});
  ExpectInvalid(OpKind::kAdd, {F32({2, 3}), I64({2, 3})});
  ExpectInvalid(OpKind::kAdd, {F32({2, 3})});                     // wrong input count
  ExpectInvalid(OpKind::kWhere, {F32({2}), F32({2}), F32({2})});  // cond not bool
}

TEST(InferTypesTest, UnaryAndCast) {
  EXPECT_EQ(InferOne(OpKind::kRelu, {F32({3, 4})}), F32({3, 4}));
  EXPECT_EQ(InferOne(OpKind::kCast, {F32({3, 4})}, {{"to", int64_t(DType::kInt64)}}), I64({3, 4}));
  ExpectInvalid(OpKind::kNot, {F32({3})});
}

TEST(InferTypesTest, ConvGroupsStridesDilationPads) {
  // H: (11 + 1 + 2 - 2*(3-1) - 1) / 2 + 1 = 5; W: (10 + 0 + 1 - 1*(3-1) - 1) / 1 + 1 = 9.
  Attrs a = ConvAttrs({2, 1}, {1, 0, 2, 1}, {2, 1}, 2);
  EXPECT_EQ(InferOne(OpKind::kConv, {F32({1, 4, 11, 10}), F32({6, 2, 3, 3})}, a),
            F32({1, 6, 5, 9}));
  EXPECT_EQ(InferOne(OpKind::kConv, {F32({1, 4, 11, 10}), F32({6, 2, 3, 3}), F32({6})}, a),
            F32({1, 6, 5, 9}));
  EXPECT_EQ(WindowOutSize(11, 3, 2, 2, 1, 2), 5);
  // Input channels per group (4/2) do not match the weight's 3.
  ExpectInvalid(OpKind::kConv, {F32({1, 4, 11, 10}), F32({6, 3, 3, 3})}, a);
  // Output channels not divisible by group.
  ExpectInvalid(OpKind::kConv, {F32({1, 4, 11, 10}), F32({5, 2, 3, 3})}, a);
  // Bias of the wrong length.
  ExpectInvalid(OpKind::kConv, {F32({1, 4, 11, 10}), F32({6, 2, 3, 3}), F32({4})}, a);
  // Pads of the wrong length.
  ExpectInvalid(OpKind::kConv, {F32({1, 4, 11, 10}), F32({6, 2, 3, 3})},
                ConvAttrs({2, 1}, {1, 0}, {2, 1}, 2));
  // Window larger than the padded input.
  ExpectInvalid(OpKind::kConv, {F32({1, 4, 3, 3}), F32({6, 2, 3, 3})},
                ConvAttrs({1, 1}, {0, 0, 0, 0}, {2, 2}, 2));
}

TEST(InferTypesTest, PoolCeilMode) {
  // 6 wide, k3 s2: floor gives 2, ceil gives 3 (last window starts at 4 < 6).
  EXPECT_EQ(
      InferOne(OpKind::kMaxPool, {F32({1, 2, 6, 6})}, PoolAttrs({3, 3}, {2, 2}, {0, 0, 0, 0}, 0)),
      F32({1, 2, 2, 2}));
  EXPECT_EQ(
      InferOne(OpKind::kMaxPool, {F32({1, 2, 6, 6})}, PoolAttrs({3, 3}, {2, 2}, {0, 0, 0, 0}, 1)),
      F32({1, 2, 3, 3}));
  // 5 wide, k1 s2, end pad 1: ceil would give 4, but that window would start in the end
  // padding (at 6 >= 5), so it is dropped: 3.
  EXPECT_EQ(InferOne(OpKind::kAveragePool, {F32({1, 1, 5, 5})},
                     PoolAttrs({1, 1}, {2, 2}, {0, 0, 1, 1}, 1)),
            F32({1, 1, 3, 3}));
  ExpectInvalid(OpKind::kMaxPool, {F32({1, 2, 6, 6})}, PoolAttrs({3}, {2, 2}, {0, 0, 0, 0}, 0));
  ExpectInvalid(OpKind::kMaxPool, {F32({6, 6})}, PoolAttrs({3, 3}, {2, 2}, {0, 0, 0, 0}, 0));
}

TEST(InferTypesTest, MatMulBatchBroadcast) {
  EXPECT_EQ(InferOne(OpKind::kMatMul, {F32({2, 1, 3, 5}), F32({4, 5, 7})}), F32({2, 4, 3, 7}));
  EXPECT_EQ(InferOne(OpKind::kMatMul, {F32({3, 5}), F32({5, 2})}), F32({3, 2}));
  ExpectInvalid(OpKind::kMatMul, {F32({2, 3, 5}), F32({4, 5, 7})});  // batch 2 vs 4
  ExpectInvalid(OpKind::kMatMul, {F32({3, 5}), F32({6, 7})});        // inner dims
  ExpectInvalid(OpKind::kMatMul, {F32({5}), F32({5, 7})});           // rank 1
  ExpectInvalid(OpKind::kMatMul, {F32({3, 5}), I64({5, 7})});        // dtypes
}

TEST(InferTypesTest, ReduceKeepdims) {
  EXPECT_EQ(InferOne(OpKind::kReduceSum, {F32({2, 3, 4, 5})},
                     {{"axes", Ints{1, 3}}, {"keepdims", int64_t{1}}}),
            F32({2, 1, 4, 1}));
  EXPECT_EQ(InferOne(OpKind::kReduceMean, {F32({2, 3, 4, 5})},
                     {{"axes", Ints{1, 3}}, {"keepdims", int64_t{0}}}),
            F32({2, 4}));
  EXPECT_EQ(
      InferOne(OpKind::kReduceMax, {I64({2, 3})}, {{"axes", Ints{0, 1}}, {"keepdims", int64_t{0}}}),
      I64({}));
  ExpectInvalid(OpKind::kReduceSum, {F32({2, 3})}, {{"axes", Ints{2}}, {"keepdims", int64_t{1}}});
}

TEST(InferTypesTest, Slice) {
  // Axis 0 from 4 down by 2 (4, 2, 0); axis 1 from 1 up by 2 (1, 3, 5).
  Attrs a = {{"starts", Ints{4, 1}}, {"steps", Ints{-2, 2}}, {"sizes", Ints{3, 3}}};
  EXPECT_EQ(InferOne(OpKind::kSlice, {F32({5, 6})}, a), F32({3, 3}));
  ExpectInvalid(OpKind::kSlice, {F32({5, 6})},
                {{"starts", Ints{4, 1}}, {"steps", Ints{-2, 2}}, {"sizes", Ints{3, 4}}});
  ExpectInvalid(OpKind::kSlice, {F32({5, 6})},
                {{"starts", Ints{4, 1}}, {"steps", Ints{-2, 2}}, {"sizes", Ints{4, 3}}});
  ExpectInvalid(OpKind::kSlice, {F32({5, 6})},
                {{"starts", Ints{0}}, {"steps", Ints{1}}, {"sizes", Ints{5}}});
}

TEST(InferTypesTest, Gather) {
  EXPECT_EQ(InferOne(OpKind::kGather, {F32({3, 4, 5}), I64({2, 2})}, {{"axis", int64_t{1}}}),
            F32({3, 2, 2, 5}));
  EXPECT_EQ(InferOne(OpKind::kGather, {F32({3, 4}), {DType::kInt32, {}}}, {{"axis", int64_t{0}}}),
            F32({4}));
  ExpectInvalid(OpKind::kGather, {F32({3, 4}), F32({2})}, {{"axis", int64_t{0}}});
  ExpectInvalid(OpKind::kGather, {F32({3, 4}), I64({2})}, {{"axis", int64_t{2}}});
}

TEST(InferTypesTest, Concat) {
  EXPECT_EQ(
      InferOne(OpKind::kConcat, {F32({2, 3}), F32({2, 5}), F32({2, 1})}, {{"axis", int64_t{1}}}),
      F32({2, 9}));
  ExpectInvalid(OpKind::kConcat, {F32({2, 3}), F32({3, 3})}, {{"axis", int64_t{1}}});
  ExpectInvalid(OpKind::kConcat, {F32({2, 3}), I64({2, 3})}, {{"axis", int64_t{1}}});
  ExpectInvalid(OpKind::kConcat, {F32({2, 3}), F32({2, 3, 1})}, {{"axis", int64_t{1}}});
  ExpectInvalid(OpKind::kConcat, {F32({2, 3})}, {{"axis", int64_t{2}}});
}

TEST(InferTypesTest, Pad) {
  EXPECT_EQ(InferOne(OpKind::kPad, {F32({2, 3})}, {{"pads", Ints{1, 0, 2, -1}}}), F32({5, 2}));
  ExpectInvalid(OpKind::kPad, {F32({2, 3})}, {{"pads", Ints{1, 1}}});
  ExpectInvalid(OpKind::kPad, {F32({2, 3})}, {{"pads", Ints{0, -2, 0, -2}}});
}

TEST(InferTypesTest, TransposeReshapeExpand) {
  EXPECT_EQ(InferOne(OpKind::kTranspose, {F32({2, 3, 4})}, {{"perm", Ints{2, 0, 1}}}),
            F32({4, 2, 3}));
  ExpectInvalid(OpKind::kTranspose, {F32({2, 3, 4})}, {{"perm", Ints{0, 0, 1}}});
  ExpectInvalid(OpKind::kTranspose, {F32({2, 3, 4})}, {{"perm", Ints{1, 0}}});
  ExpectInvalid(OpKind::kTranspose, {F32({2, 3, 4})}, {{"perm", Ints{0, 1, 3}}});
  EXPECT_EQ(InferOne(OpKind::kReshape, {F32({2, 3, 4})}, {{"shape", Ints{6, 4}}}), F32({6, 4}));
  ExpectInvalid(OpKind::kReshape, {F32({2, 3, 4})}, {{"shape", Ints{5, 4}}});
  EXPECT_EQ(InferOne(OpKind::kExpand, {F32({3, 1})}, {{"shape", Ints{2, 3, 4}}}), F32({2, 3, 4}));
  ExpectInvalid(OpKind::kExpand, {F32({3, 2})}, {{"shape", Ints{2, 3, 4}}});
}

TEST(InferTypesTest, SoftmaxAxis) {
  EXPECT_EQ(InferOne(OpKind::kSoftmax, {F32({2, 3})}, {{"axis", int64_t{0}}}), F32({2, 3}));
  ExpectInvalid(OpKind::kLogSoftmax, {F32({2, 3})}, {{"axis", int64_t{2}}});
}

TEST(GraphTest, AddNodeNamesTheNodeOnError) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Value* y = g.AddInput("y", F32({4}));
  std::string msg = ExpectError(
      [&] {
        g.AddNode(OpKind::kAdd, {x, y}, {}, "bad_add");
      },
      ErrorCode::kInvalidModel);
  EXPECT_NE(msg.find("bad_add"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Add"), std::string::npos) << msg;
  EXPECT_TRUE(g.nodes().empty());
}

TEST(OpTableTest, ParseOpKindRoundTrip) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < static_cast<size_t>(OpKind::kCount); ++i) {
    OpKind kind = static_cast<OpKind>(i);
    const OpInfo& info = GetOpInfo(kind);
    EXPECT_EQ(info.kind, kind);
    EXPECT_FALSE(info.name.empty());
    EXPECT_TRUE(names.insert(info.name).second) << "duplicate op name " << info.name;
    OpKind parsed = OpKind::kCount;
    ASSERT_TRUE(ParseOpKind(OpName(kind), &parsed)) << info.name;
    EXPECT_EQ(parsed, kind) << info.name;
  }
  OpKind parsed = OpKind::kCount;
  EXPECT_FALSE(ParseOpKind("Gemm", &parsed));  // decomposed by the importer, not a core op
  EXPECT_FALSE(ParseOpKind("relu", &parsed));  // names are case-sensitive
  EXPECT_FALSE(ParseOpKind("", &parsed));
  EXPECT_EQ(parsed, OpKind::kCount);
  EXPECT_EQ(GetOpInfo(OpKind::kConcat).num_inputs, -1);
  EXPECT_EQ(GetOpInfo(OpKind::kWhere).cls, OpClass::kTernary);
}

TEST(GraphTest, RemoveDeadNodes) {
  Graph g;
  Value* x = g.AddInput("x", F32({2, 3}));
  Value* c = g.AddConstant("c", RandomF32({2, 3}, 1));
  Value* unused_const = g.AddConstant("unused", RandomF32({3}, 2));
  // A dead chain: Relu -> Exp -> Sigmoid, nothing uses the end.
  Value* a = g.AddNode(OpKind::kRelu, {x}, {}, "a")->outputs[0];
  Value* b = g.AddNode(OpKind::kExp, {a}, {}, "b")->outputs[0];
  g.AddNode(OpKind::kSigmoid, {b}, {}, "s");
  // A dead node that reads a constant.
  g.AddNode(OpKind::kAdd, {x, c}, {}, "dead_add");
  Value* y = g.AddNode(OpKind::kNeg, {x}, {}, "y")->outputs[0];
  // A used Copy that a pass bypasses and marks dead (as simplify does).
  Value* r = g.AddNode(OpKind::kAbs, {x}, {}, "r")->outputs[0];
  Value* copy = g.AddNode(OpKind::kCopy, {r}, {}, "copy")->outputs[0];
  Value* w = g.AddNode(OpKind::kSigmoid, {copy}, {}, "w")->outputs[0];
  g.ReplaceAllUses(copy, r);
  copy->producer->dead = true;
  g.AddOutput(y);
  g.AddOutput(w);
  (void)unused_const;

  g.RemoveDeadNodes();
  std::vector<std::string> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n->name);
  EXPECT_EQ(nodes, (std::vector<std::string>{"y", "r", "w"}));
  EXPECT_EQ(g.nodes()[2]->inputs[0], r);
  std::set<std::string> names;
  for (const auto& v : g.values()) names.insert(v->name);
  EXPECT_EQ(names, (std::set<std::string>{"x", "y", "r", "w"}));
  EXPECT_NO_THROW(Verify(g));
}

// A small valid graph: Conv -> LeakyRelu -> Mul by a scalar constant -> Pad.
std::unique_ptr<Graph> TinyGraph() {
  auto g = std::make_unique<Graph>();
  Value* x = g->AddInput("x", F32({1, 2, 4, 4}));
  Value* w = g->AddConstant("w", RandomF32({3, 2, 1, 1}, 3));
  Value* s = g->AddConstant("s", RandomF32({}, 4));
  Value* y = g->AddNode(OpKind::kConv, {x, w}, ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), "conv1")
                 ->outputs[0];
  y = g->AddNode(OpKind::kLeakyRelu, {y}, {{"alpha", 0.25}}, "act")->outputs[0];
  y = g->AddNode(OpKind::kMul, {y, s}, {}, "scaled")->outputs[0];
  y = g->AddNode(
           OpKind::kPad, {y},
           {{"pads", Ints{0, 0, 1, 0, 0, 0, 0, 2}}, {"mode", std::string("edge")}, {"value", 0.0}},
           "out")
          ->outputs[0];
  g->AddOutput(y);
  return g;
}

TEST(VerifierTest, AcceptsValidGraph) { EXPECT_NO_THROW(Verify(*TinyGraph())); }

TEST(VerifierTest, CatchesCorruptedOutputShape) {
  auto g = TinyGraph();
  g->nodes()[1]->outputs[0]->type.shape = {1, 3, 4, 5};
  std::string msg = ExpectError([&] { Verify(*g); }, ErrorCode::kInternal);
  EXPECT_NE(msg.find("act"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LeakyRelu"), std::string::npos) << msg;
}

TEST(VerifierTest, CatchesCorruptedOutputDType) {
  auto g = TinyGraph();
  g->nodes()[0]->outputs[0]->type.dtype = DType::kFloat16;
  std::string msg = ExpectError([&] { Verify(*g); }, ErrorCode::kInternal);
  EXPECT_NE(msg.find("conv1"), std::string::npos) << msg;
}

TEST(VerifierTest, CatchesConstantTypeMismatch) {
  auto g = TinyGraph();
  for (const auto& v : g->values())
    if (v->name == "w") v->type.shape = {3, 2, 1, 2};
  std::string msg = ExpectError([&] { Verify(*g); }, ErrorCode::kInternal);
  EXPECT_NE(msg.find("'w'"), std::string::npos) << msg;
}

TEST(VerifierTest, CatchesWrongProducer) {
  auto g = TinyGraph();
  g->nodes()[2]->outputs[0]->producer = g->nodes()[1].get();
  ExpectError([&] { Verify(*g); }, ErrorCode::kInternal);
}

TEST(PrinterTest, Golden) {
  const char* expected =
      "graph(%x: f32[1x2x4x4]) -> (%out) {\n"
      "  const %w: f32[3x2x1x1]\n"
      "  const %s: f32[]\n"
      "  %conv1 = Conv(%x, %w) {dilations=[1, 1], group=1, pads=[0, 0, 0, 0], strides=[1, 1]} "
      ": f32[1x3x4x4]\n"
      "  %act = LeakyRelu(%conv1) {alpha=0.25} : f32[1x3x4x4]\n"
      "  %scaled = Mul(%act, %s) : f32[1x3x4x4]\n"
      "  %out = Pad(%scaled) {mode=\"edge\", pads=[0, 0, 1, 0, 0, 0, 0, 2], value=0} "
      ": f32[1x3x5x6]\n"
      "}\n";
  EXPECT_EQ(PrintGraph(*TinyGraph()), expected);
}

}  // namespace
}  // namespace texel::ir

namespace texel {
namespace {

// core/limits.h: sizes are computed without overflow, and shape inference refuses results past
// the tensor limit by node, before anything is allocated.
TEST(LimitsTest, OverflowAndLimitsRefusedByName) {
  EXPECT_EQ(CheckedBytes({2, 3}, DType::kFloat32), 24u);
  EXPECT_EQ(CheckedBytes({}, DType::kInt64), 8u);
  EXPECT_FALSE(CheckedBytes({int64_t{1} << 40, int64_t{1} << 40}, DType::kFloat32));
  EXPECT_FALSE(CheckedBytes({-1, 4}, DType::kFloat32));
  try {
    ir::InferTypes(ir::OpKind::kExpand, {{DType::kFloat32, {1, 1}}},
                   {{"shape", std::vector<int64_t>{int64_t{1} << 30, int64_t{1} << 30}}});
    ADD_FAILURE() << "an Expand to 2^60 elements was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidModel);
    EXPECT_NE(std::string(e.what()).find("Expand"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TEXEL_MAX_TENSOR_BYTES"), std::string::npos) << e.what();
  }
  EXPECT_THROW(HostTensor(DType::kFloat32, {int64_t{1} << 31, 4}), Error);  // 32 GiB on the host
}

}  // namespace
}  // namespace texel
