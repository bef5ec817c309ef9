// Golden IR tests for single passes: a small graph built in C++, one pass run, and the printed
// IR compared with tests/passes/<name>.expected.txt. TEXEL_UPDATE_GOLDEN=1 rewrites the files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

namespace fs = std::filesystem;
using Ints = std::vector<int64_t>;

ir::TensorType F32(Shape s) { return {DType::kFloat32, std::move(s)}; }

ConstTensorPtr RandomF32(Shape s, uint32_t seed) {
  auto t = std::make_shared<HostTensor>(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t i = 0; i < t->size(); ++i) t->data<float>()[i] = dist(rng);
  return t;
}

ir::Value* Op(ir::Graph& g, ir::OpKind op, std::vector<ir::Value*> in, const std::string& name,
              ir::Attrs attrs = {}) {
  return g.AddNode(op, std::move(in), std::move(attrs), name)->outputs[0];
}

ir::Value* Reshape(ir::Graph& g, ir::Value* x, Ints shape, const std::string& name) {
  return Op(g, ir::OpKind::kReshape, {x}, name, {{"shape", shape}});
}

const ir::Value* FindValue(const ir::Graph& g, const std::string& name) {
  for (const auto& v : g.values())
    if (v->name == name) return v.get();
  return nullptr;
}

// Compares the printed graph with the golden file (or writes it with TEXEL_UPDATE_GOLDEN=1).
void ExpectGolden(const ir::Graph& g, const std::string& name) {
  fs::path path = fs::path(TEXEL_TEST_DATA_DIR).parent_path() / "passes" / (name + ".expected.txt");
  std::string actual = ir::PrintGraph(g);
  const char* update = std::getenv("TEXEL_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    ASSERT_TRUE(out.good()) << "cannot write " << path;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << path << " is missing; run with TEXEL_UPDATE_GOLDEN=1 to create it";
  std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(actual, expected) << "golden " << path;
}

TEST(PassGoldenTest, FoldConstantsAdd) {
  // y = x * -(c1 + c2): the Add and the Neg fold into one constant; c1, c2 become unused.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2, 3}));
  ConstTensorPtr c1 = RandomF32({2, 3}, 1), c2 = RandomF32({3}, 2);
  ir::Value* sum =
      Op(g, ir::OpKind::kAdd, {g.AddConstant("c1", c1), g.AddConstant("c2", c2)}, "sum");
  ir::Value* neg = Op(g, ir::OpKind::kNeg, {sum}, "neg");
  g.AddOutput(Op(g, ir::OpKind::kMul, {x, neg}, "y"));
  Stats stats = FoldConstants(g, PassContext{});
  EXPECT_EQ(stats["folded"], 2);
  ASSERT_NO_THROW(ir::Verify(g));
  ExpectGolden(g, "fold_constants_add");
  const ir::Value* folded = g.nodes().at(0)->inputs.at(1);
  ASSERT_TRUE(folded->is_constant());
  ASSERT_EQ(folded->type, F32({2, 3}));
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(folded->constant->data<float>()[i],
              -(c1->data<float>()[i] + c2->data<float>()[i % 3]))
        << i;
}

TEST(PassGoldenTest, FoldConstantsKeepsOutputsAndAnchors) {
  // A constant Add that is a graph output stays a node; MatMul is not evaluated on the host.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2, 2}));
  ir::Value* c1 = g.AddConstant("c1", RandomF32({2, 2}, 3));
  ir::Value* c2 = g.AddConstant("c2", RandomF32({2, 2}, 4));
  g.AddOutput(Op(g, ir::OpKind::kAdd, {c1, c2}, "z"));
  ir::Value* mm = Op(g, ir::OpKind::kMatMul, {c1, c2}, "mm");
  g.AddOutput(Op(g, ir::OpKind::kAdd, {x, mm}, "y"));
  Stats stats = FoldConstants(g, PassContext{});
  EXPECT_EQ(stats["folded"], 0);
  ASSERT_NO_THROW(ir::Verify(g));
  ExpectGolden(g, "fold_constants_keeps");
}

TEST(PassGoldenTest, SimplifyMergesReshapes) {
  // Reshape(Reshape(x, 6x4), 24) -> Reshape(x, 24);
  // Reshape(Reshape(x, 4x6), 2x3x4) -> x (the merged reshape is an identity).
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({2, 3, 4}));
  ir::Value* r2 = Reshape(g, Reshape(g, x, {6, 4}, "r1"), {24}, "r2");
  g.AddOutput(Op(g, ir::OpKind::kRelu, {r2}, "y"));
  ir::Value* r4 = Reshape(g, Reshape(g, x, {4, 6}, "r3"), {2, 3, 4}, "r4");
  g.AddOutput(Op(g, ir::OpKind::kNeg, {r4}, "z"));
  Stats stats = Simplify(g, PassContext{});
  EXPECT_EQ(stats["reshapes-merged"], 2);
  EXPECT_EQ(stats["identities-removed"], 1);
  ASSERT_NO_THROW(ir::Verify(g));
  ExpectGolden(g, "simplify_reshape_merge");
  EXPECT_EQ(FindValue(g, "r1"), nullptr);
  EXPECT_EQ(FindValue(g, "r3"), nullptr);
}

TEST(PassGoldenTest, SimplifyRemovesCopiesButNotOutputs) {
  // y = Relu(Copy(Copy(x))) -> Relu(x); z = Copy(x) defines a graph output and stays.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({3}));
  ir::Value* c = Op(g, ir::OpKind::kCopy, {Op(g, ir::OpKind::kCopy, {x}, "c0")}, "c1");
  g.AddOutput(Op(g, ir::OpKind::kRelu, {c}, "y"));
  g.AddOutput(Op(g, ir::OpKind::kCopy, {x}, "z"));
  Stats stats = Simplify(g, PassContext{});
  EXPECT_EQ(stats["identities-removed"], 2);
  ASSERT_NO_THROW(ir::Verify(g));
  ExpectGolden(g, "simplify_copy");
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0]->inputs[0], x);
  EXPECT_EQ(g.nodes()[1]->op, ir::OpKind::kCopy);
}

TEST(PassGoldenTest, SimplifyRemovesTransformerNoise) {
  // y = Softmax(Cast(Slice(Pad(Transpose(Reshape(x))))) with a Transpose that moves only a
  // unit dim, a Pad by nothing, a whole Slice and an f32 -> f32 Cast: one Reshape stays.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({4, 6}));
  ir::Value* r = Reshape(g, x, {4, 1, 6}, "r");
  ir::Value* t = Op(g, ir::OpKind::kTranspose, {r}, "t", {{"perm", Ints{1, 0, 2}}});
  ir::Value* p = Op(g, ir::OpKind::kPad, {t}, "p",
                    {{"pads", Ints(6, 0)}, {"value", 0.0}, {"mode", std::string("constant")}});
  ir::Value* sl =
      Op(g, ir::OpKind::kSlice, {p}, "s",
         {{"starts", Ints{0, 0, 0}}, {"steps", Ints{1, 1, 1}}, {"sizes", Ints{1, 4, 6}}});
  ir::Value* c = Op(g, ir::OpKind::kCast, {sl}, "c", {{"to", int64_t(DType::kFloat32)}});
  g.AddOutput(Op(g, ir::OpKind::kSoftmax, {c}, "y", {{"axis", int64_t{2}}}));
  Stats stats = Simplify(g, PassContext{});
  EXPECT_EQ(stats["transposes-to-reshapes"], 1);
  EXPECT_EQ(stats["identities-removed"], 3);
  ASSERT_NO_THROW(ir::Verify(g));
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0]->op, ir::OpKind::kReshape);
  EXPECT_EQ(g.nodes()[0]->inputs[0], x);
  EXPECT_EQ(g.nodes()[1]->inputs[0], g.nodes()[0]->outputs[0]);
}

TEST(PassGoldenTest, FuseGroupsEpiloguesAndChains) {
  // Group 0: conv -> Neg -> Exp (the skip branch). Group 1: conv2 -> Mul(scale) -> Add(shift)
  // -> Relu -> Add(skip) (a residual add joins through its first single-use input). The
  // residual's result is a graph output and used again, so Sigmoid stays alone; an Add whose
  // output is larger than its chain input (broadcast) does not join Tanh.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({1, 2, 5, 5}));
  ir::Value* w = g.AddConstant("w", RandomF32({4, 2, 3, 3}, 1));
  ir::Value* scale = g.AddConstant("scale", RandomF32({4, 1, 1}, 2));
  ir::Value* shift = g.AddConstant("shift", RandomF32({4, 1, 1}, 3));
  ir::Attrs conv = {{"strides", Ints{1, 1}},
                    {"pads", Ints{1, 1, 1, 1}},
                    {"dilations", Ints{1, 1}},
                    {"group", int64_t{1}}};
  ir::Value* c = Op(g, ir::OpKind::kConv, {x, w}, "conv", conv);
  ir::Value* skip = Op(g, ir::OpKind::kExp, {Op(g, ir::OpKind::kNeg, {c}, "neg")}, "exp");
  ir::Value* c2 = Op(g, ir::OpKind::kConv, {x, w}, "conv2", conv);
  ir::Value* y = Op(g, ir::OpKind::kMul, {c2, scale}, "mul");
  y = Op(g, ir::OpKind::kAdd, {y, shift}, "add");
  ir::Value* y2 = Op(g, ir::OpKind::kRelu, {y}, "relu");
  ir::Value* out = Op(g, ir::OpKind::kAdd, {y2, skip}, "residual");
  g.AddOutput(out);
  g.AddOutput(Op(g, ir::OpKind::kSigmoid, {out}, "sigmoid"));
  ir::Value* small = g.AddInput("small", F32({4, 5, 5}));
  ir::Value* wide = g.AddInput("wide", F32({3, 4, 5, 5}));
  g.AddOutput(Op(g, ir::OpKind::kAdd, {Op(g, ir::OpKind::kTanh, {small}, "tanh"), wide}, "bcast"));
  Stats stats = Fuse(g, PassContext{});
  ASSERT_NO_THROW(ir::Verify(g));
  ExpectGolden(g, "fuse_groups");
  EXPECT_EQ(stats["groups"], 2);
  EXPECT_EQ(stats["nodes-fused"], 6);
}

// SiLU after a Conv that nothing else joined (its BatchNorm folded into the filters): the
// Sigmoid and the Mul read the Conv's result twice, so the first rule stops, and the second
// makes the Conv a group of its own for them. Where the result has a third reader outside
// (conv2's, read by Neg too), the Conv stays alone.
TEST(PassTest, SiluJoinsALoneConv) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({1, 2, 5, 5}));
  ir::Value* w = g.AddConstant("w", RandomF32({4, 2, 3, 3}, 1));
  ir::Attrs conv = {{"strides", Ints{1, 1}},
                    {"pads", Ints{1, 1, 1, 1}},
                    {"dilations", Ints{1, 1}},
                    {"group", int64_t{1}}};
  auto silu = [&](ir::Value* v, const std::string& name) {
    return Op(g, ir::OpKind::kMul, {v, Op(g, ir::OpKind::kSigmoid, {v}, name + "_sig")}, name);
  };
  ir::Value* c = Op(g, ir::OpKind::kConv, {x, w}, "conv", conv);
  g.AddOutput(silu(c, "silu"));
  ir::Value* c2 = Op(g, ir::OpKind::kConv, {x, w}, "conv2", conv);
  g.AddOutput(silu(c2, "silu2"));
  g.AddOutput(Op(g, ir::OpKind::kNeg, {c2}, "neg"));
  Stats stats = Fuse(g, PassContext{});
  ASSERT_NO_THROW(ir::Verify(g));
  EXPECT_EQ(stats["groups-merged"], 1);
  const ir::Node* conv1 = FindValue(g, "conv")->producer;
  EXPECT_GE(conv1->group, 0);
  EXPECT_EQ(FindValue(g, "silu")->producer->group, conv1->group);
  EXPECT_EQ(FindValue(g, "silu_sig")->producer->group, conv1->group);
  const ir::Node* conv2 = FindValue(g, "conv2")->producer;
  EXPECT_NE(FindValue(g, "silu2")->producer->group, conv2->group);
  EXPECT_LT(conv2->group, 0);
}

// BatchNormalization's Mul + Add after a Conv move into its filters and bias (conv1, which
// has a bias, and conv2, which gets one); a scale along W (conv3) and a Conv whose result is
// also a graph output (conv4) stay as they are.
TEST(PassGoldenTest, FoldConvAffineIntoFiltersAndBias) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", F32({1, 3, 5, 5}));
  ConstTensorPtr w = RandomF32({4, 3, 3, 3}, 11), b = RandomF32({4}, 12);
  ConstTensorPtr s = RandomF32({4, 1, 1}, 13), t = RandomF32({1, 4, 1, 1}, 14);
  ir::Attrs conv = {{"strides", Ints{1, 1}},
                    {"pads", Ints{1, 1, 1, 1}},
                    {"dilations", Ints{1, 1}},
                    {"group", int64_t{1}}};
  ir::Value* wv = g.AddConstant("w", w);
  ir::Value* c1 = Op(g, ir::OpKind::kConv, {x, wv, g.AddConstant("b", b)}, "conv1", conv);
  ir::Value* y1 = Op(g, ir::OpKind::kMul, {g.AddConstant("s", s), c1}, "scale");
  y1 = Op(g, ir::OpKind::kAdd, {y1, g.AddConstant("t", t)}, "shift");
  g.AddOutput(Op(g, ir::OpKind::kRelu, {y1}, "relu"));
  ir::Value* c2 = Op(g, ir::OpKind::kConv, {x, wv}, "conv2", conv);
  g.AddOutput(Op(g, ir::OpKind::kAdd, {c2, g.AddConstant("t2", t)}, "shift2"));
  ir::Value* c3 = Op(g, ir::OpKind::kConv, {x, wv}, "conv3", conv);
  g.AddOutput(Op(g, ir::OpKind::kMul, {c3, g.AddConstant("along_w", RandomF32({5}, 15))}, "mul3"));
  ir::Value* c4 = Op(g, ir::OpKind::kConv, {x, wv}, "conv4", conv);
  g.AddOutput(c4);
  g.AddOutput(Op(g, ir::OpKind::kMul, {c4, g.AddConstant("s4", s)}, "mul4"));
  Stats stats = FoldConvAffine(g, PassContext{});
  ASSERT_NO_THROW(ir::Verify(g));
  ExpectGolden(g, "fold_conv_affine");
  EXPECT_EQ(stats["scales-folded"], 1);
  EXPECT_EQ(stats["shifts-folded"], 2);
  // conv1's filters and bias now hold w * s and b * s + t.
  const ir::Node* conv1 = FindValue(g, "relu")->producer->inputs[0]->producer;
  ASSERT_EQ(conv1->op, ir::OpKind::kConv);
  const HostTensor& w1 = *conv1->inputs[1]->constant;
  const HostTensor& b1 = *conv1->inputs[2]->constant;
  for (int64_t i : {0, 29, 57, 107}) {
    int64_t oc = i / 27;
    EXPECT_FLOAT_EQ(w1.data<float>()[i], w->data<float>()[i] * s->data<float>()[oc]) << i;
  }
  for (int64_t oc = 0; oc < 4; ++oc)
    EXPECT_NEAR(b1.data<float>()[oc],
                b->data<float>()[oc] * s->data<float>()[oc] + t->data<float>()[oc], 1e-6);
}

}  // namespace
}  // namespace texel::passes
