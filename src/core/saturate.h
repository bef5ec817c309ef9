// A double as an integer type, saturated: the plain conversion is undefined outside the type's
// range (a shape given as floats, ONNX's Cast of a large float).
#pragma once

#include <cmath>
#include <limits>

namespace texel {

// v rounded toward zero as T, clamped to T's range; NaN as 0 (undefined in ONNX; kept
// deterministic). Compared, not clamped with std::clamp: a 64-bit max rounds up to 2^63 as a
// double, which does not convert back.
template <typename T>
T SaturatingCast(double v) {
  if (std::isnan(v)) return 0;
  if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  return static_cast<T>(v);
}

}  // namespace texel
