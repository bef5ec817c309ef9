// Element types. The numeric values are texel's own; ONNX's TensorProto codes are mapped in the
// frontend. Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace texel {

enum class DType : uint8_t {
  kFloat32,
  kFloat16,
  kFloat64,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kBool,
};

size_t DTypeSize(DType t);
std::string_view DTypeName(DType t);  // "f32", "i64", "bool", ...
bool ParseDType(std::string_view name, DType* out);
bool IsFloat(DType t);
bool IsSignedInt(DType t);
// The OpenCL C scalar type that stores this dtype on the device ("float", "long", "uchar").
std::string_view CLTypeName(DType t);

// Calls f(T{}) with the C++ type that holds dtype t (bool -> uint8_t, f16 -> uint16_t bits).
template <typename F>
decltype(auto) VisitDType(DType t, F&& f) {
  switch (t) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kFloat16: return f(uint16_t{});
    case DType::kInt8: return f(int8_t{});
    case DType::kUInt8: return f(uint8_t{});
    case DType::kInt16: return f(int16_t{});
    case DType::kUInt16: return f(uint16_t{});
    case DType::kInt32: return f(int32_t{});
    case DType::kUInt32: return f(uint32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kUInt64: return f(uint64_t{});
    case DType::kBool: return f(uint8_t{});
  }
  return f(float{});
}

}  // namespace texel
