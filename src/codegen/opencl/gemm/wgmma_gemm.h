// Hopper's warpgroup MMA (kernels/wgmma_gemm.cl): wgmma.mma_async with both operands in 64- or
// 128-byte-swizzled local memory. texel_gemm takes it in fp16 (f16 storage, every transpose) or
// tf32 (f32 storage, the engine truncating the operands; k-contiguous operands only: A [M, K],
// B stored [N, K], which packing gives any other layout, gemm_pack.h), K whole steps, and M and N
// whole tiles unless both operands are k-contiguous (edge tiles then); other problems take the
// warp-tiled kernel (warp_gemm.h). Models' fp16 products may take it through the tuner (below,
// model_gemm.h). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/opencl/gemm/warp_gemm.h"

namespace texel::codegen {

// A tile of bm (64, 128 or 256: one, two or four warpgroups) x bn (64, 128 or 256; models also
// 32) in `stages` stages of row_bytes of K (64, or 32 or 128 where both operands are
// k-contiguous; models' tunable tilings keep to 128 rows and 64 or 128 bytes). Models' products
// only: K cut into split_k ranges summed into slices (as WarpGemmParams::split_k).
struct WgmmaTiling {
  int bm = 128, bn = 128, stages = 3, row_bytes = 64;
  int split_k = 1;
  std::string ToString() const;  // "128x128 s3", "64x64 s3 r128", "64x64 s4 split 4"
  bool operator==(const WgmmaTiling&) const = default;
};

// The heuristic's tiling for g on t (docs/precision.md): 128 x 128 in 3 stages, 128 x 64 in 4
// where those leave compute units idle.
WgmmaTiling ChooseWgmmaTiling(const GemmProblem& g, const Target& t);
// Why w cannot run g on t (whole steps, whole tiles or k-contiguous operands, 16-byte alignment,
// 48 KiB of local memory), or nullopt.
std::optional<std::string> CheckWgmmaTiling(const WgmmaTiling& w, const GemmProblem& g,
                                            const Target& t);
// Whether g runs on the warpgroup kernel on t with the heuristic's tiling (Target::wgmma, and the
// shapes above).
bool WgmmaApplies(const GemmProblem& g, const Target& t);

// g's shape class (the kernel's source depends on nothing else) and its launch geometry.
std::string WgmmaGemmClass(const GemmProblem& g, const WgmmaTiling& w, const Target& t);
void WgmmaGemmGeometry(const GemmProblem& g, const WgmmaTiling& w, std::vector<size_t>* global,
                       std::vector<size_t>* local);
// The kernel, with texel_gemm's parameters in the warp-tiled kernel's order; its source hides the
// sm_90a instructions for the runtime to make live (runtime/cl/ptx_sm90a.h).
KernelSpec GenerateWgmmaGemm(const GemmProblem& g, const std::string& kernel_name, const Target& t,
                             const WgmmaTiling& w);

// Models' fp16 products (MatMul on f16 storage, operands stored as matrices) on the warpgroup
// kernel, with warp_gemm.cl's model interface: sizes fixed, edges along M, N and K (each
// operand's contiguous dimension and K multiples of 8), broadcast batches, K split into slices,
// the epilogue fused. Where the device has the instruction (Target::wgmma) or emulates it for
// tests (Target::wgmma_emulated).
// Why w cannot run g on t, or nullopt.
std::optional<std::string> CheckModelWgmma(const WgmmaTiling& w, const GemmOperands& g,
                                           const Target& t);
// The tilings the tuner may try for g: first the largest of 128 x 128, 128 x 64, 64 x 64 and
// 64 x 32 that is valid, then 128 or 64 rows by 32 to 256 columns, rows of 64 or 128 bytes of K,
// up to 3, 4 or 8 stages (as many as fit), K split 1 to 16 ways (each range at least 128 deep).
// Empty where the kernel does not take g, and for products whose 128 x 128 tiles leave compute
// units idle (measured slower there than the warp-tiled kernel).
std::vector<WgmmaTiling> ModelWgmmaTilings(const GemmOperands& g, const Target& t);
// The kernel (and the split sum's, with split K and no partials_only).
std::vector<KernelSpec> GenerateModelWgmmaGemm(const GemmOperands& g,
                                               const std::string& kernel_name, const Target& t,
                                               const WgmmaTiling& w, const Chain& epilogue = {});

}  // namespace texel::codegen
