// End-to-end kernel tests: IR graphs built in C++, compiled with CompileGraph for the PoCL CPU
// device and run in a Session; results are compared with plain C++ references (double
// accumulation) on random inputs. Several ops share one graph, so one program build each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "api/compiler.h"
#include "core/error.h"
#include "ir/graph.h"
#include "kernel_test_util.h"
#include "passes/pipeline.h"
#include "row_reference.h"
#include "runtime/cl/context.h"
#include "runtime/cl/device.h"
#include "runtime/session.h"
#include "window_reference.h"

namespace texel {
namespace {

using namespace texel::testing;

using Ints = std::vector<int64_t>;

// --- References -----------------------------------------------------------------------------

// [..., M, K] x [..., K, N] with numpy batch broadcasting.
HostTensor RefMatMul(const HostTensor& a, const HostTensor& b) {
  Shape shape;
  std::vector<double> v = RefMatMulValues(a, b, &shape);
  HostTensor y(DType::kFloat32, shape);
  for (size_t i = 0; i < v.size(); ++i) y.data<float>()[i] = static_cast<float>(v[i]);
  return y;
}

HostTensor RefTranspose(const HostTensor& x, const Ints& perm) {
  Shape ys;
  for (int64_t p : perm) ys.push_back(x.shape[p]);
  HostTensor y(DType::kFloat32, ys);
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> c = Unravel(i, ys), xc(c.size());
    for (size_t d = 0; d < c.size(); ++d) xc[perm[d]] = c[d];
    y.data<float>()[i] = F(x, Ravel(xc, x.shape));
  }
  return y;
}

HostTensor RefConcat(const std::vector<const HostTensor*>& in, int64_t axis) {
  Shape ys = in[0]->shape;
  ys[axis] = 0;
  for (const HostTensor* t : in) ys[axis] += t->shape[axis];
  HostTensor y(DType::kFloat32, ys);
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> c = Unravel(i, ys);
    for (const HostTensor* t : in) {
      if (c[axis] < t->shape[axis]) {
        y.data<float>()[i] = F(*t, Ravel(c, t->shape));
        break;
      }
      c[axis] -= t->shape[axis];
    }
  }
  return y;
}

HostTensor RefGather(const HostTensor& x, const HostTensor& idx, int64_t axis) {
  Shape ys(x.shape.begin(), x.shape.begin() + axis);
  ys.insert(ys.end(), idx.shape.begin(), idx.shape.end());
  ys.insert(ys.end(), x.shape.begin() + axis + 1, x.shape.end());
  HostTensor y(DType::kFloat32, ys);
  size_t r = idx.shape.size();
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> c = Unravel(i, ys);
    std::vector<int64_t> ic(c.begin() + axis, c.begin() + axis + r);
    int64_t g = idx.data<int64_t>()[Ravel(ic, idx.shape)];
    if (g < 0) g += x.shape[axis];
    std::vector<int64_t> xc(c.begin(), c.begin() + axis);
    xc.push_back(g);
    xc.insert(xc.end(), c.begin() + axis + r, c.end());
    y.data<float>()[i] = F(x, Ravel(xc, x.shape));
  }
  return y;
}

HostTensor RefSlice(const HostTensor& x, const Ints& starts, const Ints& steps, const Ints& sizes) {
  HostTensor y(DType::kFloat32, sizes);
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> c = Unravel(i, sizes);
    for (size_t d = 0; d < c.size(); ++d) c[d] = starts[d] + c[d] * steps[d];
    y.data<float>()[i] = F(x, Ravel(c, x.shape));
  }
  return y;
}

// --- Graph helpers ----------------------------------------------------------------------------

ir::TensorType F32Type(const Shape& s) { return {DType::kFloat32, s}; }

ir::Value* Const(ir::Graph& g, const std::string& name, const HostTensor& t) {
  return g.AddConstant(name, std::make_shared<HostTensor>(t));
}

ir::Value* Output(ir::Graph& g, ir::OpKind op, std::vector<ir::Value*> in, ir::Attrs attrs,
                  const std::string& name) {
  ir::Value* v = g.AddNode(op, std::move(in), std::move(attrs), name)->outputs[0];
  g.AddOutput(v);
  return v;
}

ir::Attrs ConvAttrs(Ints strides, Ints pads, Ints dilations, int64_t group) {
  return {{"strides", strides}, {"pads", pads}, {"dilations", dilations}, {"group", group}};
}

ir::Attrs PoolAttrs(Ints kernel, Ints strides, Ints pads, int64_t ceil_mode) {
  return {{"kernel", kernel},
          {"strides", strides},
          {"pads", pads},
          {"dilations", Ints{1, 1}},
          {"ceil_mode", ceil_mode}};
}

TEST(KernelTest, ConvAndPooling) {
  HostTensor x = RandomF32({2, 4, 9, 11}, 101);
  HostTensor w = RandomF32({6, 2, 3, 3}, 102);
  HostTensor b = RandomF32({6}, 103);
  HostTensor dw = RandomF32({4, 1, 3, 3}, 104);
  HostTensor db = RandomF32({4}, 105);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", F32Type(x.shape));
  // Grouped conv: groups=2, stride 2, dilation 2, pads top 1, left 2, bottom 0, right 1.
  Output(*g, ir::OpKind::kConv, {xv, Const(*g, "w", w), Const(*g, "b", b)},
         ConvAttrs({2, 2}, {1, 2, 0, 1}, {2, 2}, 2), "conv");
  // Depthwise with a bias: group = channels, stride (1, 2), asymmetric pads.
  Output(*g, ir::OpKind::kConv, {xv, Const(*g, "dw", dw), Const(*g, "db", db)},
         ConvAttrs({1, 2}, {1, 1, 1, 0}, {1, 1}, 4), "depthwise");
  // ceil_mode windows: rows start at -1, 2, 5, 8 (the last one half outside), columns at
  // -1, 1, ..., 9 (the last one reaching past the input).
  Ints k = {2, 3}, s = {3, 2}, p = {1, 1, 0, 0};
  Output(*g, ir::OpKind::kMaxPool, {xv}, PoolAttrs(k, s, p, 1), "maxpool");
  ir::Attrs avg0 = PoolAttrs(k, s, p, 1);
  avg0.Set("count_include_pad", int64_t{0});
  Output(*g, ir::OpKind::kAveragePool, {xv}, avg0, "avgpool_excl");
  ir::Attrs avg1 = PoolAttrs(k, s, p, 1);
  avg1.Set("count_include_pad", int64_t{1});
  Output(*g, ir::OpKind::kAveragePool, {xv}, avg1, "avgpool_incl");
  // count_include_pad with end padding, floor mode.
  ir::Attrs avg2 = PoolAttrs({3, 3}, {2, 2}, {1, 0, 2, 1}, 0);
  avg2.Set("count_include_pad", int64_t{1});
  Output(*g, ir::OpKind::kAveragePool, {xv}, avg2, "avgpool_incl_end");
  // ceil_mode windows that reach past the end padding (checked against PyTorch's avg_pool2d).
  ir::Attrs avg3 = PoolAttrs({3, 3}, {2, 2}, {1, 1, 1, 1}, 1);
  avg3.Set("count_include_pad", int64_t{1});
  Output(*g, ir::OpKind::kAveragePool, {xv}, avg3, "avgpool_incl_ceil");

  std::vector<HostTensor> out = CompileAndRun(std::move(g), {{"x", x}});
  ASSERT_EQ(out.size(), 7u);
  ExpectClose(out[0], RefConv(x, w, &b, {2, 2}, {1, 2, 0, 1}, {2, 2}, 2), "grouped conv");
  ExpectClose(out[1], RefConv(x, dw, &db, {1, 2}, {1, 1, 1, 0}, {1, 1}, 4), "depthwise conv");
  ExpectClose(out[2], RefPool(x, true, k, s, p, {1, 1}, true, false), "maxpool");
  ExpectClose(out[3], RefPool(x, false, k, s, p, {1, 1}, true, false),
              "avgpool count_include_pad=0");
  ExpectClose(out[4], RefPool(x, false, k, s, p, {1, 1}, true, true),
              "avgpool count_include_pad=1");
  ExpectClose(out[5], RefPool(x, false, {3, 3}, {2, 2}, {1, 0, 2, 1}, {1, 1}, false, true),
              "avgpool count_include_pad=1, end pads");
  ExpectClose(out[6], RefPool(x, false, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true),
              "avgpool count_include_pad=1, ceil_mode past the pads");
}

TEST(KernelTest, MatMulSoftmaxReduce) {
  HostTensor a = RandomF32({2, 1, 3, 5}, 201);
  HostTensor b = RandomF32({4, 5, 7}, 202);
  HostTensor c = RandomF32({3, 4, 6}, 203);
  HostTensor wc = RandomF32({6, 2}, 204);
  HostTensor sx = RandomF32({2, 7, 3, 4}, 205);
  HostTensor rx = RandomF32({2, 3, 4, 5}, 206);
  // Softmax is shift-invariant; spread the logits so that the max subtraction matters.
  for (int64_t i = 0; i < sx.size(); ++i) sx.data<float>()[i] *= 8.0f;
  auto g = std::make_unique<ir::Graph>();
  ir::Value* av = g->AddInput("a", F32Type(a.shape));
  ir::Value* bv = g->AddInput("b", F32Type(b.shape));
  ir::Value* cv = g->AddInput("c", F32Type(c.shape));
  ir::Value* sv = g->AddInput("sx", F32Type(sx.shape));
  ir::Value* rv = g->AddInput("rx", F32Type(rx.shape));
  Output(*g, ir::OpKind::kMatMul, {av, bv}, {}, "matmul");
  Output(*g, ir::OpKind::kMatMul, {cv, Const(*g, "wc", wc)}, {}, "matmul_const");
  Output(*g, ir::OpKind::kSoftmax, {sv}, {{"axis", int64_t{1}}}, "softmax");
  Output(*g, ir::OpKind::kLogSoftmax, {sv}, {{"axis", int64_t{2}}}, "logsoftmax");
  Output(*g, ir::OpKind::kReduceMean, {rv}, {{"axes", Ints{1, 3}}, {"keepdims", int64_t{1}}},
         "mean_keep");
  Output(*g, ir::OpKind::kReduceMean, {rv}, {{"axes", Ints{1, 3}}, {"keepdims", int64_t{0}}},
         "mean_drop");

  std::vector<HostTensor> out =
      CompileAndRun(std::move(g), {{"a", a}, {"b", b}, {"c", c}, {"sx", sx}, {"rx", rx}});
  ASSERT_EQ(out.size(), 6u);
  ExpectClose(out[0], RefMatMul(a, b), "matmul [2,1,3,5] x [4,5,7]");
  EXPECT_EQ(out[0].shape, (Shape{2, 4, 3, 7}));
  ExpectClose(out[1], RefMatMul(c, wc), "matmul [3,4,6] x [6,2]");
  ExpectClose(out[2], RefSoftmax(sx, 1, false), "softmax axis 1");
  ExpectClose(out[3], RefSoftmax(sx, 2, true), "logsoftmax axis 2");
  ExpectClose(out[4], RefReduceMean(rx, {1, 3}, true), "reducemean keepdims=1");
  ExpectClose(out[5], RefReduceMean(rx, {1, 3}, false), "reducemean keepdims=0");
}

// Few outputs over long rows: on a GPU target (the unit_kernels_as_gpu test) a work-group
// shares each row of reductions and softmax; here one work-item takes a row.
TEST(KernelTest, LongRowReductionsAndSoftmax) {
  HostTensor x = RandomF32({3, 2, 700}, 221);
  HostTensor p = RandomF32({2, 300}, 222);
  for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] *= 6.0f;
  for (int64_t i = 0; i < p.size(); ++i) p.data<float>()[i] = 1.0f + 0.002f * F(p, i);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", F32Type(x.shape));
  ir::Value* pv = g->AddInput("p", F32Type(p.shape));
  auto reduce = [&](ir::OpKind op, ir::Value* v, const Ints& axes, const char* name) {
    Output(*g, op, {v}, {{"axes", axes}, {"keepdims", int64_t{0}}}, name);
  };
  reduce(ir::OpKind::kReduceSum, xv, {2}, "sum");
  reduce(ir::OpKind::kReduceMax, xv, {2}, "max");
  reduce(ir::OpKind::kReduceMin, xv, {0, 2}, "min");
  reduce(ir::OpKind::kReduceMean, xv, {1, 2}, "mean");
  reduce(ir::OpKind::kReduceProd, pv, {1}, "prod");
  Output(*g, ir::OpKind::kSoftmax, {xv}, {{"axis", int64_t{2}}}, "softmax");
  Output(*g, ir::OpKind::kLogSoftmax, {xv}, {{"axis", int64_t{2}}}, "logsoftmax");
  std::vector<HostTensor> out = CompileAndRun(std::move(g), {{"x", x}, {"p", p}});
  ASSERT_EQ(out.size(), 7u);
  ExpectClose(out[0], RefReduce(x, {2}, false, 's'), "sum over 700");
  ExpectClose(out[1], RefReduce(x, {2}, false, 'x'), "max over 700");
  ExpectClose(out[2], RefReduce(x, {0, 2}, false, 'n'), "min over axes 0, 2");
  ExpectClose(out[3], RefReduce(x, {1, 2}, false, 'm'), "mean over axes 1, 2");
  ExpectClose(out[4], RefReduce(p, {1}, false, 'p'), "prod over 300");
  ExpectClose(out[5], RefSoftmax(x, 2, false), "softmax over 700");
  ExpectClose(out[6], RefSoftmax(x, 2, true), "logsoftmax over 700");
}

// f16 tensors (storage only): the same kernels load halves into float and round the results
// back. Compared with the f32 reference on the rounded inputs, to half precision.
TEST(KernelTest, Float16MatMulSoftmaxReduceConvPool) {
  HostTensor a = ToF32(ToF16(RandomF32({2, 3, 5}, 211)));
  HostTensor b = ToF32(ToF16(RandomF32({5, 4}, 212)));
  HostTensor sx = ToF32(ToF16(RandomF32({2, 6, 3}, 213)));
  HostTensor cx = ToF32(ToF16(RandomF32({1, 4, 7, 6}, 214)));
  HostTensor cw = ToF32(ToF16(RandomF32({3, 4, 3, 3}, 215)));
  HostTensor cb = ToF32(ToF16(RandomF32({3}, 216)));
  auto g = std::make_unique<ir::Graph>();
  auto f16 = [](const Shape& s) { return ir::TensorType{DType::kFloat16, s}; };
  ir::Value* av = g->AddInput("a", f16(a.shape));
  ir::Value* bv = g->AddInput("b", f16(b.shape));
  ir::Value* sv = g->AddInput("sx", f16(sx.shape));
  Output(*g, ir::OpKind::kMatMul, {av, bv}, {}, "matmul");
  Output(*g, ir::OpKind::kSoftmax, {sv}, {{"axis", int64_t{1}}}, "softmax");
  Output(*g, ir::OpKind::kReduceMean, {sv}, {{"axes", Ints{1}}, {"keepdims", int64_t{0}}}, "mean");
  ir::Value* cxv = g->AddInput("cx", f16(cx.shape));
  Output(*g, ir::OpKind::kConv, {cxv, Const(*g, "cw", ToF16(cw)), Const(*g, "cb", ToF16(cb))},
         ConvAttrs({1, 1}, {1, 0, 1, 1}, {1, 1}, 1), "conv");
  Output(
      *g, ir::OpKind::kAveragePool, {cxv},
      [] {
        ir::Attrs a = PoolAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}, 0);
        a.Set("count_include_pad", int64_t{0});
        return a;
      }(),
      "avgpool");
  std::vector<HostTensor> out = CompileAndRun(
      std::move(g), {{"a", ToF16(a)}, {"b", ToF16(b)}, {"sx", ToF16(sx)}, {"cx", ToF16(cx)}});
  ASSERT_EQ(out.size(), 5u);
  for (const HostTensor& t : out) ASSERT_EQ(t.dtype, DType::kFloat16);
  ExpectClose(ToF32(out[0]), RefMatMul(a, b), "f16 matmul", 2e-3f);
  ExpectClose(ToF32(out[1]), RefSoftmax(sx, 1, false), "f16 softmax", 2e-3f);
  ExpectClose(ToF32(out[2]), RefReduceMean(sx, {1}, false), "f16 reducemean", 2e-3f);
  ExpectClose(ToF32(out[3]), RefConv(cx, cw, &cb, {1, 1}, {1, 0, 1, 1}, {1, 1}, 1), "f16 conv",
              2e-3f);
  ExpectClose(ToF32(out[4]), RefPool(cx, false, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, false),
              "f16 avgpool", 2e-3f);
}

// Fusion (passes/fuse.cpp): epilogues on conv, pooling, reductions and an embedding lookup
// (Gather), and a pure elementwise chain with broadcast operands, each checked against the
// unfused reference; the plan must hold one kernel per group.
TEST(KernelTest, FusedEpiloguesAndChains) {
  HostTensor x = RandomF32({1, 3, 6, 7}, 221);
  HostTensor w = RandomF32({4, 3, 3, 3}, 222);
  HostTensor scale = RandomF32({4, 1, 1}, 223), shift = RandomF32({4, 1, 1}, 224);
  HostTensor skip = RandomF32({1, 4, 6, 7}, 225);
  HostTensor a = RandomF32({2, 3, 4}, 226), b = RandomF32({3, 1}, 227);
  HostTensor table = RandomF32({5, 4}, 228), pos = RandomF32({3, 4}, 229),
             factor = RandomF32({}, 230);
  HostTensor ids = I64({2, 3}, {4, -1, 0, 2, 1, -5}), ids1 = I64({3}, {2, 0, 4});
  HostTensor pos1 = RandomF32({1, 3, 4}, 231);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", F32Type(x.shape));
  ir::Value* sv = g->AddInput("skip", F32Type(skip.shape));
  ir::Value* av = g->AddInput("a", F32Type(a.shape));
  auto op = [&](ir::OpKind k, std::vector<ir::Value*> in, ir::Attrs at = {}) {
    return g->AddNode(k, std::move(in), std::move(at), "n")->outputs[0];
  };
  ir::Value* y =
      op(ir::OpKind::kConv, {xv, Const(*g, "w", w)}, ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1));
  y = op(ir::OpKind::kMul, {y, Const(*g, "scale", scale)});
  y = op(ir::OpKind::kAdd, {y, Const(*g, "shift", shift)});
  y = op(ir::OpKind::kRelu, {y});
  y = op(ir::OpKind::kAdd, {sv, y});  // the chain value as the second operand
  g->AddOutput(y);
  ir::Value* p = op(ir::OpKind::kAveragePool, {xv}, [] {
    ir::Attrs at = PoolAttrs({2, 2}, {2, 2}, {0, 0, 0, 0}, 0);
    at.Set("count_include_pad", int64_t{0});
    return at;
  }());
  g->AddOutput(op(ir::OpKind::kLeakyRelu, {p}, {{"alpha", 0.1}}));
  ir::Value* r = op(ir::OpKind::kReduceMean, {xv}, {{"axes", Ints{1}}, {"keepdims", int64_t{1}}});
  g->AddOutput(op(ir::OpKind::kClip, {op(ir::OpKind::kNeg, {r})}, {{"min", -0.2}, {"max", 0.3}}));
  ir::Value* t = op(ir::OpKind::kTanh, {av});
  ir::Value* cond = op(ir::OpKind::kGreater, {t, Const(*g, "b", b)});
  g->AddOutput(op(ir::OpKind::kWhere, {cond, t, op(ir::OpKind::kSigmoid, {av})}));
  ir::Value* e = op(
      ir::OpKind::kGather,
      {g->AddInput("table", F32Type(table.shape)), g->AddInput("ids", {DType::kInt64, ids.shape})},
      {{"axis", int64_t{0}}});
  e = op(ir::OpKind::kAdd, {e, Const(*g, "pos", pos)});
  g->AddOutput(op(ir::OpKind::kMul, {e, Const(*g, "factor", factor)}));
  // A sum of another shape (a leading unit dim: [3, 4] + [1, 3, 4]) stays out of the Gather's
  // kernel, whose coordinates are its own.
  ir::Value* e1 = op(
      ir::OpKind::kGather,
      {g->AddInput("table1", F32Type(table.shape)), g->AddInput("ids1", {DType::kInt64, Shape{3}})},
      {{"axis", int64_t{0}}});
  g->AddOutput(op(ir::OpKind::kAdd, {e1, Const(*g, "pos1", pos1)}));
  CompiledModel m = CompileGraph(std::move(g), SharedContext(), CompileOptions{});
  // Kernels: conv+4, pool+1, reduce+2, Tanh+Greater+Where (Tanh is used twice, so the first
  // rule stops; Where joins Greater through its first single-use input, then both of Tanh's
  // readers join it by the second), Sigmoid, Gather+2, Gather, Add.
  runtime::Session session(*m.executable);
  auto out = session.Run({{"x", x},
                          {"skip", skip},
                          {"a", a},
                          {"table", table},
                          {"ids", ids},
                          {"table1", table},
                          {"ids1", ids1}});
  HostTensor conv = RefConv(x, w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  HostTensor want0(DType::kFloat32, conv.shape);
  for (int64_t i = 0; i < conv.size(); ++i) {
    int64_t c = (i / 42) % 4;
    float v = F(conv, i) * F(scale, c) + F(shift, c);
    want0.data<float>()[i] = F(skip, i) + std::max(v, 0.0f);
  }
  ExpectClose(out[0], want0, "conv epilogue");
  HostTensor pool = RefPool(x, false, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, false);
  for (int64_t i = 0; i < pool.size(); ++i)
    if (F(pool, i) < 0) pool.data<float>()[i] *= 0.1f;
  ExpectClose(out[1], pool, "pool epilogue");
  HostTensor mean = RefReduceMean(x, {1}, true);
  for (int64_t i = 0; i < mean.size(); ++i)
    mean.data<float>()[i] = std::min(std::max(-F(mean, i), -0.2f), 0.3f);
  ExpectClose(out[2], mean, "reduce epilogue");
  HostTensor want3(DType::kFloat32, a.shape);
  for (int64_t i = 0; i < a.size(); ++i) {
    float tv = std::tanh(F(a, i));
    want3.data<float>()[i] = tv > F(b, (i / 4) % 3) ? tv : 1.0f / (1.0f + std::exp(-F(a, i)));
  }
  ExpectClose(out[3], want3, "elementwise chain");
  HostTensor want4(DType::kFloat32, {2, 3, 4});
  for (int64_t i = 0; i < want4.size(); ++i) {
    int64_t id = ids.data<int64_t>()[i / 4];
    want4.data<float>()[i] =
        (F(table, (id < 0 ? id + 5 : id) * 4 + i % 4) + F(pos, i % 12)) * F(factor, 0);
  }
  ExpectClose(out[4], want4, "embedding epilogue");
  HostTensor want5(DType::kFloat32, {1, 3, 4});
  for (int64_t i = 0; i < want5.size(); ++i)
    want5.data<float>()[i] = F(table, ids1.data<int64_t>()[i / 4] * 4 + i % 4) + F(pos1, i);
  ExpectClose(out[5], want5, "gather, then a sum of another rank");
  EXPECT_EQ(m.executable->plan().steps.size(), 8u) << "the chains should be fused";
}

// On a GPU's facts (run here), pointwise kernels over a million elements or more compute 4 a
// work-item (PointwiseItems): a broadcast chain, a transpose and a Concat with its epilogue, each
// output a size that leaves the last work-items some elements short.
TEST(KernelTest, PointwiseItemsOnGpus) {
  ScopedEnv env("TEXEL_TARGET", std::string("gpu:132"));
  HostTensor x = RandomF32({3, 7, 211, 239}, 311), y = RandomF32({7, 1, 239}, 312),
             x2 = RandomF32({3, 2, 211, 239}, 313), scale = RandomF32({9, 1, 1}, 314);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", F32Type(x.shape));
  ir::Value* sum =
      g->AddNode(ir::OpKind::kAdd, {xv, g->AddInput("y", F32Type(y.shape))}, {}, "add")->outputs[0];
  g->AddOutput(g->AddNode(ir::OpKind::kRelu, {sum}, {}, "relu")->outputs[0]);
  g->AddOutput(
      g->AddNode(ir::OpKind::kTranspose, {xv}, {{"perm", Ints{0, 2, 1, 3}}}, "t")->outputs[0]);
  ir::Value* cat = g->AddNode(ir::OpKind::kConcat, {xv, g->AddInput("x2", F32Type(x2.shape))},
                              {{"axis", int64_t{1}}}, "cat")
                       ->outputs[0];
  g->AddOutput(
      g->AddNode(ir::OpKind::kMul, {cat, Const(*g, "scale", scale)}, {}, "mul")->outputs[0]);
  CompiledModel m = CompileGraph(std::move(g), SharedContext(), CompileOptions{});
  EXPECT_EQ(m.executable->plan().steps.size(), 3u);
  EXPECT_NE(m.executable->plan().source.find("#define ITEMS 4"), std::string::npos);
  runtime::Session session(*m.executable);
  std::vector<HostTensor> out = session.Run({{"x", x}, {"y", y}, {"x2", x2}});
  HostTensor relu(DType::kFloat32, x.shape), cat_want = RefConcat({&x, &x2}, 1);
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t w = i % 239, c = i / (239 * 211) % 7;
    relu.data<float>()[i] = std::max(0.0f, x.data<float>()[i] + y.data<float>()[c * 239 + w]);
  }
  for (int64_t i = 0; i < cat_want.size(); ++i)
    cat_want.data<float>()[i] *= scale.data<float>()[i / (239 * 211) % 9];
  ExpectClose(out[0], relu, "broadcast add and relu");
  ExpectClose(out[1], RefTranspose(x, {0, 2, 1, 3}), "transpose");
  ExpectClose(out[2], cat_want, "concat and its scale");
}

TEST(KernelTest, DataMovement) {
  HostTensor tx = RandomF32({2, 3, 4, 5}, 301);
  HostTensor c0 = RandomF32({2, 1, 3}, 302);
  HostTensor c1 = RandomF32({2, 4, 3}, 303);
  HostTensor c2 = RandomF32({2, 2, 3}, 304);
  HostTensor gx = RandomF32({3, 5, 4}, 305);
  HostTensor cidx = I64({2, 2}, {-1, 0, 2, -3});
  HostTensor ridx = I64({3}, {-2, 4, -5});
  HostTensor sx = RandomF32({4, 9, 6}, 306);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* tv = g->AddInput("tx", F32Type(tx.shape));
  ir::Value* v0 = g->AddInput("c0", F32Type(c0.shape));
  ir::Value* v1 = g->AddInput("c1", F32Type(c1.shape));
  ir::Value* v2 = g->AddInput("c2", F32Type(c2.shape));
  ir::Value* gv = g->AddInput("gx", F32Type(gx.shape));
  ir::Value* iv = g->AddInput("ridx", {DType::kInt64, ridx.shape});
  ir::Value* sv = g->AddInput("sx", F32Type(sx.shape));
  Output(*g, ir::OpKind::kTranspose, {tv}, {{"perm", Ints{3, 1, 0, 2}}}, "transpose");
  Output(*g, ir::OpKind::kConcat, {v0, v1, v2}, {{"axis", int64_t{1}}}, "concat");
  Output(*g, ir::OpKind::kGather, {gv, Const(*g, "cidx", cidx)}, {{"axis", int64_t{1}}},
         "gather_const");
  Output(*g, ir::OpKind::kGather, {gv, iv}, {{"axis", int64_t{1}}}, "gather_input");
  // Step 2 on axes 0 and 1, step -2 on axis 2 (5, 3, 1).
  Ints starts = {1, 0, 5}, steps = {2, 2, -2}, sizes = {2, 5, 3};
  Output(*g, ir::OpKind::kSlice, {sv}, {{"starts", starts}, {"steps", steps}, {"sizes", sizes}},
         "slice");

  std::vector<HostTensor> out = CompileAndRun(
      std::move(g),
      {{"tx", tx}, {"c0", c0}, {"c1", c1}, {"c2", c2}, {"gx", gx}, {"ridx", ridx}, {"sx", sx}});
  ASSERT_EQ(out.size(), 5u);
  ExpectClose(out[0], RefTranspose(tx, {3, 1, 0, 2}), "transpose");
  ExpectClose(out[1], RefConcat({&c0, &c1, &c2}, 1), "concat axis 1");
  ExpectClose(out[2], RefGather(gx, cidx, 1), "gather, constant negative indices");
  ExpectClose(out[3], RefGather(gx, ridx, 1), "gather, run-time negative indices");
  ExpectClose(out[4], RefSlice(sx, starts, steps, sizes), "slice step 2");
}

}  // namespace
}  // namespace texel

namespace texel {
namespace {

// g compiled for the shared device in `mode` (--precision).
CompiledModel CompileIn(std::unique_ptr<ir::Graph> g, ComputeMode mode) {
  CompileOptions o;
  o.precision = mode;
  return CompileGraph(std::move(g), testing::SharedContext(), o);
}

// --precision fp16 (passes/precision.cpp): the conv and relu store f16 (the filters converted
// once), softmax reads an f32 input through a Cast (the keep-in-fp32 rule), the graph input and
// both outputs keep f32 and their names; results within f16 rounding (a few 2^-11) of fp32.
TEST(PrecisionTest, Fp16StorageWithKeepRuleAndCasts) {
  HostTensor x = testing::RandomF32({1, 3, 6, 6}, 901), w = testing::RandomF32({4, 3, 3, 3}, 902);
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    ir::Value* c = g->AddNode(ir::OpKind::kConv, {xv, Const(*g, "w", w)},
                              ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), "conv")
                       ->outputs[0];
    ir::Value* r = g->AddNode(ir::OpKind::kRelu, {c}, {}, "relu")->outputs[0];
    r->name = "relu_out";
    g->AddOutput(r);
    ir::Value* s =
        g->AddNode(ir::OpKind::kSoftmax, {r}, {{"axis", int64_t{1}}}, "softmax")->outputs[0];
    s->name = "probs";
    g->AddOutput(s);
    return g;
  };
  std::map<std::string, HostTensor> in{{"x", x}};
  CompiledModel plain = CompileIn(build(), ComputeMode::kFp32);
  CompiledModel half = CompileIn(build(), ComputeMode::kFp16);
  std::map<std::string, DType> types;
  for (const auto& n : half.graph->nodes())
    types[std::string(OpName(n->op))] = n->outputs[0]->type.dtype;
  EXPECT_EQ(types["Conv"], DType::kFloat16);
  EXPECT_EQ(types["Softmax"], DType::kFloat32);
  ASSERT_EQ(half.graph->outputs().size(), 2u);
  for (const ir::Value* v : half.graph->outputs()) EXPECT_EQ(v->type.dtype, DType::kFloat32);
  EXPECT_EQ(half.graph->outputs()[0]->name, "relu_out");
  EXPECT_EQ(half.graph->outputs()[1]->name, "probs");
  auto want = runtime::Session(*plain.executable).Run(in);
  auto got = runtime::Session(*half.executable).Run(in);
  ASSERT_EQ(got.size(), 2u);
  ExpectClose(got[0], want[0], "relu, f16 storage", 1e-2f);
  ExpectClose(got[1], want[1], "softmax after f16 relu", 1e-2f);
}

// The inputs of Exp and Round keep fp32, and so does what makes them from an f32 graph input: a
// softmax written out over logits near 10^4 (half's spacing there is 8) and a quantisation's
// codes near 150 (spacing 1/8) come out as in fp32, while a Relu beside them stores f16.
TEST(PrecisionTest, Fp16KeepsWhatExpAndRoundRead) {
  HostTensor x = testing::RandomF32({2, 7}, 931), y = testing::RandomF32({3, 5}, 932);
  for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = 10000.0f + 3.0f * x.data<float>()[i];
  for (int64_t i = 0; i < y.size(); ++i) y.data<float>()[i] = 150.0f + 2.0f * y.data<float>()[i];
  HostTensor scale(DType::kFloat32, {});
  scale.data<float>()[0] = 0.9f;
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    ir::Value* yv = g->AddInput("y", F32Type(y.shape));
    ir::Value* m = g->AddNode(ir::OpKind::kReduceMax, {xv},
                              {{"axes", Ints{1}}, {"keepdims", int64_t{1}}}, "max")
                       ->outputs[0];
    ir::Value* d = g->AddNode(ir::OpKind::kSub, {xv, m}, {}, "shift")->outputs[0];
    Output(*g, ir::OpKind::kExp, {d}, {}, "exp");
    ir::Value* q =
        g->AddNode(ir::OpKind::kDiv, {yv, Const(*g, "scale", scale)}, {}, "div")->outputs[0];
    Output(*g, ir::OpKind::kRound, {q}, {}, "round");
    Output(*g, ir::OpKind::kRelu, {yv}, {}, "relu");
    return g;
  };
  std::map<std::string, HostTensor> in{{"x", x}, {"y", y}};
  CompiledModel plain = CompileIn(build(), ComputeMode::kFp32);
  CompiledModel half = CompileIn(build(), ComputeMode::kFp16);
  std::map<std::string, DType> types;
  for (const auto& n : half.graph->nodes())
    types[std::string(OpName(n->op))] = n->outputs[0]->type.dtype;
  for (const char* op : {"ReduceMax", "Sub", "Exp", "Div", "Round"})
    EXPECT_EQ(types[op], DType::kFloat32) << op;
  EXPECT_EQ(types["Relu"], DType::kFloat16);
  auto want = runtime::Session(*plain.executable).Run(in);
  auto got = runtime::Session(*half.executable).Run(in);
  ASSERT_EQ(got.size(), 3u);
  ExpectClose(got[0], want[0], "exp(x - max x) near 10^4", 1e-5f);
  for (int64_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(got[1].data<float>()[i], want[1].data<float>()[i]) << "code " << i;
  ExpectClose(got[2], want[2], "relu, f16 storage", 1e-2f);
}

// Divisions a Round reads (a quantisation's x / scale and the scale's own range / 255) are
// correctly rounded (passes/precision.cpp MarkExactDivisions): marked exact 1 where the device
// divides so on request (the program built with -cl-fp32-correctly-rounded-divide-sqrt), else 2
// where it has cl_khr_fp64 (the kernel divides in double), else not at all; the codes equal the
// host's IEEE quotients rounded half to even; a division no Round reads stays as it is. In fp32
// (every mode marks them).
TEST(PrecisionTest, DivisionsARoundReadsAreExact) {
  HostTensor x = testing::RandomF32({4, 33}, 941);
  for (int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] *= 37.0f;
  HostTensor c255(DType::kFloat32, {}), c3(DType::kFloat32, {});
  c255.data<float>()[0] = 255.0f, c3.data<float>()[0] = 3.0f;
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    ir::Value* hi = g->AddNode(ir::OpKind::kReduceMax, {xv},
                               {{"axes", Ints{0, 1}}, {"keepdims", int64_t{0}}}, "hi")
                        ->outputs[0];
    ir::Value* scale =
        g->AddNode(ir::OpKind::kDiv, {hi, Const(*g, "c255", c255)}, {}, "scale")->outputs[0];
    ir::Value* q = g->AddNode(ir::OpKind::kDiv, {xv, scale}, {}, "q")->outputs[0];
    Output(*g, ir::OpKind::kRound, {q}, {}, "codes");
    Output(*g, ir::OpKind::kDiv, {xv, Const(*g, "c3", c3)}, {}, "third");
    return g;
  };
  // The pass on each kind of device.
  const cl::DeviceInfo& here = testing::SharedContext()->info();
  for (auto [correct, fp64, want] :
       {std::tuple{true, false, 1}, {false, true, 2}, {false, false, 0}}) {
    cl::DeviceInfo d = here;
    d.fp32_correct_divide = correct, d.fp64 = fp64;
    passes::PassContext ctx;
    ctx.device = &d;
    auto g = build();
    passes::ApplyPrecision(*g, ctx);
    for (const auto& n : g->nodes()) {
      if (n->op != ir::OpKind::kDiv) continue;
      EXPECT_EQ(n->attrs.Int("exact", 0), n->name == "third" ? 0 : want) << n->name << " " << want;
    }
  }
  // Compiled and run on this device.
  CompiledModel m = CompileIn(build(), ComputeMode::kFp32);
  int64_t how = here.fp32_correct_divide ? 1 : here.fp64 ? 2 : 0;
  for (const auto& n : m.graph->nodes()) {
    if (n->op != ir::OpKind::kDiv) continue;
    EXPECT_EQ(n->attrs.Int("exact", 0), n->name == "third" ? 0 : how) << n->name;
  }
  const runtime::Plan& plan = m.executable->plan();
  EXPECT_EQ(plan.build_options.find(runtime::kCorrectDivideOption) != std::string::npos, how == 1);
  EXPECT_EQ(plan.source.find("(double)") != std::string::npos, how == 2);
  // Marked 2 (a device with cl_khr_fp64 only): the kernel divides in double.
  if (here.fp64) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    ir::Node* d = g->AddNode(ir::OpKind::kDiv, {xv, Const(*g, "c3", c3)}, {}, "third");
    d->attrs.Set("exact", int64_t{2});
    g->AddOutput(d->outputs[0]);
    CompiledModel m2 = CompileIn(std::move(g), ComputeMode::kFp32);
    EXPECT_NE(m2.executable->plan().source.find("(float)((double)"), std::string::npos);
    auto third = runtime::Session(*m2.executable).Run({{"x", x}});
    for (int64_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(third[0].data<float>()[i], x.data<float>()[i] / 3.0f) << i;
  }
  auto got = runtime::Session(*m.executable).Run({{"x", x}});
  float max = -INFINITY;
  for (int64_t i = 0; i < x.size(); ++i) max = std::max(max, x.data<float>()[i]);
  const float want_scale = max / 255.0f;
  for (int64_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(got[0].data<float>()[i], std::nearbyint(x.data<float>()[i] / want_scale)) << i;
    EXPECT_NEAR(got[1].data<float>()[i], x.data<float>()[i] / 3.0f, 1e-5f) << i;
  }
}

// Resize's source coordinates divide correctly rounded where the device can (marked exact 1,
// the program built with -cl-fp32-correctly-rounded-divide-sqrt): 2 rows to 7 in half-pixel
// nearest mode puts output row 3 at (3 + 0.5) / 3.5 - 0.5 = 0.5, a tie that rounds down to row 0
// (the H200's default division gave row 1; ONNX's test_resize_upsample_sizes_nearest).
TEST(PrecisionTest, ResizeCoordinatesDivideExactly) {
  HostTensor x = testing::RandomF32({1, 1, 2, 2}, 951);
  // x resized in half-pixel nearest mode to 1 x 1 x h x w, compiled.
  auto resized = [&](int64_t h, int64_t w) {
    auto g = std::make_unique<ir::Graph>();
    Output(*g, ir::OpKind::kResize, {g->AddInput("x", F32Type(x.shape))},
           {{"mode", std::string("nearest")},
            {"coord", std::string("half_pixel")},
            {"nearest_mode", std::string("round_prefer_floor")},
            {"cubic_a", -0.75},
            {"exclude_outside", int64_t{0}},
            {"extrapolation", 0.0},
            {"sizes", Ints{1, 1, h, w}},
            {"scales", std::vector<double>{1, 1, h / 2.0, w / 2.0}},
            {"roi", std::vector<double>{}}},
           "resize");
    return CompileIn(std::move(g), ComputeMode::kFp32);
  };
  CompiledModel m = resized(7, 8);
  bool correct = testing::SharedContext()->info().fp32_correct_divide;
  EXPECT_EQ(m.graph->nodes().back()->attrs.Int("exact", 0), correct ? 1 : 0);
  EXPECT_EQ(
      m.executable->plan().build_options.find(runtime::kCorrectDivideOption) != std::string::npos,
      correct);
  // Twice the size: a power-of-two scale divides exactly, no mark, no option.
  CompiledModel twice = resized(4, 4);
  EXPECT_FALSE(twice.graph->nodes().back()->attrs.Has("exact"));
  EXPECT_TRUE(twice.executable->plan().build_options.empty());
  auto got = runtime::Session(*m.executable).Run({{"x", x}});
  for (int64_t r = 0; r < 7; ++r)
    for (int64_t c = 0; c < 8; ++c)
      EXPECT_EQ(got[0].data<float>()[r * 8 + c], x.data<float>()[(r < 4 ? 0 : 2) + (c < 4 ? 0 : 1)])
          << r << ", " << c;
}

// tf32x3 takes the matrix engine only for products of at least 2^30 multiply-adds
// (kTf32x3MinMacs); smaller ones keep the fp32 kernels, as accurate and faster there. tf32 marks
// every product. Both mark every convolution: whether they take the engine is the channels-last
// pass's decision (WindowKernelTest.ChannelsLastRegionsInTf32Modes).
TEST(PrecisionTest, Tf32x3TakesTheEngineForLargeProductsOnly) {
  auto build = [] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* a = g->AddInput("a", F32Type({1024, 1024}));
    ir::Value* x = g->AddInput("x", F32Type({128, 768}));
    Output(*g, ir::OpKind::kMatMul, {a, a}, {}, "large");  // 2^30
    Output(*g, ir::OpKind::kMatMul, {x, g->AddInput("w", F32Type({768, 768}))}, {}, "small");
    Output(*g, ir::OpKind::kConv,
           {g->AddInput("cx", F32Type({1, 64, 56, 56})), g->AddInput("f", F32Type({64, 64, 3, 3}))},
           ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), "conv");
    return g;
  };
  for (ComputeMode mode : {ComputeMode::kTf32x3, ComputeMode::kTf32}) {
    auto g = build();
    passes::PassContext ctx;
    ctx.precision = mode;
    passes::Stats st = passes::ApplyPrecision(*g, ctx);
    bool x3 = mode == ComputeMode::kTf32x3;
    std::map<std::string, bool> want = {{"large", true}, {"small", !x3}, {"conv", true}};
    for (const auto& n : g->nodes())
      EXPECT_EQ(n->attrs.Has("compute_mode"), want.at(n->name)) << n->name << " " << x3;
    EXPECT_EQ(passes::ProductMacs(*g->nodes()[0]), int64_t{1} << 30);
    EXPECT_EQ(passes::ProductMacs(*g->nodes()[2]), int64_t{56} * 56 * 64 * 64 * 9);
    EXPECT_EQ(st["matrix-products"], x3 ? 1 : 2);
    EXPECT_EQ(st.count("small-products-fp32") ? st["small-products-fp32"] : 0, x3 ? 1 : 0);
    EXPECT_EQ(st.count("convolutions-for-channels-last") ? st["convolutions-for-channels-last"] : 0,
              1);
  }
  // A transposed A: the depth is its second-to-last dimension.
  ir::Graph t;
  ir::Node* mm =
      t.AddNode(ir::OpKind::kMatMul,
                {t.AddInput("a", F32Type({300, 20})), t.AddInput("b", F32Type({300, 7}))},
                {{"trans_a", int64_t{1}}}, "mm");
  EXPECT_EQ(passes::ProductMacs(*mm), 20 * 7 * 300);
}

// A convolution over 3 images in fp16 (the implicit GEMM, its images folded into the columns:
// NCHW stores from columns of images x pixels) with a residual Add and a Relu fused into its
// stores, whose indices must be the output's: against the fp32 compile (the CPU's blocked
// convolution), within f16 rounding.
TEST(PrecisionTest, Fp16ConvOverImagesWithResidual) {
  HostTensor x = testing::RandomF32({3, 8, 5, 5}, 921), w = testing::RandomF32({12, 8, 3, 3}, 922);
  HostTensor b = testing::RandomF32({12}, 923), r = testing::RandomF32({3, 12, 5, 5}, 924);
  // Sums over 72 products of order 1, so that their f16 rounding stays below the tolerance
  // where the residual cancels them.
  for (int64_t i = 0; i < w.size(); ++i) w.data<float>()[i] /= 8;
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    ir::Value* rv = g->AddInput("r", F32Type(r.shape));
    ir::Value* c = g->AddNode(ir::OpKind::kConv, {xv, Const(*g, "w", w), Const(*g, "b", b)},
                              ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), "conv")
                       ->outputs[0];
    ir::Value* s = g->AddNode(ir::OpKind::kAdd, {c, rv}, {}, "add")->outputs[0];
    g->AddOutput(g->AddNode(ir::OpKind::kRelu, {s}, {}, "relu")->outputs[0]);
    return g;
  };
  std::map<std::string, HostTensor> in{{"x", x}, {"r", r}};
  CompiledModel half = CompileIn(build(), ComputeMode::kFp16);
  auto want = runtime::Session(*CompileIn(build(), ComputeMode::kFp32).executable).Run(in);
  auto got = runtime::Session(*half.executable).Run(in);
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], want[0], "conv + residual + relu over 3 images, f16 storage", 1e-2f);
}

// A graph input read only by convolutions that gather it is converted by them in fp16: its Cast
// to f16 goes (passes/fuse.cpp), each convolution reads the f32 image (convert_input), on this
// device's scalar implicit GEMM and on the matrix-engine kernel in emulation (TEXEL_TARGET, K
// split: the hoisted gather of a 3x3 window and the unhoisted one of a 9x9 window, 81 taps).
// An input also read by an Add keeps its Cast. Results within f16 rounding of fp32.
TEST(PrecisionTest, Fp16InputConvertedByItsConvolutions) {
  HostTensor x = testing::RandomF32({2, 8, 11, 11}, 931),
             w = testing::RandomF32({16, 8, 3, 3}, 932);
  HostTensor w9 = testing::RandomF32({16, 8, 9, 9}, 933), b = testing::RandomF32({16}, 934);
  for (HostTensor* t : {&w, &w9})  // sums of order 1, their f16 rounding a few 1e-3
    for (int64_t i = 0; i < t->size(); ++i) t->data<float>()[i] /= t == &w ? 8 : 24;
  auto build = [&](bool also_added) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    ir::Value* c = g->AddNode(ir::OpKind::kConv, {xv, Const(*g, "w", w), Const(*g, "b", b)},
                              ConvAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 1), "conv3")
                       ->outputs[0];
    g->AddOutput(g->AddNode(ir::OpKind::kRelu, {c}, {}, "relu")->outputs[0]);
    g->AddOutput(g->AddNode(ir::OpKind::kConv, {xv, Const(*g, "w9", w9)},
                            ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), "conv9")
                     ->outputs[0]);
    if (also_added) g->AddOutput(g->AddNode(ir::OpKind::kAdd, {xv, xv}, {}, "twice")->outputs[0]);
    return g;
  };
  std::map<std::string, HostTensor> in{{"x", x}};
  for (bool also_added : {false, true}) {
    auto want =
        runtime::Session(*CompileIn(build(also_added), ComputeMode::kFp32).executable).Run(in);
    for (const char* target : {"", "gpu:132:mma"}) {
      if (also_added && *target) continue;  // the Cast's kernel as before: one target is enough
      SCOPED_TRACE(fmt::format("TEXEL_TARGET={} also added: {}", target, also_added));
      if (*target) setenv("TEXEL_TARGET", target, 1);
      CompiledModel half = CompileIn(build(also_added), ComputeMode::kFp16);
      unsetenv("TEXEL_TARGET");
      int casts = 0, converting = 0;
      for (const auto& n : half.graph->nodes()) {
        casts += n->op == ir::OpKind::kCast && n->inputs[0]->is_input;
        converting += n->op == ir::OpKind::kConv && n->attrs.Int("convert_input", 0) == 1;
      }
      EXPECT_EQ(casts, also_added ? 1 : 0);
      EXPECT_EQ(converting, also_added ? 0 : 2);
      auto got = runtime::Session(*half.executable).Run(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k)
        ExpectClose(got[k], want[k], fmt::format("output {}", k), 2e-2f);
    }
  }
}

// convert_input (which only the fuse pass sets) on a convolution that cannot convert is refused
// with an error that names it, never generated: one of f32 filters, and a plain 1x1 on f16
// filters (which reads its image as a matrix, not through the gather that converts).
TEST(PrecisionTest, ConvertInputOnlyWhereTheConvolutionGathers) {
  HostTensor w = testing::RandomF32({4, 3, 3, 3}, 941);
  HostTensor w1 = testing::ToF16(testing::RandomF32({4, 3, 1, 1}, 942));
  auto build = [&](const HostTensor& filters, bool pad) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type({1, 3, 6, 6}));
    ir::Attrs a = ConvAttrs({1, 1}, pad ? Ints{1, 1, 1, 1} : Ints{0, 0, 0, 0}, {1, 1}, 1);
    a.Set("convert_input", int64_t{1});
    g->AddOutput(
        g->AddNode(ir::OpKind::kConv, {xv, Const(*g, "w", filters)}, a, "conv")->outputs[0]);
    return g;
  };
  for (auto [filters, pad] : {std::pair{&w, true}, std::pair{&w1, false}}) {
    try {
      CompileIn(build(*filters, pad), ComputeMode::kFp32);
      ADD_FAILURE() << "compiled a Conv with convert_input on f32 filters";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find("convert_input"), std::string::npos) << e.what();
    }
  }
}

void CheckFp16Outputs(const CompiledModel& half, const std::vector<HostTensor>& want,
                      const std::map<std::string, HostTensor>& in);

// Graph outputs computed by a product or a LayerNorm in fp16 get their f32 from the kernel that
// computes them: the Cast before each output joins that kernel's group (passes/fuse.cpp), whose
// template stores the result as f32 (EPILOGUE_STORE): a product with its bias, a LayerNorm with
// its scale, and a product whose LayerNorm sums its slices; on this device's kernels and on the
// matrix-engine kernels in emulation (TEXEL_TARGET: the warp-tiled product with K split and a
// sum kernel storing, with 132 compute units; storing itself, with 2). Results within f16
// rounding of fp32.
TEST(PrecisionTest, Fp16OutputsConvertedByTheirKernels) {
  HostTensor x = testing::RandomF32({2, 37, 256}, 911);
  // Weights in [-1/16, 1/16]: sums over K = 256 of order 1, their f16 error of order 1e-3.
  auto konst = [](ir::Graph& g, const std::string& name, Shape s, uint32_t seed) {
    auto t = std::make_shared<HostTensor>(testing::RandomF32(std::move(s), seed));
    for (int64_t i = 0; i < t->size(); ++i) t->data<float>()[i] /= 16;
    return g.AddConstant(name, t);
  };
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    auto add = [&](ir::OpKind op, std::vector<ir::Value*> in, ir::Attrs a, const char* name) {
      return g->AddNode(op, std::move(in), std::move(a), name)->outputs[0];
    };
    ir::Attrs norm{{"axis", int64_t{2}}, {"epsilon", 1e-5}};
    ir::Value* proj = add(ir::OpKind::kMatMul, {xv, konst(*g, "w", {256, 40}, 912)}, {}, "mm");
    proj = add(ir::OpKind::kAdd, {proj, konst(*g, "b", {40}, 913)}, {}, "bias");
    proj->name = "proj";
    ir::Value* ln = add(ir::OpKind::kLayerNorm, {xv}, norm, "ln");
    ln = add(ir::OpKind::kMul, {ln, konst(*g, "gamma", {256}, 914)}, {}, "scale");
    ln->name = "norm";
    ir::Value* pn = add(ir::OpKind::kMatMul, {xv, konst(*g, "w2", {256, 32}, 915)}, {}, "mm2");
    pn = add(ir::OpKind::kLayerNorm, {pn}, norm, "ln2");
    pn->name = "proj_norm";
    for (ir::Value* v : {proj, ln, pn}) g->AddOutput(v);
    return g;
  };
  std::map<std::string, HostTensor> in{{"x", x}};
  CompiledModel plain = CompileIn(build(), ComputeMode::kFp32);
  auto want = runtime::Session(*plain.executable).Run(in);
  for (const char* target : {"", "gpu:132:mma", "gpu:2:mma"}) {
    SCOPED_TRACE(std::string("TEXEL_TARGET=") + target);
    if (*target) setenv("TEXEL_TARGET", target, 1);
    CompiledModel half = CompileIn(build(), ComputeMode::kFp16);
    unsetenv("TEXEL_TARGET");
    CheckFp16Outputs(half, want, in);
  }
}

// (Fp16OutputsConvertedByTheirKernels)
void CheckFp16Outputs(const CompiledModel& half, const std::vector<HostTensor>& want,
                      const std::map<std::string, HostTensor>& in) {
  int casts = 0;
  for (const auto& n : half.graph->nodes()) {
    if (n->op != ir::OpKind::kCast || n->inputs[0]->type.dtype != DType::kFloat16) continue;
    ++casts;
    EXPECT_GE(n->group, 0) << n->name << " runs in a kernel of its own";
    EXPECT_EQ(n->group, n->inputs[0]->producer->group) << n->name;
  }
  EXPECT_EQ(casts, 3);
  ASSERT_EQ(half.graph->outputs().size(), 3u);
  for (const ir::Value* v : half.graph->outputs()) EXPECT_EQ(v->type.dtype, DType::kFloat32);
  auto got = runtime::Session(*half.executable).Run(in);
  ASSERT_EQ(got.size(), 3u);
  const char* what[] = {"product + bias", "layernorm * gamma", "product -> layernorm"};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(got[k].dtype, DType::kFloat32) << what[k];
    ExpectClose(got[k], want[k], what[k], 2e-2f);
  }
}

// An embedding lookup and its position term are one kernel in fp16 too: the f16 Gather reads
// its table as float (vload_half) and applies the Add as its epilogue (passes/fuse.cpp).
TEST(PrecisionTest, Fp16EmbeddingAndPositionOneKernel) {
  HostTensor ids(DType::kInt64, {2, 10});
  for (int64_t i = 0; i < ids.size(); ++i)
    ids.data<int64_t>()[i] = (i * 7) % 50 - (i % 3 == 0 ? 50 : 0);
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* iv = g->AddInput("ids", {DType::kInt64, ids.shape});
    auto table = std::make_shared<HostTensor>(testing::RandomF32({50, 16}, 921));
    auto pos = std::make_shared<HostTensor>(testing::RandomF32({10, 16}, 922));
    ir::Value* e = g->AddNode(ir::OpKind::kGather, {g->AddConstant("table", table), iv},
                              {{"axis", int64_t{0}}}, "embed")
                       ->outputs[0];
    ir::Value* y =
        g->AddNode(ir::OpKind::kAdd, {e, g->AddConstant("pos", pos)}, {}, "pos")->outputs[0];
    y->name = "y";
    g->AddOutput(y);
    return g;
  };
  std::map<std::string, HostTensor> in{{"ids", ids}};
  CompiledModel plain = CompileIn(build(), ComputeMode::kFp32);
  CompiledModel half = CompileIn(build(), ComputeMode::kFp16);
  const ir::Node *gather = nullptr, *add = nullptr;
  for (const auto& n : half.graph->nodes()) {
    if (n->op == ir::OpKind::kGather) gather = n.get();
    if (n->op == ir::OpKind::kAdd) add = n.get();
  }
  ASSERT_TRUE(gather && add);
  EXPECT_EQ(gather->outputs[0]->type.dtype, DType::kFloat16);
  EXPECT_GE(gather->group, 0);
  EXPECT_EQ(add->group, gather->group) << "the position term in the lookup's kernel";
  auto want = runtime::Session(*plain.executable).Run(in);
  auto got = runtime::Session(*half.executable).Run(in);
  ASSERT_EQ(got.size(), 1u);
  ExpectClose(got[0], want[0], "embedding + position, f16", 1e-2f);
}

// DenseNet's layer head: Concat, then BatchNorm's Mul and Add and ReLU: one kernel (the Concat's,
// fuse's Concat anchor) in fp32 and fp16, the fp16 one reading its halves as float.
TEST(PrecisionTest, ConcatWithBatchNormAndReluOneKernel) {
  HostTensor a = testing::RandomF32({2, 3, 4, 5}, 931), b = testing::RandomF32({2, 5, 4, 5}, 932);
  HostTensor scale = testing::RandomF32({8, 1, 1}, 933), shift = testing::RandomF32({8, 1, 1}, 934);
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* c =
        g->AddNode(ir::OpKind::kConcat,
                   {g->AddInput("a", F32Type(a.shape)), g->AddInput("b", F32Type(b.shape))},
                   {{"axis", int64_t{1}}}, "cat")
            ->outputs[0];
    ir::Value* m =
        g->AddNode(ir::OpKind::kMul, {c, Const(*g, "scale", scale)}, {}, "bn_mul")->outputs[0];
    ir::Value* t =
        g->AddNode(ir::OpKind::kAdd, {m, Const(*g, "shift", shift)}, {}, "bn_add")->outputs[0];
    g->AddOutput(g->AddNode(ir::OpKind::kRelu, {t}, {}, "relu")->outputs[0]);
    return g;
  };
  HostTensor want(DType::kFloat32, {2, 8, 4, 5});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t ch = 0; ch < 8; ++ch)
      for (int64_t p = 0; p < 20; ++p) {
        float v = ch < 3 ? a.data<float>()[(n * 3 + ch) * 20 + p]
                         : b.data<float>()[(n * 5 + ch - 3) * 20 + p];
        v = v * scale.data<float>()[ch] + shift.data<float>()[ch];
        want.data<float>()[(n * 8 + ch) * 20 + p] = std::max(v, 0.0f);
      }
  std::map<std::string, HostTensor> in{{"a", a}, {"b", b}};
  for (ComputeMode mode : {ComputeMode::kFp32, ComputeMode::kFp16}) {
    CompiledModel m = CompileIn(build(), mode);
    size_t kernels = m.executable->plan().steps.size();
    bool half = mode == ComputeMode::kFp16;
    // fp16: the inputs' and the output's conversions are kernels of their own.
    EXPECT_EQ(kernels, half ? 4u : 1u) << "fp16 " << half;
    auto got = runtime::Session(*m.executable).Run(in);
    ExpectClose(got[0], want, half ? "concat + bn + relu, fp16" : "concat + bn + relu",
                half ? 1e-2f : 1e-5f);
  }
}

// A finite constant beyond half's range is saturated to ±65504 when converted for f16 nodes,
// never made infinite: an attention mask written (1 - m) * FLT_MIN must stay 0 where m = 1
// (0 * -inf would be NaN).
TEST(PrecisionTest, Fp16ConstantsSaturateFinite) {
  HostTensor m(DType::kFloat32, {4});
  const float mask[4] = {1, 0, 1, 0};
  std::copy(mask, mask + 4, m.data<float>());
  HostTensor one(DType::kFloat32, {}), lowest(DType::kFloat32, {});
  one.data<float>()[0] = 1;
  lowest.data<float>()[0] = -3.4028234663852886e38f;
  auto g = std::make_unique<ir::Graph>();
  ir::Value* mv = g->AddInput("m", F32Type(m.shape));
  ir::Value* keep =
      g->AddNode(ir::OpKind::kSub, {Const(*g, "one", one), mv}, {}, "sub")->outputs[0];
  ir::Value* bias =
      g->AddNode(ir::OpKind::kMul, {keep, Const(*g, "lowest", lowest)}, {}, "mul")->outputs[0];
  bias->name = "bias";
  g->AddOutput(bias);
  CompiledModel half = CompileIn(std::move(g), ComputeMode::kFp16);
  auto got = runtime::Session(*half.executable).Run({{"m", m}});
  ASSERT_EQ(got.size(), 1u);
  const float want[4] = {0, -65504, 0, -65504};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(got[0].data<float>()[i], want[i]) << "element " << i;
}

}  // namespace
}  // namespace texel
