// Small helpers for the pattern passes (match_attention, match_norm): who uses a value, and
// what a constant operand holds. Patterns are matched on the IR after `simplify`, never on
// exporter-specific node names.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace texel::passes {

// The live nodes reading each value (by value id), and whether a value is a graph output.
class UseMap {
 public:
  explicit UseMap(const ir::Graph& g);
  const std::vector<ir::Node*>& Users(const ir::Value* v) const;
  bool IsOutput(const ir::Value* v) const { return is_output_.at(v->id); }
  // Whether v is read only by `user` (once or several times) and is not a graph output.
  bool OnlyUsedBy(const ir::Value* v, const ir::Node* user) const;

 private:
  std::vector<std::vector<ir::Node*>> users_;
  std::vector<bool> is_output_;
};

// The value of a constant with one element (any rank, any numeric type), else nothing.
std::optional<double> ScalarConstant(const ir::Value* v);

// The input of binary node n that is not `operand` (n's inputs are operand and one other).
ir::Value* OtherInput(const ir::Node& n, const ir::Value* operand);

// Redirects every use of `from` to `to`, which takes over from's name (graph outputs keep their
// names).
void ReplaceValue(ir::Graph& g, ir::Value* from, ir::Value* to);

}  // namespace texel::passes
