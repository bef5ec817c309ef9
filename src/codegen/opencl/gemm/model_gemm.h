// Models' matrix products on the matrix engine, whichever kernel computes them: the warp-tiled
// kernel (warp_gemm.h: mma.sync, or its emulation) or, on Hopper, the warpgroup kernel
// (wgmma_gemm.h) for fp16 products of stored operands. Both kernels' tilings are one tunable
// family ("warp_gemm"), so the tuner measures them against each other kernel by kernel.
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "codegen/opencl/gemm/warp_gemm.h"
#include "codegen/opencl/gemm/wgmma_gemm.h"

namespace texel::codegen {

// One product's kernel: the warp-tiled one with its tiling, or the warpgroup one with its own.
using ModelGemm = std::variant<WarpGemmParams, WgmmaTiling>;

// The heuristic's kernel for g on t, or nullopt where the matrix engine does not take g (the
// scalar kernels of matmul.h run it): the warp-tiled kernel's tiling (ChooseModelWarpGemm).
std::optional<ModelGemm> ChooseModelGemm(const GemmOperands& g, const Target& t);
// The family: ModelWarpGemmTunable's points, then the warpgroup kernel's tilings
// (ModelWgmmaTilings) as points {wgmma: 1, bm, bn, stages, rowb, split}.
std::optional<Tunable> ModelGemmTunable(const GemmOperands& g, const Target& t);
// ChooseModelGemm, or t.tuning's point of ModelGemmTunable.
std::optional<ModelGemm> TunedModelGemm(const GemmOperands& g, const Target& t);
// The kernels (GenerateModelWarpGemm or GenerateModelWgmmaGemm).
std::vector<KernelSpec> GenerateModelGemm(const GemmOperands& g, const std::string& kernel_name,
                                          const Target& t, const ModelGemm& k,
                                          const Chain& epilogue = {});

}  // namespace texel::codegen
