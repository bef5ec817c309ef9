// fold-constants: a node whose inputs are all constants is evaluated on the host (ir/host_eval)
// and its output becomes a constant. Nodes the host evaluator does not cover stay.
#include "ir/host_eval.h"
#include "passes/pipeline.h"

namespace texel::passes {

Stats FoldConstants(ir::Graph& g, const PassContext&) {
  int64_t folded = 0;
  std::vector<ir::Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (ir::Node* n : nodes) {
    std::vector<const HostTensor*> in;
    for (ir::Value* v : n->inputs) {
      if (!v->is_constant()) break;
      in.push_back(v->constant.get());
    }
    if (in.size() != n->inputs.size() || n->outputs.size() != 1) continue;
    ir::Value* out = n->outputs[0];
    bool is_output = false;
    for (ir::Value* o : g.outputs()) is_output = is_output || o == out;
    if (is_output) continue;  // graph outputs stay computed values (written by a kernel)
    auto r = ir::EvaluateOnHost(n->op, n->attrs, in, out->type);
    if (!r) continue;
    ir::Value* c = g.AddConstant(out->name, std::make_shared<HostTensor>(std::move(*r)));
    g.ReplaceAllUses(out, c);
    n->dead = true;
    ++folded;
  }
  g.RemoveDeadNodes();
  return {{"folded", folded}};
}

}  // namespace texel::passes
