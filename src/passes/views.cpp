// views: Concat and elementwise ops read their operands through the Transpose, Slice, Reshape
// and constant-index Gather nodes producing them (ir/index_map.h) instead of waiting for those
// to be copied: the operand becomes their source and the view is stored as in<k>_shape,
// in<k>_strides, in<k>_offset. Swin's cyclic shift (torch.roll as Concat(Slice(x, s:),
// Slice(x, :s))) is then one kernel instead of three, and ConvNeXt's residual Add reads the
// block's channels-last result through its permutation. Movement nodes left without readers
// disappear. An elementwise op that reads through a view starts its own fusion group (fuse).
#include <fmt/format.h>

#include "ir/index_map.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

bool ReadsOperandsThroughViews(const ir::Node& n) {
  bool elementwise = ir::IsElementwiseClass(n.info().cls);
  // Integer Pow is a loop over its operands' own strides (generate_pointwise.cpp).
  if (n.op == ir::OpKind::kPow && !IsFloat(n.inputs[0]->type.dtype)) return false;
  return (n.op == ir::OpKind::kConcat || elementwise) && !n.outputs[0]->is_image();
}

}  // namespace

Stats Views(ir::Graph& g, const PassContext&) {
  int64_t folded = 0;
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    if (!ReadsOperandsThroughViews(n)) continue;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      ir::Value* source = nullptr;
      std::vector<const ir::Node*> through;
      ir::IndexMap view = ir::ViewThroughMovement(n.inputs[k], &source, &through);
      if (source == n.inputs[k] || source->is_image()) continue;
      view.Store(n.attrs, fmt::format("in{}", k));
      n.inputs[k] = source;
      folded += static_cast<int64_t>(through.size());
    }
  }
  g.RemoveDeadNodes();
  return {{"movement-read-through", folded}};
}

}  // namespace texel::passes
