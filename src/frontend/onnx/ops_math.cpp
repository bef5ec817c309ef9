// Importers for matrix products, reductions and the softmax family.
#include <algorithm>
#include <optional>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

// MatMul with numpy semantics: a 1-D operand gains a unit dim that is dropped afterwards.
void MatMul(NodeImporter& n) {
  ir::Value* a = n.RequiredInput(0);
  ir::Value* b = n.RequiredInput(1);
  if (a->type.shape.empty() || b->type.shape.empty())
    n.Invalid("MatMul operands must not be scalars");
  bool a1 = a->type.shape.size() == 1, b1 = b->type.shape.size() == 1;
  if (a1) a = n.Reshape(a, {1, a->type.shape[0]});
  if (b1) b = n.Reshape(b, {b->type.shape[0], 1});
  ir::Value* y = n.Emit(OpKind::kMatMul, {a, b});
  Shape s = y->type.shape;
  if (a1) s.erase(s.end() - 2);
  if (b1) s.erase(s.end() - 1);
  n.SetOutput(0, n.Reshape(y, s));
}

ir::Value* Transpose2D(NodeImporter& n, ir::Value* x) {
  return n.Emit(OpKind::kTranspose, {x}, {{"perm", std::vector<int64_t>{1, 0}}});
}

// Gemm: alpha * A' * B' + beta * C, decomposed into Transpose / MatMul / Mul / Add.
void Gemm(NodeImporter& n) {
  ir::Value* a = n.RequiredInput(0);
  ir::Value* b = n.RequiredInput(1);
  ir::Value* c = n.Input(2);
  if (a->type.shape.size() != 2 || b->type.shape.size() != 2) n.Invalid("A and B must be 2-D");
  double alpha = n.AttrFloat("alpha", 1.0), beta = n.AttrFloat("beta", 1.0);
  n.AttrInt("broadcast", 1);  // opset < 7: C always broadcasts in texel
  if (n.AttrInt("transA", 0)) a = Transpose2D(n, a);
  if (n.AttrInt("transB", 0)) b = Transpose2D(n, b);
  DType t = a->type.dtype;
  ir::Value* y = n.Emit(OpKind::kMatMul, {a, b});
  if (alpha != 1.0) y = n.Emit(OpKind::kMul, {y, n.ConstScalar(t, alpha)});
  if (c && beta != 0.0) {
    if (beta != 1.0) c = n.Emit(OpKind::kMul, {c, n.ConstScalar(t, beta)});
    y = n.Emit(OpKind::kAdd, {y, c});
  }
  n.SetOutput(0, y);
}

// Softmax / LogSoftmax. Before opset 13 the input is seen as 2-D, [prod(dims < axis),
// prod(dims >= axis)], and normalised over the second dim.
template <OpKind kOp>
void Softmax(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& xs = x->type.shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  if (rank == 0) n.Invalid("input must not be a scalar");
  int64_t axis = n.Axis("axis", n.AttrInt("axis", n.opset() < 13 ? 1 : -1), rank);
  if (n.opset() >= 13 || axis == rank - 1) {
    n.SetOutput(0, n.Emit(kOp, {x}, {{"axis", axis}}));
    return;
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  ir::Value* flat = n.Reshape(x, {outer, NumElements(xs) / std::max<int64_t>(outer, 1)});
  ir::Value* y = n.Emit(kOp, {flat}, {{"axis", int64_t{1}}});
  n.SetOutput(0, n.Reshape(y, xs));
}

// The normalised axes and keepdims of a reduction; nullopt for a no-op (noop_with_empty_axes).
// Axes come from an attribute, or from input 1 for ReduceSum since opset 13.
std::optional<std::vector<int64_t>> ReduceAxes(NodeImporter& n, bool axes_input) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  std::vector<int64_t> axes;
  if (axes_input) {
    if (n.Input(1)) axes = n.ConstInts(1, "axes");
  } else {
    axes = n.AttrInts("axes", std::vector<int64_t>{});
  }
  if (axes.empty()) {
    if (n.AttrInt("noop_with_empty_axes", 0) != 0) return std::nullopt;
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) n.Invalid(fmt::format("axis {} out of range", a));
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  for (int64_t a : axes)
    if (x->type.shape[a] == 0) n.Unsupported("reducing an empty axis is not supported");
  return axes;
}

template <OpKind kOp>
void Reduce(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  auto axes = ReduceAxes(n, kOp == OpKind::kReduceSum && n.opset() >= 13);
  int64_t keepdims = n.AttrInt("keepdims", 1);
  if (!axes) {
    n.SetOutput(0, n.Emit(OpKind::kCopy, {x}));
    return;
  }
  n.SetOutput(0, n.Emit(kOp, {x}, {{"axes", *axes}, {"keepdims", keepdims}}));
}

enum class Composite { kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// Reductions composed of core ops:
//   ReduceL1 = Sum(|x|)   ReduceL2 = Sqrt(Sum(x*x))   ReduceSumSquare = Sum(x*x)
//   ReduceLogSum = Log(Sum(x))   ReduceLogSumExp = Log(Sum(Exp(x - m))) + m, m = Max(x)
template <Composite kKind>
void ReduceComposite(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  auto axes = ReduceAxes(n, false);
  int64_t keepdims = n.AttrInt("keepdims", 1);
  if (!axes) axes = std::vector<int64_t>{};
  auto sum = [&](ir::Value* v, int64_t keep) {
    if (axes->empty()) return v;
    return n.Emit(OpKind::kReduceSum, {v}, {{"axes", *axes}, {"keepdims", keep}});
  };
  ir::Value* y = nullptr;
  switch (kKind) {
    case Composite::kL1: y = sum(n.Emit(OpKind::kAbs, {x}), keepdims); break;
    case Composite::kL2:
      y = n.Emit(OpKind::kSqrt, {sum(n.Emit(OpKind::kMul, {x, x}), keepdims)});
      break;
    case Composite::kSumSquare: y = sum(n.Emit(OpKind::kMul, {x, x}), keepdims); break;
    case Composite::kLogSum: y = n.Emit(OpKind::kLog, {sum(x, keepdims)}); break;
    case Composite::kLogSumExp: {
      if (axes->empty()) {
        y = x;
        break;
      }
      ir::Value* m = n.Emit(OpKind::kReduceMax, {x}, {{"axes", *axes}, {"keepdims", int64_t{1}}});
      ir::Value* s = sum(n.Emit(OpKind::kExp, {n.Emit(OpKind::kSub, {x, m})}), 1);
      y = n.Emit(OpKind::kAdd, {n.Emit(OpKind::kLog, {s}), m});
      if (!keepdims) {
        Shape shape;
        for (size_t d = 0; d < x->type.shape.size(); ++d)
          if (std::find(axes->begin(), axes->end(), static_cast<int64_t>(d)) == axes->end())
            shape.push_back(x->type.shape[d]);
        y = n.Reshape(y, shape);
      }
      break;
    }
  }
  if (y == x) y = n.Emit(OpKind::kCopy, {x});
  n.SetOutput(0, y);
}

template <OpKind kOp>
void ArgReduce(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  int64_t axis = n.Axis("axis", n.AttrInt("axis", 0), rank);
  if (x->type.shape[axis] == 0) n.Invalid("cannot reduce an empty axis");
  n.SetOutput(0, n.Emit(kOp, {x},
                        {{"axes", std::vector<int64_t>{axis}},
                         {"keepdims", n.AttrInt("keepdims", 1)},
                         {"select_last_index", n.AttrInt("select_last_index", 0)}}));
}

void CumSum(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  int64_t axis = n.Axis("axis", n.ConstInput(1, "axis").GetInt(0), rank);
  n.SetOutput(0, n.Emit(OpKind::kCumSum, {x},
                        {{"axis", axis},
                         {"exclusive", n.AttrInt("exclusive", 0)},
                         {"reverse", n.AttrInt("reverse", 0)}}));
}

// Hardmax: 1 at the first maximum along axis, 0 elsewhere:
// Cast(Equal(ArgMax(x, keepdims), iota along axis)). Before opset 13 the input is seen as 2-D.
void Hardmax(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& xs = x->type.shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = n.Axis("axis", n.AttrInt("axis", n.opset() < 13 ? 1 : -1), rank);
  ir::Value* v = x;
  if (n.opset() < 13) {
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
    v = n.Reshape(x, {outer, NumElements(xs) / std::max<int64_t>(outer, 1)});
    axis = 1;
  }
  const Shape& vs = v->type.shape;
  ir::Value* am = n.Emit(OpKind::kArgMax, {v},
                         {{"axes", std::vector<int64_t>{axis}},
                          {"keepdims", int64_t{1}},
                          {"select_last_index", int64_t{0}}});
  Shape iota_shape(vs.size(), 1);
  iota_shape[axis] = vs[axis];
  HostTensor iota(DType::kInt64, iota_shape);
  for (int64_t i = 0; i < vs[axis]; ++i) iota.data<int64_t>()[i] = i;
  ir::Value* eq = n.Emit(OpKind::kEqual, {am, n.Const(std::move(iota))});
  ir::Value* y = n.Emit(OpKind::kCast, {eq}, {{"to", int64_t(x->type.dtype)}});
  n.SetOutput(0, n.Reshape(y, xs));
}

// LRN: y = x / (bias + alpha / size * sum_{c' in window(c)} x[c']^2)^beta. The channel-window
// sum is an AveragePool (count_include_pad) over [N, 1, C, H*W] times size.
void Lrn(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& xs = x->type.shape;
  if (xs.size() < 3) n.Invalid("input must have rank >= 3");
  int64_t size = n.AttrInt("size");
  if (size < 1) n.Invalid(fmt::format("size {} must be positive", size));
  double alpha = n.AttrFloat("alpha", 1e-4), beta = n.AttrFloat("beta", 0.75);
  double bias = n.AttrFloat("bias", 1.0);
  DType t = x->type.dtype;
  // (Not NumElements / (N * C): a batch of 0 would divide by zero.)
  int64_t spatial = NumElements(Shape(xs.begin() + 2, xs.end()));
  ir::Value* sq = n.Reshape(n.Emit(OpKind::kMul, {x, x}), {xs[0], 1, xs[1], spatial});
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  ir::Value* avg = n.Emit(OpKind::kAveragePool, {sq},
                          {{"kernel", std::vector<int64_t>{size, 1}},
                           {"strides", std::vector<int64_t>{1, 1}},
                           {"pads", std::vector<int64_t>{before, 0, after, 0}},
                           {"dilations", std::vector<int64_t>{1, 1}},
                           {"ceil_mode", int64_t{0}},
                           {"count_include_pad", int64_t{1}}});
  ir::Value* scaled =
      n.Emit(OpKind::kAdd, {n.Emit(OpKind::kMul, {n.Reshape(avg, xs), n.ConstScalar(t, alpha)}),
                            n.ConstScalar(t, bias)});
  n.SetOutput(0, n.Emit(OpKind::kDiv, {x, n.Emit(OpKind::kPow, {scaled, n.ConstScalar(t, beta)})}));
}

}  // namespace

void RegisterMathOps(Registry& r) {
  r["LRN"] = Lrn;
  r["MatMul"] = MatMul;
  r["Gemm"] = Gemm;
  r["Softmax"] = Softmax<OpKind::kSoftmax>;
  r["LogSoftmax"] = Softmax<OpKind::kLogSoftmax>;
  r["ReduceSum"] = Reduce<OpKind::kReduceSum>;
  r["ReduceMean"] = Reduce<OpKind::kReduceMean>;
  r["ReduceMax"] = Reduce<OpKind::kReduceMax>;
  r["ReduceMin"] = Reduce<OpKind::kReduceMin>;
  r["ReduceProd"] = Reduce<OpKind::kReduceProd>;
  r["ReduceL1"] = ReduceComposite<Composite::kL1>;
  r["ReduceL2"] = ReduceComposite<Composite::kL2>;
  r["ReduceSumSquare"] = ReduceComposite<Composite::kSumSquare>;
  r["ReduceLogSum"] = ReduceComposite<Composite::kLogSum>;
  r["ReduceLogSumExp"] = ReduceComposite<Composite::kLogSumExp>;
  r["ArgMax"] = ArgReduce<OpKind::kArgMax>;
  r["ArgMin"] = ArgReduce<OpKind::kArgMin>;
  r["CumSum"] = CumSum;
  r["Hardmax"] = Hardmax;
}

}  // namespace texel::onnx_frontend
