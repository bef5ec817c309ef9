#include "core/shape.h"

#include <charconv>

#include "core/error.h"

namespace texel {

int64_t CheckedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t p = 0;
  if (__builtin_mul_overflow(a, b, &p))
    Fail(ErrorCode::kInvalidModel, "{}: {} x {} elements overflow 64 bits", what, a, b);
  return p;
}

int64_t NumElements(const Shape& s) {
  for (int64_t d : s)
    if (d == 0) return 0;  // however large the others: no elements, and no product to overflow
  int64_t n = 1;
  for (int64_t d : s) {
    if (__builtin_mul_overflow(n, d, &n))
      Fail(ErrorCode::kInvalidModel, "shape {} has more elements than 64 bits count", ShapeStr(s));
  }
  return n;
}

std::vector<int64_t> Strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

std::string ShapeStr(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(s[i]);
  }
  return out;
}

Shape ParseShape(std::string_view text) {
  Shape s;
  if (text == "scalar") return s;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find_first_of("x,", pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(pos, end - pos);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size() || v < 0)
      Fail(ErrorCode::kInvalidArgument, "bad shape '{}': expected dims like 1x3x224x224", text);
    s.push_back(v);
    pos = end + 1;
  }
  return s;
}

Shape StripLeadingOnes(const Shape& s) {
  size_t k = 0;
  while (k < s.size() && s[k] == 1) ++k;
  return Shape(s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
}

Shape BroadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      Fail(ErrorCode::kInvalidModel, "shapes {} and {} do not broadcast", ShapeStr(a), ShapeStr(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t NormalizeAxis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    Fail(ErrorCode::kInvalidModel, "axis {} is out of range for rank {}", axis, rank);
  return a;
}

Shape Permuted(const Shape& s, const std::vector<int64_t>& perm) {
  Shape r;
  for (int64_t p : perm) r.push_back(s.at(static_cast<size_t>(p)));
  return r;
}

}  // namespace texel
