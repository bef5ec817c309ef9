// normalize: finds layer and RMS normalisation written out in elementwise ops and reductions
// (ONNX LayerNormalization as the importer decomposes it, exports before opset 17, RMSNorm,
// GroupNorm's per-group form) and makes each one LayerNorm node, one kernel that reads the row
// once per statistic and writes it once. The scale and bias Mul/Add that follow join it as its
// epilogue (fuse). One rule per row, x over a trailing block of axes A (keepdims):
//   m = ReduceMean(x, A); d = Sub(x, m)                               centring (LayerNorm only)
//   v = ReduceMean(Mul(d, d) | Pow(d, 2), A)                          variance (d = x for RMS)
//   s = Sqrt(Add(v, eps))                                             eps a scalar constant
//   y = Div(d, s) | Mul(d, Reciprocal(s))      ->  y = LayerNorm(x){axis = A[0], eps, rms}
// Every intermediate value must be used only inside the pattern; anything else stays as it is.
#include <map>

#include "ir/index_map.h"
#include "passes/pattern.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

using ir::OpKind;

// The first axis of a trailing block of reduced axes kept as size-1 dims, else -1.
int64_t TrailingAxis(const ir::Node& r) {
  if (r.op != OpKind::kReduceMean || r.attrs.Int("keepdims") != 1) return -1;
  const std::vector<int64_t>& axes = r.attrs.Ints("axes");
  int64_t rank = static_cast<int64_t>(r.inputs[0]->type.shape.size());
  if (axes.empty()) return -1;
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != rank - static_cast<int64_t>(axes.size() - k)) return -1;
  return axes[0];
}

// The single node reading v (and only once-per-node), when it has op `op`.
ir::Node* SoleUser(const UseMap& uses, const ir::Value* v, OpKind op) {
  const auto& users = uses.Users(v);
  if (uses.IsOutput(v) || users.size() != 1 || users[0]->op != op) return nullptr;
  return users[0];
}

struct Match {
  ir::Node* last;  // the node whose result the LayerNorm replaces
  ir::Value* x;
  int64_t axis;
  double eps;
  bool rms;
};

// Matches the pattern whose variance reduction is `var`.
std::optional<Match> MatchAt(const UseMap& uses, ir::Node& var) {
  int64_t axis = TrailingAxis(var);
  if (axis < 0 || !IsFloat(var.inputs[0]->type.dtype)) return std::nullopt;
  ir::Node* sq = var.inputs[0]->producer;
  if (!sq || !uses.OnlyUsedBy(sq->outputs[0], &var)) return std::nullopt;
  ir::Value* d = sq->inputs[0];
  bool squares = (sq->op == OpKind::kMul && sq->inputs[1] == d) ||
                 (sq->op == OpKind::kPow && ScalarConstant(sq->inputs[1]) == 2.0);
  if (!squares) return std::nullopt;
  ir::Node* add = SoleUser(uses, var.outputs[0], OpKind::kAdd);
  if (!add) return std::nullopt;
  std::optional<double> eps = ScalarConstant(OtherInput(*add, var.outputs[0]));
  ir::Node* sqrt = SoleUser(uses, add->outputs[0], OpKind::kSqrt);
  if (!eps || !sqrt) return std::nullopt;
  // y = d / s, or d * (1 / s) in either operand order.
  ir::Node* last = nullptr;
  const auto& s_users = uses.Users(sqrt->outputs[0]);
  if (uses.IsOutput(sqrt->outputs[0]) || s_users.size() != 1) return std::nullopt;
  ir::Node* u = s_users[0];
  if (u->op == OpKind::kDiv && u->inputs[0] == d && u->inputs[1] == sqrt->outputs[0]) {
    last = u;
  } else if (u->op == OpKind::kReciprocal) {
    ir::Node* mul = SoleUser(uses, u->outputs[0], OpKind::kMul);
    if (mul && OtherInput(*mul, u->outputs[0]) == d) last = mul;
  }
  if (!last || last->outputs[0]->type != d->type) return std::nullopt;
  // LayerNorm when d = x - mean(x) and d is read only by the square and the normalisation.
  ir::Node* sub = d->producer;
  if (sub && sub->op == OpKind::kSub && !uses.IsOutput(d)) {
    ir::Node* mean = sub->inputs[1]->producer;
    bool only_here = true;
    for (const ir::Node* r : uses.Users(d)) only_here &= r == sq || r == last;
    if (only_here && mean && TrailingAxis(*mean) == axis && mean->inputs[0] == sub->inputs[0] &&
        uses.OnlyUsedBy(sub->inputs[1], sub))
      return Match{last, sub->inputs[0], axis, *eps, false};
  }
  return Match{last, d, axis, *eps, true};
}

}  // namespace

Stats MatchNorm(ir::Graph& g, const PassContext&) {
  UseMap uses(g);
  std::vector<Match> matches;
  for (const auto& node : g.nodes())
    if (auto m = MatchAt(uses, *node)) matches.push_back(*m);
  int64_t layer = 0, rms = 0;
  std::map<const ir::Value*, ir::Value*> replaced;  // a later match may read an earlier's result
  for (const Match& m : matches) {
    ir::Value* x = replaced.count(m.x) ? replaced[m.x] : m.x;
    ir::Attrs attrs = {{"axis", m.axis}, {"epsilon", m.eps}, {"rms", int64_t{m.rms}}};
    // Read x through the Transpose (ConvNeXt: NCHW -> NHWC) or other views producing it when
    // its rows and the normalised elements each have one stride.
    ir::Value* source = nullptr;
    std::vector<const ir::Node*> through;
    ir::IndexMap view = ir::ViewThroughMovement(x, &source, &through);
    const Shape& xs = x->type.shape;
    int64_t rows = NumElements(Shape(xs.begin(), xs.begin() + m.axis));
    if (source != x && !source->is_image() &&
        view.Reshaped({rows, NumElements(xs) / std::max<int64_t>(rows, 1)})) {
      view.Store(attrs, "x");
      x = source;
    }
    ir::Node* n = g.InsertNodeAfter(m.last, OpKind::kLayerNorm, {x}, attrs, m.last->name);
    ReplaceValue(g, m.last->outputs[0], n->outputs[0]);
    replaced[m.last->outputs[0]] = n->outputs[0];
    ++(m.rms ? rms : layer);
  }
  g.RemoveDeadNodes();
  return {{"layer-norms", layer}, {"rms-norms", rms}};
}

}  // namespace texel::passes
