#include "core/limits.h"

#include <cstdlib>
#include <limits>

#include "core/error.h"

namespace texel {
namespace {

uint64_t FromEnv(const char* name, uint64_t fallback, const char* unit = "bytes") {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (*end != '\0' || x == 0)
    Fail(ErrorCode::kInvalidArgument, "{}='{}': want a positive number of {}", name, v, unit);
  return x;
}

}  // namespace

const Limits& CurrentLimits() {
  static const Limits limits = [] {
    Limits l;
    l.tensor_bytes = FromEnv("TEXEL_MAX_TENSOR_BYTES", l.tensor_bytes);
    l.host_bytes = FromEnv("TEXEL_MAX_HOST_BYTES", l.host_bytes);
    l.subgraph_depth = FromEnv("TEXEL_MAX_SUBGRAPH_DEPTH", l.subgraph_depth, "levels");
    return l;
  }();
  return limits;
}

std::optional<uint64_t> CheckedBytes(const Shape& s, DType t) {
  uint64_t n = DTypeSize(t);
  for (int64_t d : s) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / static_cast<uint64_t>(d))
      return std::nullopt;
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

void RequireWithinLimits(const Shape& s, DType t, bool host, std::string_view what) {
  const Limits& l = CurrentLimits();
  for (int64_t d : s)
    if (d < 0) Fail(ErrorCode::kInvalidModel, "{}: shape {} has a negative dim", what, ShapeStr(s));
  std::optional<uint64_t> bytes = CheckedBytes(s, t);
  if (!bytes)
    Fail(ErrorCode::kInvalidModel, "{}: shape {} of {} overflows a 64-bit size", what, ShapeStr(s),
         DTypeName(t));
  uint64_t limit = host ? l.host_bytes : l.tensor_bytes;
  if (*bytes > limit)
    Fail(ErrorCode::kInvalidModel,
         "{}: {}[{}] is {} bytes, over texel's limit of {} ({} raises it)", what, DTypeName(t),
         ShapeStr(s), *bytes, limit, host ? "TEXEL_MAX_HOST_BYTES" : "TEXEL_MAX_TENSOR_BYTES");
}

}  // namespace texel
