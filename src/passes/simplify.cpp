// simplify: rewrites that never change results.
//   Copy(x)                -> x            (unless it defines a graph output)
//   Reshape(x) to x.shape  -> x            (unless it defines a graph output)
//   Reshape(Reshape(x))    -> Reshape(x)
//   Cast(x) to x's type    -> x            (exporters put f32 -> f32 Cast pairs around Softmax)
//   Pad(x) by 0, Slice(x) of all of x -> x (Swin pads windows by nothing and slices them whole)
//   Transpose(x)           -> Reshape(x)   (when it moves only dims of size 1: same element order,
//                                           and a Reshape is a view, not a kernel)
//   MatMul(Transpose(x))   -> MatMul[trans_a](x) (a transpose of the last two axes, either
//                             operand: the product reads the operand transposed)
//   Add(Reshape(x), y)     -> Add(x, y)    (any binary elementwise op, either operand: when the
//                                           Reshape only puts dims of size 1 in front, which
//                                           broadcasting does too, so the result is the same;
//                                           a residual Add then fuses into the GEMM before it)
#include <algorithm>

#include "passes/pipeline.h"

namespace texel::passes {
namespace {

// Whether n is a Transpose that swaps the last two axes and keeps the others.
bool SwapsLastTwo(const ir::Node* n) {
  if (!n || n->op != ir::OpKind::kTranspose) return false;
  const std::vector<int64_t>& perm = n->attrs.Ints("perm");
  size_t r = perm.size();
  if (r < 2) return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return perm[r - 2] == static_cast<int64_t>(r - 1) && perm[r - 1] == static_cast<int64_t>(r - 2);
}

// Whether Transpose n keeps the order of the dims of size > 1 (it only moves dims of size 1).
bool MovesOnlyUnitDims(const ir::Node& n) {
  const Shape& in = n.inputs[0]->type.shape;
  int64_t last = -1;
  for (int64_t p : n.attrs.Ints("perm")) {
    if (in[p] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

// Whether Reshape n only puts dims of size 1 in front of its input's shape.
bool OnlyAddsLeadingUnitDims(const ir::Node& n) {
  const Shape& in = n.inputs[0]->type.shape;
  const Shape& out = n.outputs[0]->type.shape;
  if (out.size() < in.size() || !std::equal(in.begin(), in.end(), out.end() - in.size()))
    return false;
  return std::all_of(out.begin(), out.end() - in.size(), [](int64_t d) { return d == 1; });
}

// Whether Pad n pads by nothing, or Slice n takes every element in order.
bool IsWhole(const ir::Node& n) {
  if (n.op == ir::OpKind::kPad) {
    const std::vector<int64_t>& pads = n.attrs.Ints("pads");
    return std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
  }
  const std::vector<int64_t>& starts = n.attrs.Ints("starts");
  const std::vector<int64_t>& steps = n.attrs.Ints("steps");
  return std::all_of(starts.begin(), starts.end(), [](int64_t s) { return s == 0; }) &&
         std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s == 1; });
}

}  // namespace

Stats Simplify(ir::Graph& g, const PassContext&) {
  int64_t removed = 0, merged = 0, transposes = 0, unit_transposes = 0, unit_reshapes = 0;
  auto is_output = [&](const ir::Value* v) {
    for (const ir::Value* o : g.outputs())
      if (o == v) return true;
    return false;
  };
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    ir::Value* out = n.outputs[0];
    if (n.op == ir::OpKind::kReshape && n.inputs[0]->producer &&
        n.inputs[0]->producer->op == ir::OpKind::kReshape) {
      n.inputs[0] = n.inputs[0]->producer->inputs[0];
      ++merged;
    }
    if (n.op == ir::OpKind::kTranspose && !n.inputs[0]->is_image() && MovesOnlyUnitDims(n)) {
      n.op = ir::OpKind::kReshape;
      n.attrs = {{"shape", std::vector<int64_t>(out->type.shape.begin(), out->type.shape.end())}};
      ++unit_transposes;
      if (n.inputs[0]->producer && n.inputs[0]->producer->op == ir::OpKind::kReshape) {
        n.inputs[0] = n.inputs[0]->producer->inputs[0];
        ++merged;
      }
    }
    for (int i = 0; i < 2 && n.op == ir::OpKind::kMatMul; ++i) {
      const ir::Node* t = n.inputs[i]->producer;
      if (!SwapsLastTwo(t)) continue;
      const char* flag = i == 0 ? "trans_a" : "trans_b";
      n.attrs.Set(flag, 1 - n.attrs.Int(flag, 0));
      n.inputs[i] = t->inputs[0];
      ++transposes;
    }
    for (int i = 0; i < 2 && n.info().cls == ir::OpClass::kBinary; ++i) {
      const ir::Node* r = n.inputs[i]->producer;
      if (!r || r->op != ir::OpKind::kReshape || !OnlyAddsLeadingUnitDims(*r)) continue;
      Shape other = n.inputs[1 - i]->type.shape;
      if (BroadcastShapes(r->inputs[0]->type.shape, other) != out->type.shape) continue;
      n.inputs[i] = r->inputs[0];
      ++unit_reshapes;
    }
    bool identity = n.op == ir::OpKind::kCopy ||
                    (n.op == ir::OpKind::kCast && n.inputs[0]->type == out->type) ||
                    ((n.op == ir::OpKind::kPad || n.op == ir::OpKind::kSlice) &&
                     n.inputs[0]->type == out->type && !n.inputs[0]->is_image() && IsWhole(n)) ||
                    (n.op == ir::OpKind::kReshape && n.inputs[0]->type == out->type);
    if (identity && !is_output(out)) {
      g.ReplaceAllUses(out, n.inputs[0]);
      n.dead = true;
      ++removed;
    }
  }
  g.RemoveDeadNodes();
  return {{"identities-removed", removed},
          {"reshapes-merged", merged},
          {"transposes-into-matmul", transposes},
          {"transposes-to-reshapes", unit_transposes},
          {"broadcast-reshapes-dropped", unit_reshapes}};
}

}  // namespace texel::passes
