// HostTensor: a dense row-major tensor in host memory (constants, .npy files, test data).
// Thread safety: a plain value; share immutable instances through shared_ptr<const HostTensor>.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"

namespace texel {

struct HostTensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  // Throws kInvalidModel past the host limit (core/limits.h) instead of allocating.
  HostTensor(DType t, Shape s);
  int64_t size() const { return NumElements(shape); }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  // Element i converted to double / int64 (any dtype; f16 decoded).
  double GetDouble(int64_t i) const;
  int64_t GetInt(int64_t i) const;
  std::vector<int64_t> ToInts() const;
  // Stores v converted to the element type (f16 encoded; integers truncated).
  void SetDouble(int64_t i, double v);
};

using ConstTensorPtr = std::shared_ptr<const HostTensor>;

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);

}  // namespace texel
