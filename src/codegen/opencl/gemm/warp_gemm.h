// The warp-tiled GEMM (kernels/warp_gemm.cl) for BLAS-style problems (strides, transposes,
// alpha, beta, strided batches, f32 or f16 storage) in every compute mode: each warp of 32
// work-items computes a WM x WN block as 16 x 8 fragments laid out as NVIDIA's mma.sync lays them,
// on the tensor cores where Target::mma_sync holds and the mode is tf32, tf32x3 or fp16, with
// FMAs otherwise (fp32 on any device; the other modes' rounding emulated, for tests). Sizes,
// strides, offsets and scalars are kernel arguments, so one kernel serves every problem with the
// same transposes, element type, mode, alignment and evenness. Models' reduced-precision
// products use the same template with their sizes fixed and their epilogue fused
// (GenerateModelWarpGemm). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/opencl/generator.h"
#include "codegen/opencl/matmul.h"
#include "codegen/opencl/tuning.h"
#include "core/dtype.h"
#include "core/precision.h"

namespace texel::codegen {

// Row-major C[m, n] = alpha * op(A)[m, k] op(B)[k, n] + beta * C, `batch` times at the strides
// (elements). op(A) = A^T with trans_a: A stored [k, m] with leading dimension lda.
struct GemmProblem {
  int64_t m = 1, n = 1, k = 1, batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t lda = 1, ldb = 1, ldc = 1;
  int64_t a_offset = 0, b_offset = 0, c_offset = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  DType elem = DType::kFloat32;  // of A, B and C: f32 or f16
  ComputeMode mode = ComputeMode::kTf32;
  // Models only: B is gathered element by element (GemmOperands::load_b, a convolution's image),
  // so it goes through registers, never by asynchronous copies.
  bool gather_b = false;
  // Models only, with gather_b: B is stored f32 and converted to the operand type as it is
  // gathered (GemmOperands::b_f32).
  bool gather_f32 = false;
  // Models only: B is a channels-last image read as [N, K] (trans_b) whose 16-byte chunks the
  // caller addresses (B_AT(k, c) and B_INSIDE(k, c), GemmOperands::channels_last): copied
  // asynchronously like a stored B, zeros where the window is outside the image.
  bool gather_at = false;
};

// A BM x BN tile per work-group, BK deep per local-memory step, WM x WN per warp; `stages` local
// buffers when the tiles are copied asynchronously (AsyncCopies), else 2.
// split_k: K cut into ranges (multiples of bk) summed into slices by separate work-groups, then
// added up by the tile's last work-group (models: or a second kernel, matmul.h GenerateSplitSum).
// kgroups: warps per WM x WN block, sharing each step's BK along K (the work-group has
// (bm / wm) x (bn / wn) x kgroups warps; the groups' sums are added up in local memory at the end).
struct WarpGemmParams {
  int bm = 128, bn = 128, bk = 16, wm = 64, wn = 32, stages = 2;
  int split_k = 1;
  int kgroups = 1;
  // tf32: operands passed to the engine as stored (truncated by it) instead of rounded by
  // cvt.rna first.
  bool raw_tf32 = false;
  std::string ToString() const;  // "warp 128x128x16 / 64x32 s3 split 4 kg 2"
};

// Whether an operand's offset, leading dimension and batch stride are multiples of `elems`
// elements: its loads of that many are then aligned to as many elements (buffers themselves are).
bool Aligned(int64_t offset, int64_t ld, int64_t stride, int64_t batch, int64_t elems);

// Whether g's tiles go to local memory by cp.async on t (or, on the emulated engine, by plain
// copies of the same layout), copied as stored: the matrix engine, operands 16-byte aligned and
// stored in the mode's type (f32 for tf32 and tf32x3, f16 for fp16), and unless the tiles are
// whole, each operand's contiguous dimension a multiple of 16 bytes (edge chunks are zeros).
bool AsyncCopies(const GemmProblem& g, const WarpGemmParams& p, const Target& t);

// Why p cannot run problem g on t (tiles that do not divide, too much local memory, an element
// type other than f32 and f16), or nullopt. Whether the device has a matrix engine for g's mode
// is the caller's question (Target::mma_sync).
std::optional<std::string> CheckWarpGemmParams(const WarpGemmParams& p, const GemmProblem& g,
                                               const Target& t);
// The heuristic's tiling for g on t; `model`: for ChooseModelWarpGemm, which refines the tiles of
// products too small to fill the device itself. texel_gemm's (not `model`): where the tiles leave
// compute units idle, K is at least 96 steps deep and the device's work-groups can hand results
// over (Target::group_handoff), K split so that the work-groups fill their last wave best, each
// range at least 128 deep.
WarpGemmParams ChooseWarpGemmParams(const GemmProblem& g, const Target& t, bool model = false);
// texel_gemm's split K (p.split_k > 1; models split their own way): why p cannot split g's K on
// t (no hand-over between work-groups, or a split that leaves a range empty), or nullopt.
std::optional<std::string> CheckGemmSplit(const GemmProblem& g, const WarpGemmParams& p,
                                          const Target& t);
// The arrival counters texel_gemm's split kernel for g needs (its tiles; 0 unsplit).
int64_t GemmSplitTiles(const GemmProblem& g, const WarpGemmParams& p);

// g's shape class: every fact the source of GenerateWarpGemm's kernel depends on besides its
// name (transposes, element type, mode, tiles, evenness, alignment, the matrix engine), cheap to
// compute: texel_gemm looks its built kernels up by it.
std::string WarpGemmClass(const GemmProblem& g, const Target& t, const WarpGemmParams& p);
// The launch geometry of g's kernel.
void WarpGemmGeometry(const GemmProblem& g, const WarpGemmParams& p, std::vector<size_t>* global,
                      std::vector<size_t>* local);

// The kernel for g's shape class; spec.args is empty (the caller binds A, B, C and the scalars in
// the template's parameter order, then with K split a float buffer of split_k x batch x m x n
// slices and GemmSplitTiles zeroed ints), global/local cover g.
KernelSpec GenerateWarpGemm(const GemmProblem& g, const std::string& kernel_name, const Target& t,
                            const WarpGemmParams& p);

// A_AT(r, k) and B_AT(k, c): element offsets of op(A)[r, k] and op(B)[k, c] with leading
// dimensions lda and ldb, for the matrix-engine templates (warp_gemm.cl, dpas_gemm.cl); B_AT
// only with define_b (else the caller's: a channels-last image, GemmProblem::gather_at).
void DefineOperandOffsets(KernelSource& src, bool trans_a, bool trans_b, bool define_b = true);

// A model's product as texel_gemm's problem: dense operands.
GemmProblem ModelGemmProblem(const GemmOperands& g);

// Models' matrix products (MatMul and Conv: the scalar kernels' GemmOperands) on the warp-tiled
// kernel: where the product's compute mode is not fp32, the device has a matrix engine (or
// emulates one for tests: Target::mma_emulated), a gathered B (a convolution's image) is stored
// in the mode's operand type (f16 for fp16, f32 otherwise) and the product has at least 16 rows
// and a depth of 256 (a convolution: 64), the tiling to use; else nullopt (the scalar kernels of
// matmul.h run it). A product or convolution whose tiles would not fill the compute units takes
// smaller ones (fp16 and tf32 products 32 x 64; convolutions in every mode 64 x 32 with 2 warp
// groups along K) before K is split.
std::optional<WarpGemmParams> ChooseModelWarpGemm(const GemmOperands& g, const Target& t);
// The tunable family "warp_gemm" (tuning.h) of a model's product that ChooseModelWarpGemm puts
// on the matrix engine (nullopt elsewhere): its tiling first, then tiles of 4 warps (64 x 32,
// 32 x 32, 32 x 64, 64 x 64, 128 x 64, 64 x 128; also with 2 warp groups along K) and 8 (128 x
// 128), BK 16, 32 or 64, the most stages that fit (up to 4 with asynchronous copies, else 2), K
// split 1, 2, 4, 8 or 16 ways (each range at least 64 long) and the split that fills the device
// best. Points {bm, bn, bk, wm, wn, stages, split, kgroups}.
std::optional<Tunable> ModelWarpGemmTunable(const GemmOperands& g, const Target& t);
// The tiling of one of ModelWarpGemmTunable's points.
WarpGemmParams WarpGemmParamsOf(const TunePoint& point);
// The model interface of both matrix-engine templates (warp_gemm.cl's MODEL; wgmma_gemm.cl's
// too): sizes, K in `splits` ranges of `ks`, leading dimensions, batch offsets, OUT_AT, the bias
// of g (GLOAD reads it), and how results are stored: T_C, C_VALUE(p, i, v) (what is stored of v
// at index i, the epilogue's operands read) and C_PUT(p, i, x) (the store). With `fixup`
// (warp_gemm.cl only; K split, not g.partials_only) the slices go to the kernel's `parts` and the
// last work-group of each tile adds them up (FIXUP, FIXUP_PARAMS, OUT_ROWS_FAST, ARRIVE_LAST).
void DefineModelProduct(KernelSource& src, const GemmOperands& g, int64_t splits, int64_t ks,
                        const Target& t, bool fixup = false);
// g's model kernel from src, its geometry left to the caller: the arguments, the slices' scratch
// (split K or g.partials_only), the epilogue applied, the source rendered; with `fixup` (as
// DefineModelProduct's) `tiles` arrival counters in zeroed scratch 1.
KernelSpec ModelProductSpec(KernelSource& src, const GemmOperands& g,
                            const std::string& kernel_name, int64_t splits, const Chain& epilogue,
                            int64_t fixup_tiles = 0);
// The kernel: sizes fixed, the epilogue applied as results are stored; with
// g.partials_only the product alone, as one slice of float sums in scratch 0.
std::vector<KernelSpec> GenerateModelWarpGemm(const GemmOperands& g, const std::string& kernel_name,
                                              const Target& t, const WarpGemmParams& p,
                                              const Chain& epilogue = {});

}  // namespace texel::codegen
