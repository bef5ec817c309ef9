// fuse: groups a node with the chain of elementwise nodes that consumes its result, so that the
// group runs as one kernel and the values in between never reach memory (bias, folded
// BatchNorm, activations, residual adds and scales after a conv; long elementwise chains).
// A node N joins the group of the producer P of one of its inputs when
//   - N is elementwise (unary, binary, ternary) with P's output shape,
//   - P is an anchor (Conv, ConvTranspose, MatMul, pooling, reduction, LayerNorm: their kernels
//     apply an epilogue)
//     or elementwise, and P's result is used once, by N, and is not a graph output,
//   - both run on one backend that fuses epilogues (an unassigned node counts as native),
//   - for an anchor's group, every output keeps the anchor's float type.
// Groups are recorded in Node::group; lowering makes one kernel per group (backends/lower.cpp).
#include "backends/backend.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

using ir::OpClass;
using ir::OpKind;

bool IsElementwise(const ir::Node& n) {
  OpClass c = n.info().cls;
  bool elementwise = c == OpClass::kUnary || c == OpClass::kBinary || c == OpClass::kTernary;
  // Integer Pow is a loop, not an expression.
  return elementwise && !(n.op == OpKind::kPow && !IsFloat(n.inputs[0]->type.dtype));
}

bool IsAnchor(const ir::Node& n) {
  OpClass c = n.info().cls;
  return (c == OpClass::kConv || c == OpClass::kMatMul ||
          (c == OpClass::kPool && n.op != OpKind::kMaxPoolIndices) ||
          (c == OpClass::kReduce && n.op != OpKind::kArgMax && n.op != OpKind::kArgMin) ||
          n.op == OpKind::kLayerNorm) &&
         IsFloat(n.outputs[0]->type.dtype);
}

bool BackendFuses(const ir::Node& n) {
  const backends::Backend* be = backends::FindBackend(n.backend.empty() ? "native" : n.backend);
  return be && be->FusesEpilogues();
}

}  // namespace

Stats Fuse(ir::Graph& g, const PassContext&) {
  std::vector<int> uses = g.UseCounts();
  std::vector<const ir::Node*> root;  // group id -> the group's first node
  int64_t fused = 0;
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    if (!IsElementwise(n) || !BackendFuses(n)) continue;
    for (ir::Value* in : n.inputs) {
      ir::Node* p = in->producer;
      if (!p || uses[in->id] != 1 || in->type.shape != n.outputs[0]->type.shape) continue;
      if (p->backend != n.backend || !(IsAnchor(*p) || IsElementwise(*p))) continue;
      const ir::Node* first = p->group >= 0 ? root[p->group] : p;
      if (IsAnchor(*first) && n.outputs[0]->type.dtype != first->outputs[0]->type.dtype) continue;
      if (p->group < 0) {
        p->group = static_cast<int>(root.size());
        root.push_back(p);
      }
      n.group = p->group;
      ++fused;
      break;
    }
  }
  return {{"groups", static_cast<int64_t>(root.size())}, {"nodes-fused", fused}};
}

}  // namespace texel::passes
