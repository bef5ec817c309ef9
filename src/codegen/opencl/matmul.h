// The MatMul kernels' explicit parameters and the heuristic that picks them (generate_matmul.cpp).
// Two kernels: kernels/matmul.cl, register- and local-memory-tiled, for GPUs; and
// kernels/matmul_direct.cl, a few rows x one vector of columns per work-item read straight from
// global memory, optionally with K split across the work-group: on GPUs for M <= 8 (matrix-
// vector products, classifier and transformer heads), on CPUs for every shape. Parameters stay
// explicit so that a tuner (and bench/gemm_bench) can set them. Products in a reduced-precision
// compute mode take the warp-tiled kernel instead where the device has a matrix engine
// (gemm/model_gemm.h). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codegen/opencl/generator.h"
#include "codegen/opencl/tuning.h"
#include "core/dtype.h"
#include "core/precision.h"

namespace texel::codegen {

// One (batched) product: batch x [m, k] x [k, n].
struct GemmShape {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  DType dtype = DType::kFloat32;
  // B is gathered element by element (convolution's im2col), zero beyond N: vec_b need not
  // divide N.
  bool gather_b = false;
  // A is stored transposed, [k, m] (MatMul's trans_a): read one element at a time (vec_a 1).
  bool trans_a = false;
  bool trans_b = false;  // B is stored transposed, [n, k] (MatMul's trans_b; gathered)
  // How the products compute (ComputeModeOf). Not fp32: the warp-tiled kernel (gemm/warp_gemm.h)
  // where the device has a matrix engine.
  ComputeMode mode = ComputeMode::kFp32;
};

struct MatMulParams {
  enum class Kind { kTiled, kDirect };
  Kind kind = Kind::kTiled;
  // kTiled: a work-group computes a tile_m x tile_n output tile, stepping K by tile_k through
  // double-buffered local memory; each work-item holds a wi_m x wi_n register block, so the
  // work-group is (tile_n / wi_n) x (tile_m / wi_m). vec_a / vec_b: global load widths along K
  // of A and along N of B (K and N must be multiples).
  // kDirect: a work-item computes wi_m rows x wi_n (= vec_b) adjacent columns. Either the
  // work-group is (tile_n / wi_n) x split_k and the split_k (a power of two) work-items of a
  // column share K, adding up through local memory (tile_m == wi_m); or it is
  // (tile_n / wi_n) x (tile_m / wi_m) and, with panel_k > 0, stages panel_k rows of B at a time
  // in local memory for all its rows. tile_k and vec_a are unused.
  // kTiled with split_k > 1: K is cut into split_k ranges (multiples of tile_k) computed by
  // separate work-groups into a scratch buffer, and a second kernel adds them up and applies the
  // bias and the epilogue: for products with too few output tiles to fill the device
  // (transformer layers, late convolution stages). The partial sums are f32 for f16 storage.
  int tile_m = 64, tile_n = 64, tile_k = 8;
  int wi_m = 4, wi_n = 4;
  int vec_a = 1, vec_b = 1;
  int split_k = 1;
  int panel_k = 0;

  int LocalX() const { return tile_n / wi_n; }
  int LocalY() const { return kind == Kind::kDirect && split_k > 1 ? split_k : tile_m / wi_m; }
  std::string ToString()
      const;  // "tiled 128x128x8 wi 8x8 vec 4/4", "direct 1x256 wi 1x4 split 8 panel 0"
};

// The length of each of `splits` K ranges: a multiple of tile_k (the last may be shorter).
int64_t SplitLength(int64_t k, int64_t splits, int tile_k);

// How many K ranges (1 to 16, each at least min_range long) `groups` work-groups per range
// should be cut into so that they fill their last wave on t best: the fewest within 5% of the
// best fill. Products whose tiles alone leave compute units idle (transformer layers).
int SplitsToFill(int64_t groups, int64_t k, int tile_k, int64_t min_range, const Target& t);

// The heuristic choice for shape s on target t (see docs/decisions.md).
MatMulParams ChooseMatMulParams(const GemmShape& s, const Target& t);

// The tunable family "matmul" (tuning.h): the space of MatMulParams that can run s on t, as
// points {kind, tm, tn, tk, wm, wn, va, vb, split, panel}, the heuristic's first. A GPU's
// candidates: the tiled kernel's tiles (kGpuTiles) with K split 1 to 8 ways, and the direct
// kernel for few rows; a CPU's: the direct kernel's row blocks, column vectors per group and
// panel depths.
Tunable MatMulTunable(const GemmShape& s, const Target& t);
MatMulParams MatMulParamsOf(const TunePoint& p);
// ChooseMatMulParams, or t.tuning's point (Choose, tuning.h).
MatMulParams TunedMatMulParams(const GemmShape& s, const Target& t);
// The family of MatMul node n on t: warp_gemm where the matrix engine computes it (gemm/
// model_gemm.h ModelGemmTunable), else matmul.
std::optional<Tunable> MatMulNodeTunable(const ir::Node& n, const Target& t);

// Why p cannot run s on t (tiles that do not divide, vector widths that do not divide K or N,
// too much local memory, too many work-items), or nullopt when it can.
std::optional<std::string> CheckMatMulParams(const MatMulParams& p, const GemmShape& s,
                                             const Target& t);

// Where a GEMM's operands live when they are more than row-major matrices: convolution runs
// as an implicit GEMM (generate_conv.cpp) with the filters as A and the image as B.
struct GemmOperands {
  GemmShape shape;
  std::string a_offset = "0", b_offset = "0";  // element offsets of batch (b)'s A and B
  // Body of `TVB load_b(const __global T_STORE_B* p, int k, int col)`, which returns VB elements
  // of B's row k from column col (p points at batch b's B); empty: B is row-major [K, N].
  // It may use the macros TVB, VB, ELEM(v, e), LOAD_E(p, i) (an element as the kernel stages
  // it: a float in the scalar kernels, f16 bits in the warp-tiled one's fp16) and its defines.
  std::string load_b;
  std::vector<std::pair<std::string, std::string>> defines;  // macros for load_b
  // The same gather split in two for the warp-tiled kernel, whose work-items keep their columns
  // at every step of K (empty: it calls load_b at every step): gather_init is the body of
  // `GATHER_T init(int col)`, which computes what VB columns from col need of it once
  // (GATHER_T: a struct of gather_fields), gather_load the body of `TVB load(const __global
  // T_STORE_B* p, int k, const GATHER_T* s)`, which loads row k's elements with it.
  std::string gather_fields, gather_init, gather_load;
  std::string bias;       // element index (an expression in b and row) of a bias per row, or ""
  std::vector<int> args;  // value ids bound to a, b[, bias], out
  const ir::Value* out = nullptr;
  // The product goes to scratch 0 as its K slices (one when K is not split), with no bias,
  // epilogue or sum kernel: the consumer adds them up (a LayerNorm's prologue).
  bool partials_only = false;
  bool convolution = false;  // a convolution's implicit GEMM (B is its image)
  // B (a gathered image) is stored f32 while the product is f16: a graph input that the
  // convolution converts as it gathers it (ConvReadsF32Image). T_STORE_B is B's storage type.
  bool b_f32 = false;
  // > 0: the columns are images x `fold` pixels (a convolution's images folded into N, so that
  // small images fill the tiles), and C(b, row, col) is stored at ((col / fold * batch + b) * m
  // + row) * fold + col % fold, NCHW. Never with partials_only (the slices stay row-major).
  int64_t fold = 0;
  // A channels-last convolution (passes/channels_last.cpp): B is its NHWC image read as [N, K]
  // (N = images x output pixels, K = taps x channels, shape.trans_b) whose chunks the defines'
  // B_AT(k, c) and B_INSIDE(k, c) address, on the warp-tiled kernel only; C(row, col) is stored
  // at col * m + row, NHWC.
  bool channels_last = false;
};

// Whether g's product kernel leaves its sums as float slices in scratch 0 (K split `splits` ways,
// or g.partials_only), their bias and epilogue left to the kernel that adds them up.
inline bool LeavesSlices(const GemmOperands& g, int64_t splits) {
  return splits > 1 || g.partials_only;
}

// OUT_AT(b, r, c): the flat index of C(b, r, c) in g's output (row-major, g.fold's NCHW, or
// g.channels_last's NHWC), the index its stores and the epilogue use; row-major where `folded`
// is false (split-K slices).
void DefineOutputIndex(KernelSource& src, const GemmOperands& g, bool folded);

// LOAD_B(p, k, col): g.load_b as a function of the kernel's, with g.defines; the caller defines
// TVB, VB, ELEM, LOAD_E and T_STORE_B. With `hoisted` and g.gather_init, also GATHER_T,
// GATHER_INIT(col) and GATHER_LOAD(p, k, s) (GATHER_HOISTED 1).
void DefineLoadB(KernelSource& src, const GemmOperands& g, const std::string& kernel_name,
                 bool hoisted = false);

// The kernels for g with explicit parameters (CheckMatMulParams must pass: kInvalidArgument):
// one, or two with split-K.
std::vector<KernelSpec> GenerateGemm(const GemmOperands& g, const std::string& kernel_name,
                                     const Target& target, const MatMulParams& params,
                                     const Chain& epilogue = {});

// The second kernel of a product split along K into `splits` slices of sums in scratch 0 (f32, or
// f64): adds them up, adds g's bias and applies the epilogue.
KernelSpec GenerateSplitSum(const GemmOperands& g, const std::string& kernel_name, int64_t splits,
                            const Chain& epilogue);
// A product kernel's specs: {spec}, or with split K (and not g.partials_only) {spec, the sum
// kernel adding the slices up}. Every product kernel (scalar, warp-tiled, warpgroup) ends so.
std::vector<KernelSpec> WithSplitSum(KernelSpec spec, const GemmOperands& g, int64_t splits,
                                     const Chain& epilogue);

// The heuristic's product for MatMul n as partial slices only (GemmOperands::partials_only):
// its kernel, and in *slices how many slices of n's output shape it leaves in scratch 0.
KernelSpec GenerateMatMulPartials(const ir::Node& n, const std::string& kernel_name,
                                  const Target& target, int64_t* slices);

// GenerateMatMul with explicit parameters (CheckMatMulParams must pass: kInvalidArgument).
std::vector<KernelSpec> GenerateMatMulWith(const ir::Node& node, const std::string& kernel_name,
                                           const Target& target, const MatMulParams& params,
                                           const Chain& epilogue = {});

// How MatMul node n computes: its "compute_mode" (passes/precision.cpp), else fp16 on f16
// storage and fp32 otherwise.
ComputeMode ComputeModeOf(const ir::Node& n);

// The shape of MatMul node n (batch dims broadcast).
GemmShape GemmShapeOf(const ir::Node& n);

}  // namespace texel::codegen
