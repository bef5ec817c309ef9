#include "ir/verifier.h"

#include <unordered_set>

#include "core/error.h"
#include "ir/infer.h"

namespace texel::ir {

void Verify(const Graph& g) {
  std::unordered_set<const Value*> defined;
  for (const auto& v : g.values())
    if (v->is_input || v->is_constant()) defined.insert(v.get());
  for (const auto& v : g.values())
    if (v->is_constant())
      TEXEL_CHECK(v->constant->dtype == v->type.dtype && v->constant->shape == v->type.shape,
                  "constant '{}' does not match its type {}", v->name, TypeStr(v->type));
  for (const auto& n : g.nodes()) {
    std::vector<TensorType> in;
    for (const Value* v : n->inputs) {
      TEXEL_CHECK(defined.count(v), "node '{}' ({}) uses '{}' before it is defined", n->name,
                  OpName(n->op), v->name);
      TEXEL_CHECK(!v->valid_rows, "node '{}' ({}) uses '{}', whose row count is data-dependent",
                  n->name, OpName(n->op), v->name);
      in.push_back(v->type);
    }
    std::vector<TensorType> expect = InferTypes(n->op, in, n->attrs);
    TEXEL_CHECK(expect.size() == n->outputs.size(), "node '{}' has {} outputs, expected {}",
                n->name, n->outputs.size(), expect.size());
    for (size_t i = 0; i < expect.size(); ++i) {
      TEXEL_CHECK(expect[i] == n->outputs[i]->type, "node '{}' ({}) output {} is {}, expected {}",
                  n->name, OpName(n->op), i, TypeStr(n->outputs[i]->type), TypeStr(expect[i]));
      TEXEL_CHECK(n->outputs[i]->producer == n.get(), "output '{}' has the wrong producer",
                  n->outputs[i]->name);
      defined.insert(n->outputs[i]);
    }
  }
  for (const Value* v : g.outputs())
    TEXEL_CHECK(defined.count(v), "graph output '{}' is not defined", v->name);
}

}  // namespace texel::ir
