// attention: finds scaled dot-product attention and makes it one Attention node (kernel:
// codegen/opencl/generate_attention.cpp), so that the scores [..., Sq, Sk] never reach memory.
// The pattern, after `simplify` (transposes of K folded into the MatMul, identity Casts gone):
//   y = MatMul(Softmax(chain(MatMul(q, kᵀ)), axis = last), v)
// where chain is any sequence of the rows below, each result read only by the next. The rows
// say what each node found between Q·Kᵀ and Softmax adds to softmax(scale · q·kᵀ + Σ bias):
//   Mul(s, c), Mul(c, s)   scale *= c              c a scalar constant (1/√d in any form)
//   Div(s, c)              scale /= c
//   Add(s, b), Add(b, s)   biases += b             b broadcasts to the scores' shape
//   Where(m, s, f)         biases += Where(m, 0, f)    f a scalar <= -1e30 or -inf: then s + f
//   Where(m, f, s)         biases += Where(m, f, 0)    rounds to f in f32 for any finite score,
//                                                      so both give exp(f - max) = 0, or both a
//                                                      uniform row when a row is fully masked
//   Cast(s) to its type    nothing
//   Reshape(s)             nothing         only leading dims of size 1 added or removed: the
//                                          same scores, and a bias beside it broadcasts the
//                                          same way against the scores without those dims
// A scale after a bias would scale the bias too: no match. A scalar Mul/Div on q or k alone
// (read only by the product) folds into the scale the same way. A constant mask that is
// exactly causal (key j allowed iff j <= i + Sk - Sq) becomes `causal` instead of a bias, and
// its kernel skips the tiles above the diagonal.
// Operands: q, k and v are read through the Transpose/Slice/Reshape nodes producing them
// (heads split from a projection, windows) as views (ir/index_map.h); a Transpose reading the
// result (heads merged) is written through a view too. Anything else stays as it was.
#include <algorithm>
#include <optional>

#include "ir/host_eval.h"
#include "ir/index_map.h"
#include "passes/pattern.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

using ir::IndexMap;
using ir::OpKind;

// What one node between Q·Kᵀ and Softmax contributes.
struct Step {
  double scale = 1;           // a factor, or
  ir::Value* bias = nullptr;  // an additive bias, or
  ir::Value* cond = nullptr;  // a mask: Where(cond, 0, fill), or Where(cond, fill, 0)
  double fill = 0;            //   when keep_when_true is false
  bool keep_when_true = true;
};

constexpr double kMaskFill = -1e30;  // fills at or below this are "masked out"

// Walks from score value s (read by `reader`) up to the Q·Kᵀ MatMul, appending steps in the
// order found (Softmax first).
bool WalkScores(const UseMap& uses, ir::Value* s, const ir::Node* reader, const Shape& shape,
                std::vector<Step>* steps, ir::Node** qk) {
  ir::Node* p = s->producer;
  if (!p || !SameLayout(s->type.shape, shape) || !uses.OnlyUsedBy(s, reader)) return false;
  size_t mark = steps->size();
  auto through = [&](ir::Value* next, Step step) {
    steps->push_back(step);
    if (WalkScores(uses, next, p, shape, steps, qk)) return true;
    steps->resize(mark);
    return false;
  };
  switch (p->op) {
    case OpKind::kMatMul: *qk = p; return p->attrs.Int("trans_a", 0) == 0;
    case OpKind::kCast: return p->inputs[0]->type == s->type && through(p->inputs[0], {});
    case OpKind::kReshape:  // leading dims of size 1 only (Swin adds its mask in 5-D)
      return through(p->inputs[0], {});
    case OpKind::kMul:
      for (int i = 0; i < 2; ++i)
        if (auto c = ScalarConstant(p->inputs[1 - i])) return through(p->inputs[i], {.scale = *c});
      return false;
    case OpKind::kDiv:
      if (auto c = ScalarConstant(p->inputs[1])) return through(p->inputs[0], {.scale = 1 / *c});
      return false;
    case OpKind::kAdd:
      for (int i = 0; i < 2; ++i)
        if (through(p->inputs[i], {.bias = p->inputs[1 - i]})) return true;
      return false;
    case OpKind::kWhere:
      for (int i = 1; i <= 2; ++i) {
        auto fill = ScalarConstant(p->inputs[3 - i]);
        if (fill && *fill <= kMaskFill &&
            through(p->inputs[i], {.cond = p->inputs[0], .fill = *fill, .keep_when_true = i == 1}))
          return true;
      }
      return false;
    default: return false;
  }
}

// Whether a constant mask (true: keep) is exactly causal over its last two dims [sq, sk].
bool IsCausal(const HostTensor& cond, bool keep_when_true, int64_t sq, int64_t sk) {
  const Shape& s = cond.shape;
  if (s.size() < 2 || s[s.size() - 2] != sq || s.back() != sk) return false;
  for (int64_t e = 0; e < cond.size(); ++e) {
    int64_t j = e % sk, i = (e / sk) % sq;
    bool keep = (cond.GetDouble(e) != 0) == keep_when_true;
    if (keep != (j <= i + sk - sq)) return false;
  }
  return true;
}

// Pads a view with leading dims of size 1 up to rank r.
IndexMap ToRank(const IndexMap& m, size_t r) {
  Shape s(r - m.shape.size(), 1);
  s.insert(s.end(), m.shape.begin(), m.shape.end());
  return *m.Reshaped(s);
}

IndexMap SwapLastTwo(const IndexMap& m) {
  std::vector<int64_t> perm(m.shape.size());
  for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
  std::swap(perm[perm.size() - 2], perm.back());
  return m.Permuted(perm);
}

// Folds scalar constant Mul/Div nodes read only by `reader` off operand *v into *scale (the
// graph is left as it is: the nodes fall away when the Attention node replaces the product).
void FoldOperandScale(const UseMap& uses, ir::Value** v, const ir::Node* reader, double* scale) {
  for (ir::Node* p = (*v)->producer; p && uses.OnlyUsedBy(*v, reader); p = (*v)->producer) {
    ir::Value* operand = nullptr;
    for (int i = 0; i < 2 && !operand; ++i) {
      bool divides = p->op == OpKind::kDiv && i == 0;
      if ((p->op != OpKind::kMul && !divides) || p->inputs[i]->type != (*v)->type) continue;
      if (auto c = ScalarConstant(p->inputs[1 - i])) {
        *scale = divides ? *scale / *c : *scale * *c;
        operand = p->inputs[i];
      }
    }
    if (!operand) return;
    reader = p;
    *v = operand;
  }
}

// Mask step s (Where(m, 0, f), or Where(m, f, 0)) as an additive bias of the mask's shape, in
// dtype t: a constant when the mask is one, else a Where node (inserted after *insert_after,
// which it then becomes) computing it once per run.
ir::Value* MaskAsBias(ir::Graph& g, const Step& s, DType t, const std::string& name,
                      const ir::Node** insert_after) {
  auto scalar = [&](double x) {
    auto c = std::make_shared<HostTensor>(t, Shape{});
    c->SetDouble(0, x);
    return g.AddConstant(g.UniqueName(name), c);
  };
  ir::Value* zero = scalar(0);
  ir::Value* fill = scalar(s.fill);
  std::vector<ir::Value*> args = {s.cond, s.keep_when_true ? zero : fill,
                                  s.keep_when_true ? fill : zero};
  if (s.cond->is_constant())
    if (auto c = ir::EvaluateOnHost(
            OpKind::kWhere, {},
            {args[0]->constant.get(), args[1]->constant.get(), args[2]->constant.get()},
            {t, s.cond->type.shape}))
      return g.AddConstant(g.UniqueName(name), std::make_shared<HostTensor>(std::move(*c)));
  ir::Node* where = g.InsertNodeAfter(*insert_after, OpKind::kWhere, args, {}, name);
  *insert_after = where;
  return where->outputs[0];
}

// The value the attention's result replaces: `result`, or the Transpose that alone reads it (the
// heads merged back), whose layout then goes into attrs (the "o" view and out_shape).
ir::Value* ThroughTranspose(const UseMap& uses, ir::Value* result, ir::Attrs* attrs) {
  const auto& readers = uses.Users(result);
  if (uses.IsOutput(result) || readers.size() != 1 || readers[0]->op != OpKind::kTranspose)
    return result;
  const ir::Node* tr = readers[0];
  const Shape& ts = tr->outputs[0]->type.shape;
  size_t r = ts.size();
  std::vector<int64_t> st = Strides(ts), os(r);
  const std::vector<int64_t>& perm = tr->attrs.Ints("perm");
  for (size_t d = 0; d < r; ++d) os[perm[d]] = st[d];
  IndexMap om{result->type.shape, os, 0};
  om.Store(*attrs, "o");
  attrs->Set("out_shape", std::vector<int64_t>(ts.begin(), ts.end()));
  return tr->outputs[0];
}

constexpr int64_t kMaxHeadDim = 256;  // the kernel keeps a row of q and of the output in registers

// Matches the attention whose Softmax is `sm`; on success rewrites the graph.
bool MatchAt(ir::Graph& g, const UseMap& uses, ir::Node& sm) {
  ir::Value* probs = sm.outputs[0];
  const Shape& shape = probs->type.shape;  // the scores [..., Sq, Sk]
  size_t r = shape.size();
  DType t = probs->type.dtype;
  if (sm.op != OpKind::kSoftmax || r < 2 || sm.attrs.Int("axis") != static_cast<int64_t>(r) - 1 ||
      (t != DType::kFloat32 && t != DType::kFloat16))
    return false;
  const auto& readers = uses.Users(probs);
  if (readers.size() != 1 || uses.IsOutput(probs)) return false;
  ir::Node* pv = readers[0];
  if (pv->op != OpKind::kMatMul || pv->inputs[0] != probs || pv->inputs[1] == probs ||
      pv->attrs.Int("trans_a", 0) != 0)
    return false;
  std::vector<Step> steps;
  ir::Node* qk = nullptr;
  if (!WalkScores(uses, sm.inputs[0], &sm, shape, &steps, &qk)) return false;
  std::reverse(steps.begin(), steps.end());  // from Q·Kᵀ towards Softmax
  double scale = 1;
  bool seen_bias = false;
  for (const Step& s : steps) {
    if (s.scale != 1 && seen_bias) return false;
    scale *= s.scale;
    seen_bias |= s.bias || s.cond;
  }
  ir::Value* q = qk->inputs[0];
  ir::Value* kt = qk->inputs[1];
  FoldOperandScale(uses, &q, qk, &scale);
  FoldOperandScale(uses, &kt, qk, &scale);
  ir::Value* v = pv->inputs[1];
  if (q->type.dtype != t || kt->type.dtype != t || v->type.dtype != t) return false;

  // Views of the operands: q [..., Sq, D], k [..., Sk, D], v [..., Sk, Dv].
  ir::Value *q_src, *k_src, *v_src;
  std::vector<const ir::Node*> folded;
  IndexMap qm = ir::ViewThroughMovement(q, &q_src, &folded);
  IndexMap km = ir::ViewThroughMovement(kt, &k_src, &folded);
  if (qk->attrs.Int("trans_b", 0) == 0) km = SwapLastTwo(km);
  IndexMap vm = ir::ViewThroughMovement(v, &v_src, &folded);
  if (pv->attrs.Int("trans_b", 0) != 0) vm = SwapLastTwo(vm);
  if (qm.shape.size() > r || km.shape.size() > r || vm.shape.size() > r) return false;
  qm = ToRank(qm, r);
  km = ToRank(km, r);
  vm = ToRank(vm, r);
  if (qm.shape.back() > kMaxHeadDim || vm.shape.back() > kMaxHeadDim) return false;

  // Biases; a constant causal mask becomes the causal flag.
  int64_t sq = shape[r - 2], sk = shape[r - 1];
  std::vector<ir::Value*> inputs = {q_src, k_src, v_src};
  int64_t causal = 0;
  const ir::Node* insert_after = pv;
  // A bias found beside a Reshape may have more (leading, size 1) dims than the scores.
  auto fitted = [&](ir::Value* b) -> ir::Value* {
    if (b->type.shape.size() <= r) return b;
    Shape s = StripLeadingOnes(b->type.shape);
    if (b->is_constant()) {
      auto c = std::make_shared<HostTensor>(*b->constant);
      c->shape = s;
      return g.AddConstant(g.UniqueName(b->name), c);
    }
    ir::Node* n = g.InsertNodeAfter(insert_after, OpKind::kReshape, {b},
                                    {{"shape", std::vector<int64_t>(s.begin(), s.end())}},
                                    b->name + "_fitted");
    insert_after = n;
    return n->outputs[0];
  };
  for (const Step& s : steps) {
    if (s.bias) inputs.push_back(fitted(s.bias));
    if (!s.cond) continue;
    if (s.cond->is_constant() && !causal && IsCausal(*s.cond->constant, s.keep_when_true, sq, sk)) {
      causal = 1;
      continue;
    }
    inputs.push_back(fitted(MaskAsBias(g, s, t, sm.name + "_mask", &insert_after)));
  }

  // The result, written through a Transpose that merges heads when there is one.
  ir::Attrs attrs = {{"scale", scale}, {"causal", causal}};
  qm.Store(attrs, "q");
  km.Store(attrs, "k");
  vm.Store(attrs, "v");
  ir::Value* result = ThroughTranspose(uses, pv->outputs[0], &attrs);
  ir::Node* att =
      g.InsertNodeAfter(insert_after, OpKind::kAttention, std::move(inputs), attrs, sm.name);
  ReplaceValue(g, result, att->outputs[0]);
  return true;
}

}  // namespace

Stats MatchAttention(ir::Graph& g, const PassContext&) {
  std::vector<ir::Node*> softmaxes;
  for (const auto& n : g.nodes())
    if (n->op == OpKind::kSoftmax) softmaxes.push_back(n.get());
  int64_t matched = 0;
  std::optional<UseMap> uses;
  for (ir::Node* sm : softmaxes) {
    if (!uses) uses.emplace(g);
    // A rewrite changes uses; a failed match changes nothing.
    if (MatchAt(g, *uses, *sm)) ++matched, uses.reset();
  }
  g.RemoveDeadNodes();
  return {{"attentions", matched}};
}

}  // namespace texel::passes
