// An index map: a strided view of a row-major buffer. Element c (coordinates over `shape`) of
// the view is element `offset + sum_d c[d] * strides[d]` of the buffer. Transpose, Slice, Gather
// of one constant index and (where the strides allow) Reshape of a view are again views, so a chain
// of such movement ops between a buffer and the kernel that reads or writes it can be folded into
// the kernel's address arithmetic instead of running as copy kernels (attention's heads and
// windows). A plain value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/shape.h"
#include "ir/graph.h"

namespace texel::ir {

struct IndexMap {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  // The row-major buffer of `shape` itself.
  static IndexMap Contiguous(const Shape& shape);
  // out[c] = this[c permuted]: out.shape[d] = shape[perm[d]] (ONNX Transpose).
  IndexMap Permuted(const std::vector<int64_t>& perm) const;
  // out[c] = this[starts + c * steps], c over `sizes` (a normalised Slice: starts in range).
  IndexMap Sliced(const std::vector<int64_t>& starts, const std::vector<int64_t>& steps,
                  const Shape& sizes) const;
  // The same elements in row-major order viewed with another shape; nothing when the strides
  // cannot express it (merging dims that are not laid out one after the other).
  std::optional<IndexMap> Reshaped(const Shape& to) const;
  // Whether the view is the whole buffer of `shape` in row-major order.
  bool IsContiguous() const;
  // Whether every element (and the stride list) fits a buffer of `elements` elements.
  bool InBounds(int64_t elements) const;
  bool operator==(const IndexMap&) const = default;

  // Stored in a node's attributes as PREFIX_shape, PREFIX_strides, PREFIX_offset.
  void Store(Attrs& attrs, const std::string& prefix) const;
  // The view stored under prefix, or the contiguous buffer of `base` when none is stored.
  static IndexMap Load(const Attrs& attrs, const std::string& prefix, const Shape& base);
};

// Whether node n reads one of its inputs through a stored view (in<k>_shape, ...; the views
// pass): such a node reads that input at other indices than its own elements'.
bool ReadsThroughView(const Node& n);

// The view of `v` that a reader sees when it looks through the Transpose, Slice, Reshape and
// constant-index Gather nodes producing it, walking back as far as the strides allow. *source
// receives the value whose buffer the view reads (v itself when nothing could be folded) and
// *folded the movement nodes passed.
IndexMap ViewThroughMovement(Value* v, Value** source, std::vector<const Node*>* folded);

}  // namespace texel::ir
