// How an Attention node (op class kAttention) reads q, k and v and writes its result: the views
// its attributes hold (q_*, k_*, v_*, o_* as IndexMaps; the output's physical shape out_shape),
// the batch dims they broadcast to, and the sizes. Type inference checks it; codegen reads it.
// A plain value.
#pragma once

#include <vector>

#include "ir/index_map.h"

namespace texel::ir {

struct AttentionLayout {
  IndexMap q, k, v;  // [batch..., sq, d], [batch..., sk, d], [batch..., sk, dv]
  IndexMap o;        // [batch..., sq, dv] within the output's physical shape
  Shape batch;       // q's, k's and v's batch dims broadcast
  int64_t sq = 0, sk = 0, d = 0, dv = 0;

  Shape Scores() const;  // batch + [sq, sk]: what a bias broadcasts to
  Shape Result() const;  // batch + [sq, dv]
};

// The layout of an Attention with attributes `a` over inputs of shapes q, k, v. Fails with
// kInvalidModel when the views do not fit their inputs or one another.
AttentionLayout AttentionLayoutOf(const Attrs& a, const Shape& q, const Shape& k, const Shape& v);

// The output's physical shape: out_shape when the result is written through a view (o_*), else
// the result itself.
Shape AttentionOutputShape(const Attrs& a, const AttentionLayout& layout);

}  // namespace texel::ir
