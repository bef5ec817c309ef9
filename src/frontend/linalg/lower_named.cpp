// linalg named ops -> core IR, one function per op family, registered at the bottom.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "frontend/linalg/lowering.h"

namespace texel::linalg_frontend {
namespace {

using ir::OpKind;

// The rank-0 constant a splat tensor is expanded from (lowering.h: Constant, linalg.fill), or
// the value itself when it is a rank-0 constant; null otherwise.
ir::Value* SplatScalar(ir::Value* v) {
  if (v->is_constant() && v->type.shape.empty()) return v;
  if (v->producer && v->producer->op == OpKind::kExpand && v->producer->inputs[0]->is_constant() &&
      v->producer->inputs[0]->type.shape.empty())
    return v->producer->inputs[0];
  return nullptr;
}

bool IsZero(ir::Value* v) {
  if (ir::Value* s = SplatScalar(v)) v = s;
  if (!v->is_constant()) return false;
  for (int64_t i = 0; i < v->constant->size(); ++i)
    if (v->constant->GetDouble(i) != 0) return false;
  return true;
}

// linalg.fill ins(%c : f32) outs(%e : tensor<..>): the scalar expanded to the outs shape.
void Fill(Lowering& l, const ast::Operation& op) {
  const ast::Type& out = l.CheckStructured(op, 1);
  const ast::Type& vt = op.operand_types[0];
  if (vt.is_shaped() || vt.dtype != out.dtype)
    l.Fail(op.operands[0].loc,
           fmt::format("the fill value has type {}, but the outs element type is {}",
                       ast::TypeText(vt), ast::ElementTypeText(out.dtype)));
  ir::Value* v = l.Scalar(op.operands[0], vt);
  l.Tensor(op.operands[1], out, /*allow_empty=*/true);  // checks its type; contents unused
  if (!out.shape.empty()) v = l.Emit(op, OpKind::kExpand, {v}, {{"shape", out.shape}});
  l.DefineResults(op, {Lowering::TensorBinding(v, op.loc)});
}

// The matmul family: C += A x B with A [B?, M, K] (or [B?, K, M] with trans_a) and B [B?, K, N]
// (or [B?, N, K] with trans_b). linalg accumulates into outs; outs that are a fill of zero add
// nothing, and tensor.empty outs (undefined contents) are taken as a fresh result (see
// docs/linalg.md).
template <bool kBatch, bool kTransA, bool kTransB>
void MatMul(Lowering& l, const ast::Operation& op) {
  const ast::Type& out = l.CheckStructured(op, 2);
  ir::Value* a = l.Tensor(op.operands[0], op.operand_types[0]);
  ir::Value* b = l.Tensor(op.operands[1], op.operand_types[1]);
  ir::Value* c = l.Tensor(op.operands[2], out, /*allow_empty=*/true);
  size_t rank = kBatch ? 3 : 2;
  const Shape &as = a->type.shape, &bs = b->type.shape;
  if (as.size() != rank || bs.size() != rank || out.shape.size() != rank)
    l.Fail(op.loc, fmt::format("'{}' takes rank-{} operands, got {}, {} and {}", op.name, rank,
                               ast::TypeText(op.operand_types[0]),
                               ast::TypeText(op.operand_types[1]), ast::TypeText(out)));
  if (a->type.dtype != b->type.dtype || a->type.dtype != out.dtype)
    l.Fail(op.loc, fmt::format("'{}' with mixed element types is not supported", op.name),
           ErrorCode::kUnsupported);
  size_t r = rank - 2;
  int64_t m = kTransA ? as[r + 1] : as[r], k = kTransA ? as[r] : as[r + 1];
  int64_t kb = kTransB ? bs[r + 1] : bs[r], n = kTransB ? bs[r] : bs[r + 1];
  Shape want = {m, n};
  if (kBatch) want.insert(want.begin(), as[0]);
  if (k != kb || (kBatch && as[0] != bs[0]) || out.shape != want)
    l.Fail(op.loc, fmt::format("'{}' shape mismatch: {} x {} into {}", op.name,
                               ast::TypeText(op.operand_types[0]),
                               ast::TypeText(op.operand_types[1]), ast::TypeText(out)));
  ir::Attrs attrs;
  if (kTransA) attrs.Set("trans_a", int64_t{1});
  if (kTransB) attrs.Set("trans_b", int64_t{1});
  ir::Value* y = l.Emit(op, OpKind::kMatMul, {a, b}, std::move(attrs));
  if (c && !IsZero(c)) {
    ir::Value* s = SplatScalar(c);
    y = l.Emit(op, OpKind::kAdd, {y, s ? s : c});
  }
  l.DefineResults(op, {Lowering::TensorBinding(y, op.loc)});
}

// Elementwise named ops: every ins operand has the outs type; outs is only the destination.
std::vector<ir::Value*> ElementwiseIns(Lowering& l, const ast::Operation& op, int n,
                                       bool float_only) {
  const ast::Type& out = l.CheckStructured(op, n);
  std::vector<ir::Value*> ins;
  for (int i = 0; i < n; ++i) {
    if (op.operand_types[i] != out)
      l.Fail(op.operands[i].loc,
             fmt::format("'{}' operand {} has type {}, but the outs type is {}", op.name, i,
                         ast::TypeText(op.operand_types[i]), ast::TypeText(out)));
    ins.push_back(l.Tensor(op.operands[i], op.operand_types[i]));
  }
  l.Tensor(op.operands[n], out, /*allow_empty=*/true);
  if (float_only && !IsFloat(out.dtype))
    l.Fail(op.loc, fmt::format("'{}' needs a float element type, got {}", op.name,
                               ast::ElementTypeText(out.dtype)));
  // i1 arithmetic wraps in MLIR (1 + 1 is 0); texel's bool does not (lower_generic.cpp).
  if (out.dtype == DType::kBool && op.name != "linalg.copy")
    l.Fail(op.loc, fmt::format("'{}' on i1 is not supported", op.name), ErrorCode::kUnsupported);
  return ins;
}

template <OpKind kOp>
void Unary(Lowering& l, const ast::Operation& op) {
  std::vector<ir::Value*> x = ElementwiseIns(l, op, 1, kOp != OpKind::kAbs && kOp != OpKind::kCopy);
  l.DefineResults(op, {Lowering::TensorBinding(l.Emit(op, kOp, x), op.loc)});
}

template <OpKind kOp>
void Binary(Lowering& l, const ast::Operation& op) {
  std::vector<ir::Value*> x = ElementwiseIns(l, op, 2, kOp == OpKind::kPow);
  l.DefineResults(op, {Lowering::TensorBinding(l.Emit(op, kOp, x), op.loc)});
}

// rsqrt(x) = 1 / sqrt(x)
void Rsqrt(Lowering& l, const ast::Operation& op) {
  std::vector<ir::Value*> x = ElementwiseIns(l, op, 1, true);
  ir::Value* s = l.Emit(op, OpKind::kSqrt, x);
  l.DefineResults(op, {Lowering::TensorBinding(l.Emit(op, OpKind::kReciprocal, {s}), op.loc)});
}

// square(x) = x * x
void Square(Lowering& l, const ast::Operation& op) {
  std::vector<ir::Value*> x = ElementwiseIns(l, op, 1, false);
  l.DefineResults(op, {Lowering::TensorBinding(l.Emit(op, OpKind::kMul, {x[0], x[0]}), op.loc)});
}

// linalg.transpose ins(%a) outs(%b) permutation = [..]: out dim i is in dim perm[i].
void Transpose(Lowering& l, const ast::Operation& op) {
  const ast::Type& out = l.CheckStructured(op, 1);
  ir::Value* x = l.Tensor(op.operands[0], op.operand_types[0]);
  l.Tensor(op.operands[1], out, /*allow_empty=*/true);
  std::vector<int64_t> perm = l.IntsAttr(op, "permutation");
  const Shape& xs = x->type.shape;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(xs.size());
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota)
    l.Fail(op.attrs.at("permutation").loc,
           fmt::format("permutation is not a permutation of {} dims", xs.size()));
  Shape want;
  for (int64_t p : perm) want.push_back(xs[p]);
  if (want != out.shape || x->type.dtype != out.dtype)
    l.Fail(op.loc, fmt::format("transposing {} gives {}, but the outs type is {}",
                               ast::TypeText(op.operand_types[0]),
                               ast::TypeText({ast::Type::Kind::kTensor, out.dtype, want}),
                               ast::TypeText(out)));
  l.DefineResults(
      op, {Lowering::TensorBinding(l.Emit(op, OpKind::kTranspose, {x}, {{"perm", perm}}), op.loc)});
}

// linalg.broadcast ins(%a) outs(%b) dimensions = [..]: the listed out dims are added.
void Broadcast(Lowering& l, const ast::Operation& op) {
  const ast::Type& out = l.CheckStructured(op, 1);
  ir::Value* x = l.Tensor(op.operands[0], op.operand_types[0]);
  l.Tensor(op.operands[1], out, /*allow_empty=*/true);
  std::vector<int64_t> dims = l.IntsAttr(op, "dimensions");
  Shape aligned, kept;
  for (size_t d = 0; d < out.shape.size(); ++d) {
    bool added = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
    aligned.push_back(added ? 1 : out.shape[d]);
    if (!added) kept.push_back(out.shape[d]);
  }
  if (kept != x->type.shape || x->type.dtype != out.dtype ||
      dims.size() + kept.size() != out.shape.size())
    l.Fail(op.loc, fmt::format("broadcasting {} along dimensions [{}] does not give {}",
                               ast::TypeText(op.operand_types[0]), fmt::join(dims, ", "),
                               ast::TypeText(out)));
  ir::Value* y = l.Emit(op, OpKind::kReshape, {x}, {{"shape", aligned}});
  y = l.Emit(op, OpKind::kExpand, {y}, {{"shape", out.shape}});
  l.DefineResults(op, {Lowering::TensorBinding(y, op.loc)});
}

}  // namespace

const std::map<std::string, LowerFn>& NamedOpLowerings() {
  static const std::map<std::string, LowerFn> kTable = {
      {"linalg.generic", LowerGeneric},
      {"linalg.fill", Fill},
      {"linalg.matmul", MatMul<false, false, false>},
      {"linalg.matmul_transpose_a", MatMul<false, true, false>},
      {"linalg.matmul_transpose_b", MatMul<false, false, true>},
      {"linalg.batch_matmul", MatMul<true, false, false>},
      {"linalg.batch_matmul_transpose_a", MatMul<true, true, false>},
      {"linalg.batch_matmul_transpose_b", MatMul<true, false, true>},
      {"linalg.add", Binary<OpKind::kAdd>},
      {"linalg.sub", Binary<OpKind::kSub>},
      {"linalg.mul", Binary<OpKind::kMul>},
      {"linalg.div", Binary<OpKind::kDiv>},
      {"linalg.max", Binary<OpKind::kMax>},
      {"linalg.min", Binary<OpKind::kMin>},
      {"linalg.powf", Binary<OpKind::kPow>},
      {"linalg.exp", Unary<OpKind::kExp>},
      {"linalg.log", Unary<OpKind::kLog>},
      {"linalg.abs", Unary<OpKind::kAbs>},
      {"linalg.negf", Unary<OpKind::kNeg>},
      {"linalg.sqrt", Unary<OpKind::kSqrt>},
      {"linalg.rsqrt", Rsqrt},
      {"linalg.square", Square},
      {"linalg.tanh", Unary<OpKind::kTanh>},
      {"linalg.erf", Unary<OpKind::kErf>},
      {"linalg.floor", Unary<OpKind::kFloor>},
      {"linalg.ceil", Unary<OpKind::kCeil>},
      {"linalg.reciprocal", Unary<OpKind::kReciprocal>},
      {"linalg.copy", Unary<OpKind::kCopy>},
      {"linalg.transpose", Transpose},
      {"linalg.broadcast", Broadcast},
  };
  return kTable;
}

}  // namespace texel::linalg_frontend
