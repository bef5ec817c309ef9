#include "core/dtype.h"

#include <array>

namespace texel {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  std::string_view cl_name;
  size_t size;
};

constexpr std::array<DTypeInfo, 12> kTable = {{
    {DType::kFloat32, "f32", "float", 4},
    {DType::kFloat16, "f16", "half", 2},
    {DType::kFloat64, "f64", "double", 8},
    {DType::kInt8, "i8", "char", 1},
    {DType::kUInt8, "u8", "uchar", 1},
    {DType::kInt16, "i16", "short", 2},
    {DType::kUInt16, "u16", "ushort", 2},
    {DType::kInt32, "i32", "int", 4},
    {DType::kUInt32, "u32", "uint", 4},
    {DType::kInt64, "i64", "long", 8},
    {DType::kUInt64, "u64", "ulong", 8},
    {DType::kBool, "bool", "uchar", 1},
}};

constexpr bool TableInOrder() {
  for (size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<size_t>(kTable[i].type) != i) return false;
  return true;
}
static_assert(TableInOrder(), "dtype table must follow the enum order");

}  // namespace

size_t DTypeSize(DType t) { return kTable[static_cast<size_t>(t)].size; }
std::string_view DTypeName(DType t) { return kTable[static_cast<size_t>(t)].name; }
std::string_view CLTypeName(DType t) { return kTable[static_cast<size_t>(t)].cl_name; }

bool ParseDType(std::string_view name, DType* out) {
  for (const auto& e : kTable) {
    if (e.name == name) {
      *out = e.type;
      return true;
    }
  }
  return false;
}

bool IsFloat(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kFloat64;
}

bool IsSignedInt(DType t) {
  return t == DType::kInt8 || t == DType::kInt16 || t == DType::kInt32 || t == DType::kInt64;
}

}  // namespace texel
