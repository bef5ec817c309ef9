// texel_gemm on Hopper's warpgroup MMA (kernels/wgmma_gemm.cl): wgmma.mma_async with both
// operands in 64-byte-swizzled local memory, for whole 128 x 128 tiles in fp16 (f16 storage,
// every transpose) or tf32 (f32 storage, the engine truncating the operands; k-contiguous
// operands only: A [M, K], B stored [N, K]). Other problems take the warp-tiled kernel
// (warp_gemm.h). Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "codegen/opencl/gemm/warp_gemm.h"

namespace texel::codegen {

// Whether g runs on the warpgroup kernel on t (Target::wgmma, and the shapes above).
bool WgmmaApplies(const GemmProblem& g, const Target& t);

// g's shape class (the kernel's source depends on nothing else) and its launch geometry.
std::string WgmmaGemmClass(const GemmProblem& g);
void WgmmaGemmGeometry(const GemmProblem& g, std::vector<size_t>* global,
                       std::vector<size_t>* local);

// The kernel, with texel_gemm's parameters in the warp-tiled kernel's order; its source hides
// the sm_90a instructions for the runtime to make live (runtime/cl/ptx_sm90a.h).
KernelSpec GenerateWgmmaGemm(const GemmProblem& g, const std::string& kernel_name, const Target& t);

}  // namespace texel::codegen
