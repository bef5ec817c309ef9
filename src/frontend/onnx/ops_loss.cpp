// Importers for the loss ops, composed of core ops:
//   NLL:  loss[n, d...] = -input[n, t, d...] * w[t], t = target[n, d...]; 0 where t is ignored
//         reduction: none | sum(loss) | mean = sum(loss) / sum(w[t] over non-ignored)
//   SoftmaxCrossEntropyLoss = NLL(LogSoftmax(scores, axis=1), labels), with log_prob as output 1.
#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

ir::Value* NllLoss(NodeImporter& n, ir::Value* input, ir::Value* target, ir::Value* weight) {
  const Shape& xs = input->type.shape;
  if (xs.size() < 2) n.Invalid("input must have rank >= 2 ([N, C, ...])");
  Shape ts = xs;
  ts.erase(ts.begin() + 1);
  if (target->type.shape != ts)
    n.Invalid(fmt::format("target shape {} does not match input {}", ShapeStr(target->type.shape),
                          ShapeStr(xs)));
  std::string reduction = n.AttrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    n.Invalid(fmt::format("unknown reduction '{}'", reduction));
  DType ft = input->type.dtype;
  ir::Value* t = target->type.dtype == DType::kInt64
                     ? target
                     : n.Emit(OpKind::kCast, {target}, {{"to", int64_t(DType::kInt64)}});
  ir::Value* valid = nullptr;
  if (n.HasAttr("ignore_index")) {
    ir::Value* ii = n.ConstScalar(DType::kInt64, static_cast<double>(n.AttrInt("ignore_index")));
    valid = n.Emit(OpKind::kNot, {n.Emit(OpKind::kEqual, {t, ii})});
    t = n.Emit(OpKind::kWhere, {valid, t, n.ConstScalar(DType::kInt64, 0)});
  }
  Shape t1 = ts;
  t1.insert(t1.begin() + 1, 1);
  ir::Value* picked = n.Reshape(
      n.Emit(OpKind::kGatherElements, {input, n.Reshape(t, t1)}, {{"axis", int64_t{1}}}), ts);
  ir::Value* w = weight ? n.Emit(OpKind::kGather, {weight, t}, {{"axis", int64_t{0}}}) : nullptr;
  if (valid) {
    ir::Value* mask = n.Emit(OpKind::kCast, {valid}, {{"to", int64_t(ft)}});
    w = w ? n.Emit(OpKind::kMul, {w, mask}) : mask;
  }
  ir::Value* loss = n.Emit(OpKind::kNeg, {picked});
  if (w) loss = n.Emit(OpKind::kMul, {loss, w});
  if (reduction == "none") return loss;
  std::vector<int64_t> all;
  for (size_t d = 0; d < ts.size(); ++d) all.push_back(static_cast<int64_t>(d));
  ir::Attrs sum_all = {{"axes", all}, {"keepdims", int64_t{0}}};
  ir::Value* total = n.Emit(OpKind::kReduceSum, {loss}, sum_all);
  if (reduction == "sum") return total;
  if (!w)
    return n.Emit(OpKind::kDiv, {total, n.ConstScalar(ft, static_cast<double>(NumElements(ts)))});
  return n.Emit(OpKind::kDiv, {total, n.Emit(OpKind::kReduceSum, {w}, sum_all)});
}

void NegativeLogLikelihoodLoss(NodeImporter& n) {
  n.SetOutput(0, NllLoss(n, n.RequiredInput(0), n.RequiredInput(1), n.Input(2)));
}

void SoftmaxCrossEntropyLoss(NodeImporter& n) {
  ir::Value* scores = n.RequiredInput(0);
  if (scores->type.shape.size() < 2) n.Invalid("scores must have rank >= 2 ([N, C, ...])");
  ir::Value* log_prob = n.Emit(OpKind::kLogSoftmax, {scores}, {{"axis", int64_t{1}}});
  n.SetOutput(0, NllLoss(n, log_prob, n.RequiredInput(1), n.Input(2)));
  n.SetOutput(1, log_prob);
}

}  // namespace

void RegisterLossOps(Registry& r) {
  r["NegativeLogLikelihoodLoss"] = NegativeLogLikelihoodLoss;
  r["SoftmaxCrossEntropyLoss"] = SoftmaxCrossEntropyLoss;
}

}  // namespace texel::onnx_frontend
