// How matrix products compute (--precision, texel_gemm's compute mode). Storage precision is
// the element type (DType); this is the arithmetic. Thread safety: plain values.
#pragma once

#include <cstdint>
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

// tf32x3 takes the matrix engine for products of at least this many multiply-adds
// (passes/precision.cpp; its convolutions take it in every channels-last region,
// passes/channels_last.cpp); the rest keep the scalar fp32 kernels, as accurate and faster there.
// H200, every product on the engine against fp32 (docs/precision.md): BERT-base 1.18x and
// ViT-B/16 1.08x slower at batch 1; texel_gemm's tf32x3 reaches texel's fp32 SGEMM at 1024^3
// (2^30) and is 1.08-1.11x past it at 2048^3 and 4096^3.
inline constexpr int64_t kTf32x3MinMacs = int64_t{1} << 30;

inline const char* ComputeModeName(ComputeMode m) { return NameIn(kComputeModeNames, m); }
inline bool ParseComputeMode(std::string_view s, ComputeMode* out) {
  return ParseIn(kComputeModeNames, s, out);
}

}  // namespace texel
