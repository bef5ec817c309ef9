#include "core/tensor.h"

#include <bit>
#include <cmath>

#include "core/limits.h"
#include "core/saturate.h"

namespace texel {

HostTensor::HostTensor(DType t, Shape s) : dtype(t), shape(std::move(s)) {
  RequireWithinLimits(shape, dtype, /*host=*/true, "a tensor in host memory");
  bytes.resize(static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype));
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0);  // inf/nan
  if (absx >= 0x477ff000u) return sign | 0x7c00u;                                      // overflow
  if (absx < 0x38800000u) {  // subnormal half or zero: round to nearest even
    float a = std::bit_cast<float>(absx);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;
  return sign | h;
}

double HostTensor::GetDouble(int64_t i) const {
  if (dtype == DType::kFloat16) return HalfToFloat(data<uint16_t>()[i]);
  return VisitDType(dtype, [&](auto t) { return static_cast<double>(data<decltype(t)>()[i]); });
}

void HostTensor::SetDouble(int64_t i, double v) {
  if (dtype == DType::kFloat16) {
    data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v));
    return;
  }
  VisitDType(dtype, [&](auto t) { data<decltype(t)>()[i] = static_cast<decltype(t)>(v); });
}

int64_t HostTensor::GetInt(int64_t i) const {
  // Saturated: a float read as an integer (a shape given as floats) may be out of range.
  if (IsFloat(dtype)) return SaturatingCast<int64_t>(GetDouble(i));
  return VisitDType(dtype, [&](auto t) { return static_cast<int64_t>(data<decltype(t)>()[i]); });
}

std::vector<int64_t> HostTensor::ToInts() const {
  std::vector<int64_t> v(size());
  for (int64_t i = 0; i < size(); ++i) v[i] = GetInt(i);
  return v;
}

}  // namespace texel
