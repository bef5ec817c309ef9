// merge-projections: products of one activation with several constant weight matrices (the
// query, key and value projections of attention written as three Linear layers) become one
// product with the weights side by side, each result a Slice of it:
//   Add(MatMul(x, W1), b1), ..., Add(MatMul(x, Wn), bn)
//     -> y = Add(MatMul(x, [W1 ... Wn]), [b1 ... bn]);  result i = Slice(y, last axis)
// One GEMM of n times the width fills a GPU better and launches once; the Slices are views for
// the attention kernel that reads the heads (passes/match_attention.cpp), so they cost nothing
// there. Only products whose results are read by movement ops alone (heads being split) are
// merged, so that a Slice never becomes a copy in front of an ordinary consumer.
#include <cstring>
#include <map>

#include "passes/pattern.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

using ir::OpKind;

struct Projection {
  ir::Node* matmul;
  ir::Node* add;   // the bias Add (null: no bias)
  ir::Value* out;  // what the merged product's Slice replaces
};

// The projection whose product is `mm`, when it qualifies.
std::optional<Projection> ProjectionOf(const UseMap& uses, ir::Node* mm) {
  if (mm->op != OpKind::kMatMul) return std::nullopt;  // first: other ops may have one input
  const ir::Value* w = mm->inputs[1];
  if (mm->attrs.Int("trans_a", 0) || mm->attrs.Int("trans_b", 0) || !w->is_constant() ||
      w->type.shape.size() != 2 || !IsFloat(w->type.dtype))
    return std::nullopt;
  Projection p{mm, nullptr, mm->outputs[0]};
  const auto& users = uses.Users(p.out);
  if (users.size() == 1 && users[0]->op == OpKind::kAdd && !uses.IsOutput(p.out)) {
    ir::Node* add = users[0];
    const ir::Value* b = OtherInput(*add, p.out);
    if (b && b->is_constant() && b->type.shape == Shape{w->type.shape[1]} &&
        add->outputs[0]->type == p.out->type) {
      p.add = add;
      p.out = add->outputs[0];
    }
  }
  if (uses.IsOutput(p.out) || uses.Users(p.out).empty()) return std::nullopt;
  for (const ir::Node* u : uses.Users(p.out))
    if (u->info().cls != ir::OpClass::kMovement || u->op == OpKind::kConvertStorage)
      return std::nullopt;
  return p;
}

// The constants side by side along their last axis.
ConstTensorPtr ConcatLast(const std::vector<const HostTensor*>& parts) {
  Shape s = parts[0]->shape;
  int64_t width = 0;
  for (const HostTensor* t : parts) width += t->shape.back();
  s.back() = width;
  auto out = std::make_shared<HostTensor>(parts[0]->dtype, s);
  int64_t rows = out->size() / width, elem = static_cast<int64_t>(DTypeSize(out->dtype));
  int64_t col = 0;
  for (const HostTensor* t : parts) {
    int64_t w = t->shape.back();
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(out->bytes.data() + (r * width + col) * elem, t->bytes.data() + r * w * elem,
                  static_cast<size_t>(w * elem));
    col += w;
  }
  return out;
}

}  // namespace

Stats MergeProjections(ir::Graph& g, const PassContext&) {
  UseMap uses(g);
  // Candidate products by the activation they read, in graph order.
  std::map<ir::Value*, std::vector<Projection>> by_input;
  std::vector<ir::Value*> order;
  for (const auto& n : g.nodes())
    if (auto p = ProjectionOf(uses, n.get())) {
      ir::Value* x = n->inputs[0];
      if (!by_input.count(x)) order.push_back(x);
      by_input[x].push_back(*p);
    }
  int64_t merged = 0;
  for (ir::Value* x : order) {
    std::vector<Projection>& ps = by_input[x];
    // One group per weight type and bias presence; the weights share their input width.
    DType wt = ps[0].matmul->inputs[1]->type.dtype;
    bool biased = ps[0].add != nullptr;
    std::erase_if(ps, [&](const Projection& p) {
      return p.matmul->inputs[1]->type.dtype != wt || (p.add != nullptr) != biased;
    });
    if (ps.size() < 2) continue;
    std::vector<const HostTensor*> ws, bs;
    for (const Projection& p : ps) {
      ws.push_back(p.matmul->inputs[1]->constant.get());
      if (p.add) bs.push_back(OtherInput(*p.add, p.matmul->outputs[0])->constant.get());
    }
    const std::string& name = ps[0].matmul->name;
    const ir::Node* at = x->producer;  // the merged product goes right after its input
    ir::Node* mm =
        g.InsertNodeAfter(at, OpKind::kMatMul,
                          {x, g.AddConstant(g.UniqueName(name + "_merged_weight"), ConcatLast(ws))},
                          {}, name + "_merged");
    ir::Value* y = mm->outputs[0];
    const ir::Node* last = mm;
    if (!bs.empty()) {
      last = g.InsertNodeAfter(
          mm, OpKind::kAdd, {y, g.AddConstant(g.UniqueName(name + "_merged_bias"), ConcatLast(bs))},
          {}, name + "_merged_bias");
      y = last->outputs[0];
    }
    const Shape& ys = y->type.shape;
    int64_t col = 0;
    for (const Projection& p : ps) {
      std::vector<int64_t> starts(ys.size(), 0), steps(ys.size(), 1);
      Shape sizes = ys;
      starts.back() = col;
      sizes.back() = p.out->type.shape.back();
      col += sizes.back();
      ir::Node* slice =
          g.InsertNodeAfter(last, OpKind::kSlice, {y},
                            {{"starts", starts},
                             {"steps", steps},
                             {"sizes", std::vector<int64_t>(sizes.begin(), sizes.end())}},
                            p.out->name);
      last = slice;
      ReplaceValue(g, p.out, slice->outputs[0]);
    }
    merged += static_cast<int64_t>(ps.size());
  }
  g.RemoveDeadNodes();
  return {{"projections-merged", merged}};
}

}  // namespace texel::passes
