// simplify: rewrites that never change results.
//   Copy(x)                -> x            (unless it defines a graph output)
//   Reshape(x) to x.shape  -> x            (unless it defines a graph output)
//   Reshape(Reshape(x))    -> Reshape(x)
#include "passes/pipeline.h"

namespace texel::passes {

Stats Simplify(ir::Graph& g, const PassContext&) {
  int64_t removed = 0, merged = 0;
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
    bool identity = n.op == ir::OpKind::kCopy ||
                    (n.op == ir::OpKind::kReshape && n.inputs[0]->type == out->type);
    if (identity && !is_output(out)) {
      g.ReplaceAllUses(out, n.inputs[0]);
      n.dead = true;
      ++removed;
    }
  }
  g.RemoveDeadNodes();
  return {{"identities-removed", removed}, {"reshapes-merged", merged}};
}

}  // namespace texel::passes
