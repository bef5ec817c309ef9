// Importers for matrix products, reductions and the softmax family.
#include <algorithm>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

// MatMul with numpy semantics: a 1-D operand gains a unit dim that is dropped afterwards.
void MatMul(NodeImporter& n) {
  ir::Value* a = n.RequiredInput(0);
  ir::Value* b = n.RequiredInput(1);
  if (a->type.shape.empty() || b->type.shape.empty()) n.Invalid("MatMul operands must not be scalars");
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
  int64_t axis = n.AttrInt("axis", n.opset() < 13 ? 1 : -1);
  if (axis < -rank || axis >= rank) n.Invalid(fmt::format("axis {} out of range", axis));
  if (axis < 0) axis += rank;
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

// Reductions. Axes come from an attribute, or from input 1 for ReduceSum since opset 13.
template <OpKind kOp>
void Reduce(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  std::vector<int64_t> axes;
  bool axes_input = kOp == OpKind::kReduceSum && n.opset() >= 13;
  if (axes_input) {
    if (n.Input(1)) axes = n.ConstInts(1, "axes");
  } else {
    axes = n.AttrInts("axes", std::vector<int64_t>{});
  }
  int64_t keepdims = n.AttrInt("keepdims", 1);
  bool noop_empty = n.AttrInt("noop_with_empty_axes", 0) != 0;
  if (axes.empty()) {
    if (noop_empty) {
      n.SetOutput(0, n.Emit(OpKind::kCopy, {x}));
      return;
    }
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
  n.SetOutput(0, n.Emit(kOp, {x}, {{"axes", axes}, {"keepdims", keepdims}}));
}

}  // namespace

void RegisterMathOps(Registry& r) {
  r["MatMul"] = MatMul;
  r["Gemm"] = Gemm;
  r["Softmax"] = Softmax<OpKind::kSoftmax>;
  r["LogSoftmax"] = Softmax<OpKind::kLogSoftmax>;
  r["ReduceSum"] = Reduce<OpKind::kReduceSum>;
  r["ReduceMean"] = Reduce<OpKind::kReduceMean>;
  r["ReduceMax"] = Reduce<OpKind::kReduceMax>;
  r["ReduceMin"] = Reduce<OpKind::kReduceMin>;
  r["ReduceProd"] = Reduce<OpKind::kReduceProd>;
}

}  // namespace texel::onnx_frontend
