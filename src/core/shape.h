// Static tensor shapes. Every dim is known once a model is compiled (dynamic ONNX dims are fixed
// by the user or by defaults). Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace texel {

using Shape = std::vector<int64_t>;

// The product of s's dims (0 when any dim is 0); throws kInvalidModel when it overflows int64_t
// (a shape that no memory can hold, but whose arithmetic must not wrap).
int64_t NumElements(const Shape& s);
// a * b, throwing kInvalidModel (naming `what`) where the product overflows int64_t.
int64_t CheckedMul(int64_t a, int64_t b, std::string_view what = "a shape");
// Row-major strides in elements.
std::vector<int64_t> Strides(const Shape& s);
// "1x3x224x224"; a scalar prints as "scalar".
std::string ShapeStr(const Shape& s);
// Parses "1x3x224x224" (or "1,3,224,224"); throws kInvalidArgument on bad text.
Shape ParseShape(std::string_view text);
// numpy broadcasting of two shapes; throws kInvalidModel when they do not broadcast.
Shape BroadcastShapes(const Shape& a, const Shape& b);
// s without its leading dims of size 1.
Shape StripLeadingOnes(const Shape& s);
// Whether a and b differ at most in leading dims of size 1: the same elements in the same
// order, and numpy broadcasting treats them alike.
inline bool SameLayout(const Shape& a, const Shape& b) {
  return StripLeadingOnes(a) == StripLeadingOnes(b);
}
// s's dims in the order perm names them (ONNX Transpose: result[i] = s[perm[i]]).
Shape Permuted(const Shape& s, const std::vector<int64_t>& perm);
// Normalises a possibly negative axis into [0, rank); throws kInvalidModel when out of range.
int64_t NormalizeAxis(int64_t axis, int64_t rank);

}  // namespace texel
