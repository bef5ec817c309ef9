#include "frontend/linalg/ast.h"

#include <fmt/format.h>

namespace texel::linalg_frontend::ast {

namespace {

// MLIR's spelling of each element type texel has; `index` reads as i64.
struct ElementName {
  const char* name;
  DType dtype;
};
constexpr ElementName kElementNames[] = {
    {"f32", DType::kFloat32}, {"f16", DType::kFloat16}, {"f64", DType::kFloat64},
    {"i1", DType::kBool},     {"i8", DType::kInt8},     {"i16", DType::kInt16},
    {"i32", DType::kInt32},   {"i64", DType::kInt64},   {"ui8", DType::kUInt8},
    {"ui16", DType::kUInt16}, {"ui32", DType::kUInt32}, {"ui64", DType::kUInt64},
    {"index", DType::kInt64},
};

}  // namespace

bool ParseElementType(std::string_view name, DType* out) {
  for (const auto& e : kElementNames)
    if (name == e.name) {
      *out = e.dtype;
      return true;
    }
  return false;
}

std::string ElementTypeText(DType t) {
  for (const auto& e : kElementNames)
    if (e.dtype == t) return e.name;
  return std::string(DTypeName(t));
}

std::string TypeText(const Type& t) {
  std::string elem = ElementTypeText(t.dtype);
  if (t.kind == Type::Kind::kScalar) return elem;
  std::string dims;
  for (int64_t d : t.shape) dims += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return fmt::format("{}<{}{}>", t.kind == Type::Kind::kTensor ? "tensor" : "memref", dims, elem);
}

bool AffineMap::IsIdentity() const {
  if (static_cast<int>(results.size()) != num_dims) return false;
  for (int i = 0; i < num_dims; ++i)
    if (results[i] != i) return false;
  return true;
}

}  // namespace texel::linalg_frontend::ast
