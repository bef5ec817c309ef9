#include "ir/attention_layout.h"

#include <fmt/format.h>

#include "core/error.h"

namespace texel::ir {
namespace {

void Expect(bool cond, std::string_view what) {
  if (!cond) Fail(ErrorCode::kInvalidModel, "{}", what);
}

Shape Append(Shape s, int64_t a, int64_t b) {
  s.push_back(a);
  s.push_back(b);
  return s;
}

}  // namespace

Shape AttentionLayout::Scores() const { return Append(batch, sq, sk); }
Shape AttentionLayout::Result() const { return Append(batch, sq, dv); }

AttentionLayout AttentionLayoutOf(const Attrs& a, const Shape& qs, const Shape& ks,
                                  const Shape& vs) {
  AttentionLayout l;
  l.q = IndexMap::Load(a, "q", qs);
  l.k = IndexMap::Load(a, "k", ks);
  l.v = IndexMap::Load(a, "v", vs);
  size_t r = l.q.shape.size();
  Expect(r >= 2 && l.k.shape.size() == r && l.v.shape.size() == r,
         "Attention's q, k and v views must have one rank >= 2");
  const Shape* in[] = {&qs, &ks, &vs};
  for (int i = 0; i < 3; ++i) {
    const IndexMap& m = i == 0 ? l.q : i == 1 ? l.k : l.v;
    Expect(m.InBounds(NumElements(*in[i])),
           fmt::format("Attention's {} view is not within its input", "qkv"[i]));
  }
  Expect(l.q.shape[r - 1] == l.k.shape[r - 1], "Attention's q and k differ in their last dim");
  Expect(l.k.shape[r - 2] == l.v.shape[r - 2], "Attention's k and v differ in sequence length");
  auto batch_of = [&](const IndexMap& m) { return Shape(m.shape.begin(), m.shape.end() - 2); };
  l.batch = BroadcastShapes(batch_of(l.q), BroadcastShapes(batch_of(l.k), batch_of(l.v)));
  Expect(l.batch.size() == r - 2, "Attention's batch dims must broadcast within one rank");
  l.sq = l.q.shape[r - 2];
  l.sk = l.k.shape[r - 2];
  l.d = l.q.shape[r - 1];
  l.dv = l.v.shape[r - 1];
  Shape physical = AttentionOutputShape(a, l);
  l.o = IndexMap::Load(a, "o", physical);
  Expect(l.o.InBounds(NumElements(physical)), "Attention's output view is not within its output");
  Expect(l.o.shape == l.Result(), fmt::format("Attention's output view {} is not the result {}",
                                              ShapeStr(l.o.shape), ShapeStr(l.Result())));
  return l;
}

Shape AttentionOutputShape(const Attrs& a, const AttentionLayout& layout) {
  if (!a.Has("out_shape")) return layout.Result();
  const std::vector<int64_t>& os = a.Ints("out_shape");
  return Shape(os.begin(), os.end());
}

}  // namespace texel::ir
