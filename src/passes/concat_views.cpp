// concat-views: a Concat reads each operand through the Slice, Transpose, Reshape and
// constant-index Gather nodes producing it (ir/index_map.h) instead of waiting for them to be
// copied: the operand becomes their source and the view is stored as in<k>_shape,
// in<k>_strides, in<k>_offset. A cyclic shift (Swin's torch.roll: Concat(Slice(x, s:),
// Slice(x, :s))) is then one kernel instead of three. Movement nodes left without readers
// disappear.
#include <fmt/format.h>

#include "ir/index_map.h"
#include "passes/pipeline.h"

namespace texel::passes {

Stats ConcatViews(ir::Graph& g, const PassContext&) {
  int64_t folded = 0;
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    if (n.op != ir::OpKind::kConcat || n.outputs[0]->is_image()) continue;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const ir::Value* source = nullptr;
      std::vector<const ir::Node*> through;
      ir::IndexMap view = ir::ViewThroughMovement(n.inputs[k], &source, &through);
      if (source == n.inputs[k] || source->is_image()) continue;
      view.Store(n.attrs, fmt::format("in{}", k));
      n.inputs[k] = const_cast<ir::Value*>(source);
      folded += static_cast<int64_t>(through.size());
    }
  }
  g.RemoveDeadNodes();
  return {{"movement-read-through", folded}};
}

}  // namespace texel::passes
