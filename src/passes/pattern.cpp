#include "passes/pattern.h"

#include <algorithm>

namespace texel::passes {

UseMap::UseMap(const ir::Graph& g) {
  int n = 0;
  for (const auto& v : g.values()) n = std::max(n, v->id + 1);
  for (const auto& node : g.nodes())
    for (const ir::Value* v : node->outputs) n = std::max(n, v->id + 1);
  users_.resize(n);
  is_output_.assign(n, false);
  for (const auto& node : g.nodes())
    if (!node->dead)
      for (const ir::Value* in : node->inputs) {
        auto& list = users_[in->id];
        if (std::find(list.begin(), list.end(), node.get()) == list.end())
          list.push_back(node.get());
      }
  for (const ir::Value* v : g.outputs()) is_output_[v->id] = true;
}

const std::vector<ir::Node*>& UseMap::Users(const ir::Value* v) const { return users_.at(v->id); }

bool UseMap::OnlyUsedBy(const ir::Value* v, const ir::Node* user) const {
  const auto& list = users_.at(v->id);
  return !is_output_.at(v->id) && list.size() == 1 && list[0] == user;
}

std::optional<double> ScalarConstant(const ir::Value* v) {
  if (!v || !v->is_constant() || v->constant->size() != 1) return std::nullopt;
  return v->constant->GetDouble(0);
}

ir::Value* OtherInput(const ir::Node& n, const ir::Value* operand) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == operand) return n.inputs[1];
  if (n.inputs[1] == operand) return n.inputs[0];
  return nullptr;
}

void ReplaceValue(ir::Graph& g, ir::Value* from, ir::Value* to) {
  g.ReplaceAllUses(from, to);
  std::swap(from->name, to->name);
}

}  // namespace texel::passes
