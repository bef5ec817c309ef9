// fold-conv-affine: a per-output-channel constant scale or shift applied to a Conv's result
// (how BatchNormalization in inference form imports: Mul then Add) moves into the filters and
// the bias, so the convolution computes the final value itself:
//   Mul(Conv(x, W, b), s) -> Conv(x, W * s, b * s)
//   Add(Conv(x, W, b), t) -> Conv(x, W, b + t)
// Only when the Conv's result has no other use, W (and b) are constants, s and t are constants
// that vary along the channel axis alone (or not at all), and the type is f32 or f64.
#include <algorithm>
#include <functional>

#include "passes/pipeline.h"

namespace texel::passes {
namespace {

// The per-channel values of constant c broadcast against a [N, C, ...] result, or empty when c
// varies along any other axis (or has more dims than the result).
std::vector<double> PerChannel(const ir::Value* c, const Shape& out) {
  const Shape& s = c->type.shape;
  if (s.size() > out.size()) return {};
  int64_t channels = out[1];
  // s is right-aligned against out: the channel axis is s's dim 1 - (rank difference).
  ptrdiff_t channel_axis = 1 - static_cast<ptrdiff_t>(out.size() - s.size());
  int64_t along = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1) continue;
    if (static_cast<ptrdiff_t>(d) != channel_axis || s[d] != channels) return {};
    along = channels;
  }
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t i = 0; i < channels; ++i) v[i] = c->constant->GetDouble(along == 1 ? 0 : i);
  return v;
}

// A copy of constant v with element i of row r (rows of `row_elems`) transformed by f.
ConstTensorPtr Rescaled(const HostTensor& t, int64_t row_elems,
                        const std::function<double(double, int64_t)>& f) {
  auto out = std::make_shared<HostTensor>(t);
  for (int64_t i = 0; i < t.size(); ++i) {
    double v = f(t.GetDouble(i), i / row_elems);
    if (t.dtype == DType::kFloat64)
      out->data<double>()[i] = v;
    else
      out->data<float>()[i] = static_cast<float>(v);
  }
  return out;
}

}  // namespace

Stats FoldConvAffine(ir::Graph& g, const PassContext&) {
  std::vector<int> uses = g.UseCounts();
  int64_t scales = 0, shifts = 0;
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    if (n.dead || (n.op != ir::OpKind::kMul && n.op != ir::OpKind::kAdd)) continue;
    for (int side = 0; side < 2; ++side) {
      ir::Value* y = n.inputs[side];
      ir::Value* c = n.inputs[1 - side];
      ir::Node* conv = y->producer;
      if (!conv || conv->op != ir::OpKind::kConv || uses[y->id] != 1 || !c->constant) continue;
      DType t = y->type.dtype;
      if ((t != DType::kFloat32 && t != DType::kFloat64) || c->type.dtype != t ||
          n.outputs[0]->type != y->type)
        continue;
      ir::Value* w = conv->inputs[1];
      ir::Value* b = conv->inputs.size() > 2 ? conv->inputs[2] : nullptr;
      if (!w->constant || (b && !b->constant)) continue;
      std::vector<double> k = PerChannel(c, y->type.shape);
      if (k.empty()) continue;
      int64_t oc = y->type.shape[1];
      auto per = [&](double v, int64_t ch) {
        return n.op == ir::OpKind::kMul ? v * k[ch] : v + k[ch];
      };
      if (n.op == ir::OpKind::kMul) {
        conv->inputs[1] = g.AddConstant(
            w->name + "_scaled", Rescaled(*w->constant, w->type.bytes() / DTypeSize(t) / oc, per));
        ++scales;
      } else {
        ++shifts;
      }
      if (b || n.op == ir::OpKind::kAdd) {
        HostTensor zero(t, {oc});  // a missing bias is zeros
        const HostTensor& bias = b ? *b->constant : zero;
        ir::Value* nb = g.AddConstant(conv->name + "_bias", Rescaled(bias, 1, per));
        if (b)
          conv->inputs[2] = nb;
        else
          conv->inputs.push_back(nb);
      }
      g.ReplaceAllUses(n.outputs[0], y);
      y->name = n.outputs[0]->name;  // a graph output keeps its name
      uses[y->id] = uses[n.outputs[0]->id];
      n.dead = true;
      break;
    }
  }
  g.RemoveDeadNodes();
  return {{"scales-folded", scales}, {"shifts-folded", shifts}};
}

}  // namespace texel::passes
