// Matrix-engine GEMM kernels (gemm/mma.h, kernels/warp_gemm.cl).
#include "codegen/opencl/gemm/warp_gemm.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

int MmaDepth(ComputeMode m) { return m == ComputeMode::kFp16 ? 16 : 8; }

// The shallowest product the warp-tiled kernel takes in models: on the H100 it was slower than
// the scalar tiled kernel at K = 64 and 128 (ResNet-50's 1x1 convolutions, 1.1-2x), faster at
// K >= 768 (BERT's and ViT's layers, docs/precision.md).
constexpr int64_t kMinDepth = 256;
// Convolutions (their image as B, gathered or not) pay from shallower depths in fp16 on the H100:
// ResNet-50's 7x7 stem (K = 147) 18 us against 40 on the scalar kernel; its 1x1 convolutions of
// 64 channels even at batch 1 and 1.5x faster at batch 32 (docs/precision.md).
constexpr int64_t kMinConvDepth = 64;

// The shortest K range a split product gives a work-group: shorter ones spend more on the
// pipeline's start and the slices' sum than they gain.
constexpr int64_t kMinRange = 128;
// The fewest steps along K (of BK) that texel_gemm splits. On the H200 (docs/precision.md)
// splitting made every product of 128 steps or more faster (128 x 768 x 3072 tf32, 192 steps:
// 90 -> 36 us; fp16, 96 steps: 26 -> 21 us) and every one of 48 or fewer slower (128 x 3072 x 768
// fp16, 24 steps: 9 -> 19 us): the slices' stores and the last group's sum cost more than a few
// steps do. fp16 at 64 steps (K = 2048) measured alike either way.
constexpr int64_t kMinSplitSteps = 96;

// The split product's fixup (warp_gemm.cl): the last work-group of a tile adds the slices up;
// its work-items take adjacent rows (NHWC outputs) or columns.
void DefineFixup(KernelSource& src, const Target& t, bool fixup, bool rows_fast) {
  src.Define("FIXUP", fixup);
  src.Define("FIXUP_PARAMS", fixup ? ", __global float* parts, __global int* counters" : "");
  src.Define("OUT_ROWS_FAST", rows_fast);
  if (fixup) DefineArrival(src, t);
}

bool Even(const GemmProblem& g, const WarpGemmParams& p) {
  return g.m % p.bm == 0 && g.n % p.bn == 0 && g.k % p.bk == 0 && g.k > 0;
}

int64_t GroupSize(const WarpGemmParams& p) {
  return static_cast<int64_t>(p.bm / p.wm) * (p.bn / p.wn) * p.kgroups * 32;
}

// The local memory of p's stages (the template's smem): A and B tiles as staged, padded rows.
uint64_t StageBytes(const WarpGemmParams& p, const GemmProblem& g, bool async) {
  bool f16 = g.mode == ComputeMode::kFp16;
  uint64_t eb = f16 ? 2 : 4, ls = static_cast<uint64_t>(p.bk + (f16 ? 8 : 4));
  uint64_t a_tile = async && g.trans_a ? p.bk * (p.bm + 8ull) : p.bm * ls;
  uint64_t b_tile = async && !g.trans_b ? p.bk * (p.bn + 8ull) : p.bn * ls;
  return p.stages * (a_tile + b_tile) * eb;
}

// Whether the template stores C through the stages' local memory (STAGED): 16 rows of each
// warp's block at a time, WN + 8 floats per row. Only work-groups of up to 4 warps: on the H100
// (docs/precision.md) staging made 4-warp tiles faster (n = 1024 fp16 98 -> 107 TFLOP/s,
// BERT-base fp16 0.240 -> 0.225 ms), but it took 8-warp 128 x 128 tiles past 128 registers
// (126 -> 159), so past 2 work-groups per compute unit: ResNet-50's 1x1 convolutions at batch 32
// ran 2.7x slower.
bool StagedStore(const WarpGemmParams& p, const GemmProblem& g, const Target& t) {
  int64_t tile_warps = GroupSize(p) / 32 / p.kgroups;  // group 0 along K stores
  // Not for a channels-last result, whose rows are strided (the staging stores runs of a row).
  return tile_warps <= 4 && !g.gather_at &&
         tile_warps * 16 * (p.wn + 8ull) * 4 <= StageBytes(p, g, AsyncCopies(g, p, t));
}

}  // namespace

bool Aligned(int64_t offset, int64_t ld, int64_t stride, int64_t batch, int64_t elems) {
  return offset % elems == 0 && ld % elems == 0 && (batch == 1 || stride % elems == 0);
}

std::string WarpGemmParams::ToString() const {
  return fmt::format("warp {}x{}x{} / {}x{}{}{}{}{}", bm, bn, bk, wm, wn,
                     stages != 2 ? fmt::format(" s{}", stages) : "",
                     split_k != 1 ? fmt::format(" split {}", split_k) : "",
                     kgroups != 1 ? fmt::format(" kg {}", kgroups) : "", raw_tf32 ? " raw" : "");
}

bool AsyncCopies(const GemmProblem& g, const WarpGemmParams& p, const Target& t) {
  // The emulation (no PTX) copies the same tiles synchronously, so that a CPU checks their layouts.
  if (!(t.mma_sync || t.mma_emulated) || g.mode == ComputeMode::kFp32 || g.k == 0 || g.gather_b)
    return false;
  bool half = g.elem == DType::kFloat16;
  if (half != (g.mode == ComputeMode::kFp16)) return false;
  int64_t chunk = half ? 8 : 4;  // elements per 16 bytes
  // Edge tiles: a chunk is wholly inside the matrix or wholly outside (zeros).
  int64_t a_row = g.trans_a ? g.m : g.k, b_row = g.trans_b ? g.k : g.n;
  if (!Even(g, p) && (a_row % chunk != 0 || b_row % chunk != 0)) return false;
  return Aligned(g.a_offset, g.lda, g.stride_a, g.batch, chunk) &&
         Aligned(g.b_offset, g.ldb, g.stride_b, g.batch, chunk);
}

std::optional<std::string> CheckWarpGemmParams(const WarpGemmParams& p, const GemmProblem& g,
                                               const Target& t) {
  if (g.elem != DType::kFloat32 && g.elem != DType::kFloat16)
    return fmt::format("elements of {}: want f32 or f16", DTypeName(g.elem));
  if (p.wm <= 0 || p.wn <= 0 || p.wm % 16 != 0 || p.wn % 8 != 0)
    return fmt::format("warp tile {}x{}: want multiples of 16 x 8", p.wm, p.wn);
  if (p.bm <= 0 || p.bn <= 0 || p.bm % p.wm != 0 || p.bn % p.wn != 0)
    return fmt::format("tile {}x{} is not whole warp tiles of {}x{}", p.bm, p.bn, p.wm, p.wn);
  if (g.mode != ComputeMode::kFp32 && p.wn % 16 != 0)
    return fmt::format("warp tile width {}: {} wants a multiple of 16 (B by pairs of tiles)", p.wn,
                       ComputeModeName(g.mode));
  int depth = MmaDepth(g.mode);
  if (p.bk <= 0 || p.bk % depth != 0)
    return fmt::format("tile depth {}: want a multiple of {}", p.bk, depth);
  if (p.kgroups != 1 && p.kgroups != 2 && p.kgroups != 4)
    return fmt::format("{} warp groups along K: want 1, 2 or 4", p.kgroups);
  if (p.bk / depth % p.kgroups != 0)
    return fmt::format("tile depth {}: {} blocks of {} do not share out over {} warp groups", p.bk,
                       p.bk / depth, depth, p.kgroups);
  int64_t wg = GroupSize(p);
  if (static_cast<size_t>(wg) > t.max_work_group_size)
    return fmt::format("{} work-items per group, the device takes {}", wg, t.max_work_group_size);
  bool async = AsyncCopies(g, p, t);
  if (!async && ((p.bm * p.bk) % (4 * wg) != 0 || (p.bn * p.bk) % (4 * wg) != 0))
    return fmt::format("tiles {}x{} and {}x{} do not share out in fours over {} work-items", p.bm,
                       p.bk, p.bn, p.bk, wg);
  if (!async && p.stages != 2)
    return fmt::format("{} stages: only asynchronous copies take other than 2", p.stages);
  if (p.stages < 2 || p.stages > 8) return fmt::format("{} stages: want 2 to 8", p.stages);
  if (p.split_k < 1 || p.split_k > 64) return fmt::format("split {}: want 1 to 64", p.split_k);
  // Asynchronous copies: whole 16-byte chunks along k (the kernel shares them out over the
  // work-items however many there are).
  int64_t chunk = g.mode == ComputeMode::kFp16 ? 8 : 4;
  if (async && p.bk % chunk != 0)
    return fmt::format("tile depth {}: asynchronous copies want multiples of {} (16 bytes)", p.bk,
                       chunk);
  uint64_t local = StageBytes(p, g, async);
  if (local > t.local_mem_bytes)
    return fmt::format("{} bytes of local memory, the device has {}", local, t.local_mem_bytes);
  // The groups along K add up their sums in the stages' local memory.
  if ((p.kgroups - 1ull) * p.bm * p.bn * 4 > local)
    return fmt::format("{} warp groups along K: their sums need more than the stages' {} bytes",
                       p.kgroups, local);
  return std::nullopt;
}

namespace {

// ChooseWarpGemmParams' tiling, or nullopt where none fits the device.
std::optional<WarpGemmParams> FittingWarpGemmParams(const GemmProblem& g, const Target& t,
                                                    bool model) {
  // 128 x 128 tiles, 2 stages (a third would pass 48 KiB); where 128 x 128 tiles would leave
  // compute units idle, 64 x 64 with 4 stages in fp16, 128 x 64 with 3 otherwise. Measured on
  // the H100 (texel_gemm_bench --warp, docs/precision.md): at n = 4096 128 x 128 is the fastest
  // of nine tilings in tf32 and fp16; at n = 1024 128 x 64 is 1.5x faster than 128 x 128.
  WarpGemmParams p;
  bool f16 = g.mode == ComputeMode::kFp16;
  p.bk = f16 ? 32 : 16;
  int64_t tiles = (g.m + p.bm - 1) / p.bm * ((g.n + p.bn - 1) / p.bn) * g.batch;
  if (tiles < static_cast<int64_t>(t.compute_units) && f16 && !model) {
    // n = 1024 on the H100 (with the staged result stores): 124-126 TFLOP/s against 105-108
    // with 128 x 64 tiles. Not for models, whose few tiles ChooseModelWarpGemm refines: BERT,
    // ViT and ResNet-50 in fp16 were 1-10% slower with it.
    p.bm = p.bn = 64, p.wm = p.wn = 32, p.stages = 4;
  } else if (tiles < static_cast<int64_t>(t.compute_units)) {
    p.bn = 64;
    p.stages = 3;  // with asynchronous copies; else (below) 2
  } else if (g.mode == ComputeMode::kTf32) {
    p.wn = 64;  // 4 warps of 64 x 64 (n = 4096: 117-130 TFLOP/s against 83-118 with 8 of 64 x 32)
  } else if (g.mode == ComputeMode::kTf32x3) {
    p.bk = 8, p.wn = 64, p.stages = 4;  // n = 4096: 54-59 TFLOP/s against 45-47 (BK 16, 64 x 32)
  }
  // A side of at most 64 (ResNet-50's 64-channel convolutions, its 7 x 7 images per batch):
  // 64-wide tiles, where half a 128-wide one would be zeros.
  if (g.m <= 64) p.bm = 64, p.wm = 32;
  if (g.n <= 64) p.bn = 64, p.wn = 32;
  if (!AsyncCopies(g, p, t) || CheckWarpGemmParams(p, g, t)) p.stages = 2;
  // Smaller devices (less local memory, smaller work-groups): the first tiling that fits.
  for (WarpGemmParams q :
       {p, WarpGemmParams{64, 64, p.bk, 32, 32, 2}, WarpGemmParams{32, 32, p.bk, 16, 16, 2}})
    if (!CheckWarpGemmParams(q, g, t)) return q;
  return std::nullopt;
}

}  // namespace

WarpGemmParams ChooseWarpGemmParams(const GemmProblem& g, const Target& t, bool model) {
  std::optional<WarpGemmParams> p = FittingWarpGemmParams(g, t, model);
  if (!p)
    Fail(ErrorCode::kUnsupported,
         "no warp-tiled GEMM tiling fits this device ({} bytes of local memory, {} work-items "
         "per group)",
         t.local_mem_bytes, t.max_work_group_size);
  // texel_gemm: a problem of few tiles and deep K (a transformer layer's 128 rows) splits K, as
  // models do (ChooseModelWarpGemm), with the split as many ranges as K then makes.
  int64_t tiles = CeilDiv(g.m, p->bm) * CeilDiv(g.n, p->bn) * g.batch;
  if (!model && t.group_handoff && tiles < static_cast<int64_t>(t.compute_units) &&
      g.k >= kMinSplitSteps * p->bk) {
    int split = SplitsToFill(tiles, g.k, p->bk, kMinRange, t);
    p->split_k = static_cast<int>(CeilDiv(g.k, SplitLength(g.k, split, p->bk)));
  }
  return *p;
}

namespace {

// The template's parameters shared by texel_gemm's and the models' kernels: tiling, mode,
// transposes, evenness, alignment and the load helpers. Element storage is the caller's.
KernelSource WarpSource(const GemmProblem& g, const std::string& kernel_name, const Target& t,
                        const WarpGemmParams& p) {
  if (auto why = CheckWarpGemmParams(p, g, t))
    Fail(ErrorCode::kInvalidArgument, "{}: {}", p.ToString(), *why);
  KernelSource src(kernel_name, "warp_gemm");
  bool half = g.elem == DType::kFloat16;
  bool even = Even(g, p), async = AsyncCopies(g, p, t);
  bool align_a = Aligned(g.a_offset, g.lda, g.stride_a, g.batch, 4);
  bool align_b = g.gather_b || Aligned(g.b_offset, g.ldb, g.stride_b, g.batch, 4);
  int mode = g.mode == ComputeMode::kFp32     ? 0
             : g.mode == ComputeMode::kTf32   ? 1
             : g.mode == ComputeMode::kTf32x3 ? 3
                                              : 16;
  src.Define("BM", p.bm).Define("BN", p.bn).Define("BK", p.bk);
  src.Define("WM", p.wm).Define("WN", p.wn).Define("KGROUPS", p.kgroups);
  src.Define("MODE", mode).Define("RAW_TF32", p.raw_tf32);
  src.Define("MMA_PTX", t.mma_sync).Define("EVEN", even).Define("ASYNC", async);
  if (async) DefineAsyncCopy(src, t);
  DefineMatrixEngine(src, t);
  src.Define("STAGES", p.stages).Define("PENDING", p.stages - 2);
  src.Define("STAGED", StagedStore(p, g, t));
  src.Define("TRANS_A", g.trans_a).Define("TRANS_B", g.trans_b).Define("GATHER_B", g.gather_b);
  src.Define("GATHER_F32", g.gather_f32);
  DefineOperandOffsets(src, g.trans_a, g.trans_b, !g.gather_at);  // else B_AT is the caller's
  // 4-wide loads along each operand's contiguous dimension; unaligned ones (f16, or an offset or
  // stride off the 4-element grid) as vload4, which the compiler may split.
  src.Define("VEC_A", 4).Define("VEC_B", 4);
  src.Define("GLOAD(p, i)", half ? "vload_half((i), (p))" : "(p)[i]");
  src.Define("GSTORE(p, i, v)", half ? "vstore_half_rte((v), (i), (p))" : "(p)[i] = (v)");
  auto load4 = [&](bool aligned) -> std::string {
    if (half) return "vload_half4(0, (p) + (i))";
    return aligned ? "(*(__global const float4*)((p) + (i)))" : "vload4(0, (p) + (i))";
  };
  // GLOAD4 is used for A and B alike: aligned only when both are.
  src.Define("GLOAD4(p, i)", load4(align_a && align_b));
  src.Define("F16_STORAGE", half);
  src.Define("TO_TF32", kernel_name + "_to_tf32").Define("ROUND_TF32", kernel_name + "_round_tf32");
  src.Define("TO_F16", kernel_name + "_to_f16");
  return src;
}

void SetGeometry(const GemmProblem& g, const WarpGemmParams& p, KernelSpec& spec) {
  WarpGemmGeometry(g, p, &spec.global, &spec.local);
  spec.flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
               static_cast<double>(g.k) * static_cast<double>(g.batch);
}

}  // namespace

// The batch offsets are multiples of a matrix, which is what the alignment checks need.
GemmProblem ModelGemmProblem(const GemmOperands& o) {
  const GemmShape& s = o.shape;
  GemmProblem g;
  g.m = s.m, g.n = s.n, g.k = s.k, g.batch = s.batch;
  g.trans_a = s.trans_a, g.trans_b = s.trans_b;
  g.lda = s.trans_a ? s.m : s.k;
  g.ldb = s.trans_b ? s.k : s.n;
  g.ldc = s.n;
  g.stride_a = s.m * s.k, g.stride_b = s.k * s.n, g.stride_c = s.m * s.n;
  g.elem = s.dtype;
  g.mode = s.mode;
  g.gather_b = !o.load_b.empty() && !s.trans_b;  // a transposed B is a matrix: TRANS_B reads it
  g.gather_f32 = g.gather_b && o.b_f32;
  g.gather_at = o.channels_last;
  return g;
}

void DefineOperandOffsets(KernelSource& src, bool trans_a, bool trans_b, bool define_b) {
  src.Define("A_AT(r, k)", trans_a ? "((long)(k) * lda + (r))" : "((long)(r) * lda + (k))");
  if (define_b)
    src.Define("B_AT(k, c)", trans_b ? "((long)(c) * ldb + (k))" : "((long)(k) * ldb + (c))");
}

void WarpGemmGeometry(const GemmProblem& g, const WarpGemmParams& p, std::vector<size_t>* global,
                      std::vector<size_t>* local) {
  size_t wg = static_cast<size_t>(GroupSize(p));
  *global = {static_cast<size_t>((g.n + p.bn - 1) / p.bn) * wg,
             static_cast<size_t>((g.m + p.bm - 1) / p.bm),
             static_cast<size_t>(g.batch) * static_cast<size_t>(p.split_k)};
  *local = {wg, 1, 1};
}

std::optional<std::string> CheckGemmSplit(const GemmProblem& g, const WarpGemmParams& p,
                                          const Target& t) {
  if (p.split_k == 1) return std::nullopt;
  if (!t.group_handoff)
    return fmt::format(
        "{}: split K needs work-groups that can hand results over (this device's "
        "are not known to)",
        p.ToString());
  int64_t ranges = g.k > 0 ? CeilDiv(g.k, SplitLength(g.k, p.split_k, p.bk)) : 0;
  if (ranges != p.split_k)
    return fmt::format("{}: k = {} in ranges of whole {}-deep steps makes {} ranges, not {}",
                       p.ToString(), g.k, p.bk, ranges, p.split_k);
  return std::nullopt;
}

int64_t GemmSplitTiles(const GemmProblem& g, const WarpGemmParams& p) {
  return p.split_k > 1 ? CeilDiv(g.m, p.bm) * CeilDiv(g.n, p.bn) * g.batch : 0;
}

std::string WarpGemmClass(const GemmProblem& g, const Target& t, const WarpGemmParams& p) {
  // Every input of WarpSource but the kernel name (alignment picks f32 loads only).
  bool aligned = g.elem == DType::kFloat32 && Aligned(g.a_offset, g.lda, g.stride_a, g.batch, 4) &&
                 Aligned(g.b_offset, g.ldb, g.stride_b, g.batch, 4);
  return fmt::format("{} t{}{} {} {} mma{} even{} async{} aligned{}", p.ToString(), int{g.trans_a},
                     int{g.trans_b}, DTypeName(g.elem), ComputeModeName(g.mode), int{t.mma_sync},
                     int{Even(g, p)}, int{AsyncCopies(g, p, t)}, int{aligned});
}

KernelSpec GenerateWarpGemm(const GemmProblem& g, const std::string& kernel_name, const Target& t,
                            const WarpGemmParams& p) {
  if (auto why = CheckGemmSplit(g, p, t)) Fail(ErrorCode::kInvalidArgument, "{}", *why);
  KernelSource src = WarpSource(g, kernel_name, t, p);
  src.Define("MODEL", 0).Define("T_STORE", g.elem == DType::kFloat16 ? "half" : "float");
  src.Define("SPLITS", p.split_k);
  DefineFixup(src, t, p.split_k > 1, false);
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  SetGeometry(g, p, spec);
  return spec;
}

namespace {

// Lowers p->stages, down to 2, until asynchronous copies run p and it fits the device: a
// model's tiling with as many stages as its local memory holds.
void FitStages(WarpGemmParams* p, const GemmProblem& g, const Target& t) {
  while (p->stages > 2 && (!AsyncCopies(g, *p, t) || CheckWarpGemmParams(*p, g, t))) --p->stages;
}

}  // namespace

std::optional<WarpGemmParams> ChooseModelWarpGemm(const GemmOperands& g, const Target& t) {
  const GemmShape& s = g.shape;
  // The matrix engine for a reduced-precision product deep enough; products of a few rows stay
  // with the direct kernel, which reads each weight once.
  GemmProblem problem = ModelGemmProblem(g);
  if (s.mode == ComputeMode::kFp32 || !(t.mma_sync || t.mma_emulated) || s.m < 16 ||
      s.k < (g.convolution ? kMinConvDepth : kMinDepth) ||
      (s.dtype != DType::kFloat32 && s.dtype != DType::kFloat16))
    return std::nullopt;
  // A gathered B is staged as it is stored (LOAD_E): in the mode's operand type.
  if (problem.gather_b && (s.dtype == DType::kFloat16) != (s.mode == ComputeMode::kFp16))
    return std::nullopt;
  // No tiling that fits: the other kernels (support checks never see this refusal).
  std::optional<WarpGemmParams> fits = FittingWarpGemmParams(problem, t, true);
  if (!fits || CheckWarpGemmParams(*fits, problem, t)) return std::nullopt;
  WarpGemmParams p = *fits;
  int64_t groups = CeilDiv(s.m, p.bm) * CeilDiv(s.n, p.bn) * s.batch;
  // Too few tiles to fill the device (a transformer layer's 128-256 rows, a convolution's
  // channels by a small image): smaller tiles of 4 warps, as deep as they fit, before any split of
  // K. Measured on the H100 in fp16 (docs/precision.md) against the 128 x 64 tiles with K split:
  // products 32 x 64 (5 stages): BERT-base 0.31 -> 0.24 ms, ViT-B/16 1.12 -> 0.94; convolutions
  // 64 x 32, twice as deep (3 stages where B is copied as stored): ResNet-50 0.87 -> 0.69,
  // ResNet-18 0.42 -> 0.33. Products: 32 x 32, 64 x 32, 32 x 128 and 2-warp 32 x 64 tiles, and 3
  // or 4 stages, were slower; convolutions: 32 x 64, 32 x 32, 64 x 64, 64 x 16, 2-warp 64 x 32
  // and 64 x 32 of BK 16 or 32 (0.72-0.82 ms on ResNet-50), 128 x 32 alike (0.70).
  // The f32 modes' convolutions alike (rows of 128 bytes, as fp16's), and tf32's products with BK
  // 32 in 3 stages. H200, batch 1, against 128 x 64 tiles with K split: ResNet-50 in tf32 1.31 ->
  // 0.60 ms (BK 16 in 4 stages 0.63-0.64, one warp group 0.68-0.69, 64 x 64 tiles 0.74), tf32x3
  // 1.48 -> 0.72-0.74; BERT-base in tf32 0.46 -> 0.37 (fp16's BK 32 in 5 stages: 0.39). tf32x3's
  // products of few tiles (2^30 multiply-adds or more, kTf32x3MinMacs) were not measured so.
  bool f16 = s.mode == ComputeMode::kFp16;
  if (groups < static_cast<int64_t>(t.compute_units) &&
      (g.convolution || s.mode != ComputeMode::kTf32x3)) {
    WarpGemmParams small = g.convolution ? WarpGemmParams{64, 32, 2 * p.bk, 32, 16, 3}
                           : f16         ? WarpGemmParams{32, 64, p.bk, 16, 32, 5}
                                         : WarpGemmParams{32, 64, 2 * p.bk, 16, 32, 3};
    // Convolutions with two warp groups along K (8 warps on each 64 x 32 tile): their image is
    // gathered through registers, and twice the warps hide those loads. On the H200
    // (docs/precision.md) ResNet-50 0.677-0.683 -> 0.587-0.629 ms, ResNet-18 0.328-0.332 ->
    // 0.269-0.275; products, whose tiles go by cp.async, gained nothing (BERT-base, ViT-B/16 and
    // Swin-T alike or slower).
    if (g.convolution) {
      WarpGemmParams two = small;
      two.kgroups = 2;
      FitStages(&two, problem, t);
      if (!CheckWarpGemmParams(two, problem, t)) small = two;
    }
    FitStages(&small, problem, t);
    if (!CheckWarpGemmParams(small, problem, t)) p = small;
    groups = CeilDiv(s.m, p.bm) * CeilDiv(s.n, p.bn) * s.batch;
  }
  // Still too few: split K so that the work-groups fill their last wave best (the fewest splits
  // within 5% of the best fill), each range at least kMinRange long, as the scalar kernels do
  // (matmul.h).
  if (groups < static_cast<int64_t>(t.compute_units))
    p.split_k = SplitsToFill(groups, s.k, p.bk, kMinRange, t);
  return p;
}

namespace {

constexpr int kFamilyVersion = 2;  // 2: kgroups

TunePoint PointOf(const WarpGemmParams& p) {
  return {{"bm", p.bm}, {"bn", p.bn},         {"bk", p.bk},         {"wm", p.wm},
          {"wn", p.wn}, {"stages", p.stages}, {"split", p.split_k}, {"kgroups", p.kgroups}};
}

}  // namespace

WarpGemmParams WarpGemmParamsOf(const TunePoint& q) {
  WarpGemmParams p;
  p.bm = static_cast<int>(q.at("bm")), p.bn = static_cast<int>(q.at("bn"));
  p.bk = static_cast<int>(q.at("bk")), p.wm = static_cast<int>(q.at("wm"));
  p.wn = static_cast<int>(q.at("wn")), p.stages = static_cast<int>(q.at("stages"));
  p.split_k = static_cast<int>(q.at("split"));
  p.kgroups = static_cast<int>(q.at("kgroups"));
  return p;
}

std::optional<Tunable> ModelWarpGemmTunable(const GemmOperands& g, const Target& t) {
  std::optional<WarpGemmParams> heuristic = ChooseModelWarpGemm(g, t);
  if (!heuristic) return std::nullopt;
  const GemmShape& s = g.shape;
  GemmProblem problem = ModelGemmProblem(g);
  Tunable tn;
  tn.family = "warp_gemm";
  tn.version = kFamilyVersion;
  tn.signature = fmt::format(
      "m={},n={},k={},batch={},ta={},tb={},dtype={},mode={},gather={},conv={},fold={},b32={}{}",
      s.m, s.n, s.k, s.batch, s.trans_a, s.trans_b, DTypeName(s.dtype), ComputeModeName(s.mode),
      problem.gather_b, g.convolution, g.fold, g.b_f32, g.channels_last ? ",nhwc=1" : "");
  tn.candidates.push_back(PointOf(*heuristic));
  // Tiles with their warps' blocks: 4 warps each but the last.
  const int tiles[][4] = {{64, 32, 32, 16},  {32, 32, 16, 16},  {32, 64, 16, 32},  {64, 64, 32, 32},
                          {128, 64, 64, 32}, {64, 128, 32, 64}, {128, 128, 64, 32}};
  for (const auto& [bm, bn, wm, wn] : tiles)
    for (int bk : {16, 32, 64})
      for (int kgroups : {1, 2}) {
        if (kgroups > 1 && (bm / wm) * (bn / wn) != 4) continue;  // 4-warp tiles only
        WarpGemmParams p{bm, bn, bk, wm, wn, 4};
        p.kgroups = kgroups;
        FitStages(&p, problem, t);
        if (CheckWarpGemmParams(p, problem, t)) continue;
        int64_t groups = CeilDiv(s.m, p.bm) * CeilDiv(s.n, p.bn) * s.batch;
        std::vector<int> splits = {1, 2, 4, 8, 16};
        if (groups < static_cast<int64_t>(t.compute_units))
          splits.push_back(SplitsToFill(groups, s.k, p.bk, kMinRange, t));
        for (int split : splits) {
          if (split > 1 && SplitLength(s.k, split, p.bk) < 64) continue;
          p.split_k = split;
          TunePoint point = PointOf(p);
          if (std::find(tn.candidates.begin(), tn.candidates.end(), point) == tn.candidates.end())
            tn.candidates.push_back(point);
        }
      }
  return tn;
}

void DefineModelProduct(KernelSource& src, const GemmOperands& g, int64_t splits, int64_t ks,
                        const Target& t, bool fixup) {
  const GemmShape& s = g.shape;
  GemmProblem problem = ModelGemmProblem(g);
  bool partials = LeavesSlices(g, splits);
  TEXEL_CHECK(!fixup || (splits > 1 && !g.partials_only), "a fixup adds split-K slices up");
  // Whether this kernel writes the output (through the bias and epilogue), itself or by fixup.
  bool output = !partials || fixup;
  src.Define("MODEL", 1).Define("PARTIALS", partials);
  src.Define("M", s.m).Define("N", s.n).Define("K", s.k).Define("BATCH", s.batch);
  src.Define("SPLITS", splits).Define("KS", ks);
  src.Define("lda", problem.lda).Define("ldb", problem.ldb);
  src.Define("A_OFF(b)", g.a_offset).Define("B_OFF(b)", g.b_offset);
  // A fixup's slices are laid out as the output, so that it reads them at the output's index.
  DefineOutputIndex(src, g, output);
  // The bias per row in the product's kernel, or with partial sums in the sum kernel.
  bool bias = !g.bias.empty() && output;
  src.Define("BIAS_PARAM", bias ? ", __global const T_STORE* restrict bias_p" : "");
  src.Define("BIAS(b, row)", bias ? "GLOAD(bias_p, " + g.bias + ")" : "0");
  // How a result is stored (z, r: the batch and the row in its matrix, in scope where results
  // are stored): a slice's float sum, or through the bias and epilogue. Apart, so that the
  // templates compute a work-item's values before they store any (warp_gemm.cl says why).
  src.Define("T_C", output ? "EPILOGUE_T" : "float");
  src.Define("C_VALUE(p, i, v)", partials ? "(v)" : "EPILOGUE((v) + BIAS(z, r), i)");
  src.Define("C_PUT(p, i, x)", partials ? "((p)[i] = (x))" : "EPILOGUE_STORE(p, i, x)");
  DefineFixup(src, t, fixup, g.channels_last);
}

KernelSpec ModelProductSpec(KernelSource& src, const GemmOperands& g,
                            const std::string& kernel_name, int64_t splits, const Chain& epilogue,
                            int64_t fixup_tiles) {
  bool partials = LeavesSlices(g, splits), output = !partials || fixup_tiles > 0;
  KernelSpec spec;
  spec.name = kernel_name;
  int64_t outputs = g.shape.batch * g.shape.m * g.shape.n;
  // Partial products: slices of float sums in scratch 0, as the scalar kernels leave them, with
  // the epilogue in the sum kernel (or the fixup, whose slices and counters follow the
  // epilogue's operands).
  spec.args = output ? g.args : std::vector<int>{g.args[0], g.args[1], -1};
  if (partials) spec.scratch_bytes = {splits * outputs * 4};
  // The templates hold each result in its float accumulator before storing it.
  TEXEL_CHECK(!output || ValueTypeName(ChainResultType(g.out, epilogue)) == "float",
              "a product's epilogue computes a float");
  ApplyEpilogue(src, kernel_name, g.out, output ? epilogue : Chain{}, spec, true);
  if (fixup_tiles > 0) {
    spec.args.insert(spec.args.end(), {-1, -2});
    spec.scratch_bytes.push_back(fixup_tiles * 4);
    spec.zeroed_scratch = {1};
  }
  spec.source = src.Render();
  return spec;
}

std::vector<KernelSpec> GenerateModelWarpGemm(const GemmOperands& g, const std::string& kernel_name,
                                              const Target& t, const WarpGemmParams& p,
                                              const Chain& epilogue) {
  const GemmShape& s = g.shape;
  GemmProblem problem = ModelGemmProblem(g);
  KernelSource src = WarpSource(problem, kernel_name, t, p);
  int64_t ks = SplitLength(s.k, p.split_k, p.bk), splits = CeilDiv(s.k, ks);
  // Split K: the tile's last work-group adds the slices up, in place of a sum kernel (a launch
  // fewer per product; docs/precision.md), where work-groups can hand results over.
  bool fixup = splits > 1 && !g.partials_only && t.group_handoff;
  int64_t tiles = CeilDiv(s.m, p.bm) * CeilDiv(s.n, p.bn) * s.batch;
  DefineStorage(src, s.dtype);
  DefineModelProduct(src, g, splits, ks, t, fixup);
  TEXEL_CHECK(!g.b_f32 || problem.gather_b, "an f32 image is gathered");
  src.Define("T_STORE_B", g.b_f32 ? "float" : "T_STORE");
  if (problem.gather_b) {
    // Elements as stored: f16 bits in fp16 (as the template stages them, RT), floats otherwise
    // (an f32 image converted to RT by the template, GATHER_F32).
    const char* rt = s.dtype == DType::kFloat16 && !g.b_f32 ? "ushort" : "float";
    src.Define("VB", 4).Define("TVB", fmt::format("{}4", rt));
    src.Define("ELEM(v, e)", fmt::format("((({}*)&(v))[e])", rt));
    src.Define("LOAD_E(p, i)", fmt::format("(((__global const {}*)(p))[i])", rt));
    DefineLoadB(src, g, kernel_name, true);
  }
  if (problem.gather_at) {
    TEXEL_CHECK(AsyncCopies(problem, p, t), "a channels-last image is copied asynchronously");
    for (const auto& [key, value] : g.defines) src.Define(key, value);
  }
  KernelSpec spec = ModelProductSpec(src, g, kernel_name, splits, epilogue, fixup ? tiles : 0);
  spec.inline_ptx = spec.tensor_cores = t.mma_sync;  // mma.sync, cp.async, ldmatrix, cvt
  spec.inline_ptx |= fixup && t.ptx;                 // membar.gl
  spec.gathers_b = problem.gather_b;
  WarpGemmParams ranges = p;  // the z dimension covers the ranges K is cut into
  ranges.split_k = static_cast<int>(splits);
  SetGeometry(problem, ranges, spec);
  if (fixup) return {std::move(spec)};
  return WithSplitSum(std::move(spec), g, splits, epilogue);
}

}  // namespace texel::codegen
