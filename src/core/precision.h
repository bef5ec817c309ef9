// How matrix products compute (--precision, texel_gemm's compute mode). Storage precision is
// the element type (DType); this is the arithmetic. Thread safety: plain values.
#pragma once

#include <string_view>

#include "core/enum_names.h"

namespace texel {

enum class ComputeMode {
  kFp32,    // fp32 FMA
  kTf32,    // matrix engine on tf32 operands (10-bit mantissa), fp32 accumulation
  kTf32x3,  // each fp32 operand as two tf32 parts, three products: fp32-level accuracy
  kFp16,    // matrix engine on f16 operands, fp32 accumulation
};

inline constexpr EnumName<ComputeMode> kComputeModeNames[] = {
    {ComputeMode::kFp32, "fp32"},
    {ComputeMode::kTf32, "tf32"},
    {ComputeMode::kTf32x3, "tf32x3"},
    {ComputeMode::kFp16, "fp16"},
};

inline const char* ComputeModeName(ComputeMode m) { return NameIn(kComputeModeNames, m); }
inline bool ParseComputeMode(std::string_view s, ComputeMode* out) {
  return ParseIn(kComputeModeNames, s, out);
}

}  // namespace texel
