// texel_gemm's operand packing (kernels/gemm_pack.cl). The warpgroup kernel reads operands in
// whole 64-byte steps of K, 16-byte aligned, and in tf32 only k-contiguous ones (A [M, K], B
// stored [N, K]; fp16's m- or n-contiguous ones only in whole tiles). A problem whose operands do
// not fit has those copied into dense k-contiguous matrices first (zeros past K), and the
// warpgroup kernel runs the packed problem (docs/precision.md). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "codegen/opencl/gemm/warp_gemm.h"
#include "codegen/opencl/kernel_spec.h"

namespace texel::codegen {

// One operand's pack: rows (M or N) by k of the stored operand, into [batch][rows][kp].
struct GemmPack {
  bool k_major = false;  // stored [K][rows] (A transposed, B not)
  int elem_bytes = 4;    // f32 (tf32) or f16 (fp16), copied as bits
  int64_t rows = 0, k = 0, kp = 0, batch = 0;
  int64_t offset = 0, ld = 0, stride = 0;  // the stored operand's (elements)
  int64_t elements() const { return batch * rows * kp; }
};

// g with the operands that the warpgroup kernel cannot read as stored packed: `packed` reads A
// at element 0 and B after A's pack (if packed) of one scratch buffer; a and b say which were.
struct GemmPacking {
  GemmProblem packed;
  std::optional<GemmPack> a, b;
  int64_t elements() const;  // of the scratch buffer
};

// The packing that makes g's operands fit the warpgroup kernel (tf32 on f32 storage and fp16 on
// f16 storage; nullopt for other problems and where nothing needs packing).
std::optional<GemmPacking> PackForWgmma(const GemmProblem& g);

// Whether packing g's operands pays for the warpgroup kernel's speed: tf32 products of at least
// 2^27 multiply-adds (n = 512 and up), fp16 ones of 2^33 (n = 2048 and up; docs/precision.md).
bool PackingPays(const GemmProblem& g);

// The pack kernel (one per orientation and element size; sizes are arguments) and its launch.
std::string GemmPackClass(const GemmPack& p);
KernelSpec GenerateGemmPack(const GemmPack& p, const std::string& kernel_name);
void GemmPackGeometry(const GemmPack& p, std::vector<size_t>* global, std::vector<size_t>* local);

}  // namespace texel::codegen
