// texel_gemm's operand packing (kernels/gemm_pack.cl). The warpgroup kernel's tf32 instruction
// reads only k-contiguous operands (A [M, K], B stored [N, K]) in whole 64-byte steps, 16-byte
// aligned; a tf32 problem in another layout, or with K off the step, has its operands that do
// not fit copied into dense k-contiguous matrices first (zeros past K), and the warpgroup kernel
// runs the packed problem (docs/precision.md). Thread safety: pure functions.
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

// The packing that makes g's operands k-contiguous, 16-byte aligned and K whole 64-byte steps
// (tf32 on f32 storage only; nullopt for other problems and where nothing needs packing).
std::optional<GemmPacking> PackForWgmma(const GemmProblem& g);

// Whether packing g's operands pays for the warpgroup kernel's speed: products of at least 2^30
// multiply-adds (n = 1024 and up; docs/precision.md).
bool PackingPays(const GemmProblem& g);

// The pack kernel (one per orientation; sizes are arguments) and its launch for p.
std::string GemmPackClass(bool k_major);
KernelSpec GenerateGemmPack(bool k_major, const std::string& kernel_name);
void GemmPackGeometry(const GemmPack& p, std::vector<size_t>* global, std::vector<size_t>* local);

}  // namespace texel::codegen
