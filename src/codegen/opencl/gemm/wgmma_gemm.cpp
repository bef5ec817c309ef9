// Warpgroup-MMA GEMM kernels (wgmma_gemm.h, kernels/wgmma_gemm.cl).
#include "codegen/opencl/gemm/wgmma_gemm.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace texel::codegen {
namespace {

// Local memory a work-group may take: the H100 reports 48 KiB and refuses more at enqueue.
constexpr int kLocalBytes = 48 * 1024;

int ElemBytes(const GemmProblem& g) { return g.elem == DType::kFloat16 ? 2 : 4; }

// The instruction over d[bn / 2] with descriptors da and db (operands 0 .. bn / 2 - 1 the
// accumulators, then the descriptors and the scale-d flag); in fp16 with the flags that
// transpose an m- or n-contiguous operand.
std::string WgmmaMacro(const GemmProblem& g, int bn) {
  bool f16 = g.mode == ComputeMode::kFp16;
  std::string regs, operands;
  const int n = bn / 2;
  for (int i = 0; i < n; ++i) {
    regs += fmt::format("{}%{}", i ? "," : "", i);
    operands += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
  std::string shape =
      f16 ? fmt::format("m64n{}k16.f32.f16.f16", bn) : fmt::format("m64n{}k8.f32.tf32.tf32", bn);
  // fp16 takes the transpose flags (1: the operand is m- or n-contiguous); tf32 has none.
  std::string tail =
      f16 ? fmt::format("p, 1, 1, {}, {}", g.trans_a ? 1 : 0, g.trans_b ? 0 : 1) : "p, 1, 1";
  return fmt::format(
      "__asm volatile(\"// sm_90a: {{ .reg .pred p; setp.ne.b32 p, %{}, 0; "
      "wgmma.mma_async.sync.aligned.{} {{{}}}, %{}, %{}, {}; }}\" : {} : \"l\"(da), \"l\"(db), "
      "\"r\"(1) : \"memory\")",
      n + 2, shape, regs, n, n + 1, tail, operands);
}

// Work-groups (edge tiles included) per split of K.
int64_t Tiles(const GemmProblem& g, const WgmmaTiling& w) {
  return CeilDiv(g.m, w.bm) * CeilDiv(g.n, w.bn) * g.batch;
}

// Whether g is whole tiles of w (K is whole steps wherever texel_gemm takes the kernel).
bool Even(const GemmProblem& g, const WgmmaTiling& w) { return g.m % w.bm == 0 && g.n % w.bn == 0; }

// Local memory a tiling takes.
int LocalBytes(const WgmmaTiling& w) { return (w.bm + w.bn) * w.row_bytes * w.stages; }

// Work-items per work-group: one warpgroup (128) per 64 rows.
size_t WorkItems(const WgmmaTiling& w) { return static_cast<size_t>(w.bm / 64 * 128); }

// What any use of the kernel needs of w: its tile, stages and row bytes, the operands' layout
// for 128-byte rows, local memory and the work-group size.
std::optional<std::string> CheckTiling(const WgmmaTiling& w, bool trans_a, bool trans_b,
                                       const Target& t) {
  if ((w.bm != 64 && w.bm != 128 && w.bm != 256) ||
      (w.bn != 32 && w.bn != 64 && w.bn != 128 && w.bn != 256) || w.stages < 2 ||
      (w.row_bytes != 32 && w.row_bytes != 64 && w.row_bytes != 128))
    return fmt::format(
        "tiling {}: want 64, 128 or 256 rows, 32 to 256 columns, at least 2 stages, rows of 32, "
        "64 or 128 bytes",
        w.ToString());
  if (w.row_bytes != 64 && (trans_a || !trans_b))
    return "32- and 128-byte rows need k-contiguous operands (A [M, K], B stored [N, K])";
  if (LocalBytes(w) > kLocalBytes)
    return fmt::format("tiling {} needs {} bytes of local memory, past {}", w.ToString(),
                       LocalBytes(w), kLocalBytes);
  if (t.max_work_group_size < WorkItems(w)) return "work-groups of that size do not fit the device";
  return std::nullopt;
}

// What both kernels' sources share: the tiling, the operands' layouts, the instruction (or its
// emulation) and the copies.
KernelSource WgmmaSource(const GemmProblem& g, const std::string& kernel_name, const Target& t,
                         const WgmmaTiling& w, bool even) {
  KernelSource src(kernel_name, "wgmma_gemm");
  src.Define("BM", w.bm).Define("BN", w.bn).Define("STAGES", w.stages).Define("ROWB", w.row_bytes);
  src.Define("ELEM", ElemBytes(g));
  DefineStorage(src, g.elem);
  src.Define("TRANS_A", g.trans_a).Define("TRANS_B", g.trans_b).Define("EVEN", even);
  // The emulation's source has no hidden instruction, so the runtime builds it as it is.
  bool emulated = !t.wgmma;
  src.Define("WGMMA_EMULATED", emulated);
  src.Define("SM90A(x)",
             emulated ? "((void)0)" : R"(__asm volatile("// sm_90a: " x ::: "memory"))");
  if (!emulated) src.Define("WGMMA(d, da, db)", WgmmaMacro(g, w.bn));
  DefineAsyncCopy(src, t);
  return src;
}

}  // namespace

std::string WgmmaTiling::ToString() const {
  return fmt::format("{}x{} s{}{}{}", bm, bn, stages,
                     row_bytes == 64 ? "" : fmt::format(" r{}", row_bytes),
                     split_k > 1 ? fmt::format(" split {}", split_k) : "");
}

// 128 x 128 tiles of two warpgroups, 3 stages of 16 KiB: on the H100 at n = 4096
// (docs/precision.md) 408-419 TFLOP/s in fp16 and 236-242 in tf32 timed product by product,
// 355-367 and 189-194 in texel_gemm_bench's sustained runs; 128 x 256 tiles in 2 stages (all
// that fits 48 KiB) 199 and 110, 64 x 128 in 4 stages 304 and 152. Where 128 x 128 tiles leave
// compute units idle, 128 x 64 in 4 stages: at n = 1024 (64 or 128 tiles on 132 units) 87.0
// against 72.8 in tf32, 136.7 against 116.1 in fp16. Splitting K between the work-groups of a
// tile instead (the last to finish adding the parts) was slower in every tiling tried
// (docs/precision.md).
WgmmaTiling ChooseWgmmaTiling(const GemmProblem& g, const Target& t) {
  WgmmaTiling big, narrow{128, 64, 4, 64};
  bool fits = (!g.trans_a && g.trans_b) || Even(g, big);  // edge tiles or whole ones
  return fits && Tiles(g, big) >= static_cast<int64_t>(t.compute_units) ? big : narrow;
}

std::optional<std::string> CheckWgmmaTiling(const WgmmaTiling& w, const GemmProblem& g,
                                            const Target& t) {
  if (!t.wgmma && !t.wgmma_emulated) return "the device has no warpgroup MMA (sm_90a)";
  if (g.gather_b || g.k <= 0) return "a gathered or empty product";
  bool f16 = g.mode == ComputeMode::kFp16 && g.elem == DType::kFloat16;
  // tf32 has no transposing instruction: both operands k-contiguous.
  bool tf32 = g.mode == ComputeMode::kTf32 && g.elem == DType::kFloat32 && !g.trans_a && g.trans_b;
  if (!f16 && !tf32) return "fp16 on f16 storage, or tf32 with A [M, K] and B stored [N, K]";
  if (w.bn == 32) return fmt::format("tiling {}: want 64, 128 or 256 columns", w.ToString());
  if (auto why = CheckTiling(w, g.trans_a, g.trans_b, t)) return why;
  int64_t chunk = 16 / ElemBytes(g);  // elements per 16 bytes
  if (g.k % (w.row_bytes / ElemBytes(g)))
    return fmt::format("K must be whole steps of {}", w.row_bytes / ElemBytes(g));
  // Edge tiles copy whole 16-byte chunks along each operand's contiguous dimension: exact along
  // K (whole steps), not along an m- or n-contiguous operand's M or N.
  if ((g.m % w.bm || g.n % w.bn) && (g.trans_a || !g.trans_b))
    return fmt::format(
        "M and N must be whole tiles of {} x {} unless both operands are k-contiguous", w.bm, w.bn);
  if (!Aligned(g.a_offset, g.lda, g.stride_a, g.batch, chunk) ||
      !Aligned(g.b_offset, g.ldb, g.stride_b, g.batch, chunk))
    return "operands' offsets, leading dimensions and batch strides must be 16-byte multiples";
  return std::nullopt;
}

bool WgmmaApplies(const GemmProblem& g, const Target& t) {
  WgmmaTiling w = ChooseWgmmaTiling(g, t);
  if (CheckWgmmaTiling(w, g, t)) return false;
  // In fp16, tiles for most compute units: at n = 1024 128 x 64 tiles beat the warp-tiled
  // kernel's 64 x 64 (136.7 against 114.8 TFLOP/s on the H100; 128 x 128 ones, 64 tiles, did
  // not: 116.1 against 124). In tf32 this kernel was faster with fewer tiles too.
  bool f16 = g.mode == ComputeMode::kFp16;
  return !(f16 && Tiles(g, w) * 4 < static_cast<int64_t>(t.compute_units) * 3);
}

std::string WgmmaGemmClass(const GemmProblem& g, const WgmmaTiling& w, const Target& t) {
  return fmt::format("wgmma {} {} {}{}{}{}", w.ToString(), ComputeModeName(g.mode),
                     g.trans_a ? "t" : "n", g.trans_b ? "t" : "n", Even(g, w) ? "" : " edges",
                     t.wgmma ? "" : " emulated");
}

void WgmmaGemmGeometry(const GemmProblem& g, const WgmmaTiling& w, std::vector<size_t>* global,
                       std::vector<size_t>* local) {
  size_t wg = WorkItems(w);
  *global = {static_cast<size_t>(CeilDiv(g.m, w.bm)) * wg, static_cast<size_t>(CeilDiv(g.n, w.bn)),
             static_cast<size_t>(g.batch)};
  *local = {wg, 1, 1};
}

KernelSpec GenerateWgmmaGemm(const GemmProblem& g, const std::string& kernel_name, const Target& t,
                             const WgmmaTiling& w) {
  if (auto why = CheckWgmmaTiling(w, g, t))
    Fail(ErrorCode::kInvalidArgument,
         "texel_gemm: the warpgroup kernel does not take this problem: {}", *why);
  KernelSource src = WgmmaSource(g, kernel_name, t, w, Even(g, w));
  src.Define("MODEL", 0);
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.inline_ptx = spec.tensor_cores = t.wgmma || t.mma_sync;  // wgmma, cp.async
  WgmmaGemmGeometry(g, w, &spec.global, &spec.local);
  spec.flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
               static_cast<double>(g.k) * static_cast<double>(g.batch);
  return spec;
}

namespace {

constexpr int64_t kMinModelRows = 64;    // one warpgroup's rows
constexpr int64_t kMinModelDepth = 256;  // as the warp-tiled kernel's (warp_gemm.cpp)
constexpr int64_t kMinSplitRange = 128;

// The most stages (up to `most`) that w fits in local memory with, at least 2.
WgmmaTiling Deepest(WgmmaTiling w, int most) {
  for (w.stages = most; w.stages > 2 && LocalBytes(w) > kLocalBytes; --w.stages) {
  }
  return w;
}

}  // namespace

std::optional<std::string> CheckModelWgmma(const WgmmaTiling& w, const GemmOperands& g,
                                           const Target& t) {
  const GemmShape& s = g.shape;
  GemmProblem p = ModelGemmProblem(g);
  if (!t.wgmma && !t.wgmma_emulated) return "the device has no warpgroup MMA (sm_90a)";
  if (s.mode != ComputeMode::kFp16 || s.dtype != DType::kFloat16)
    return "fp16 products on f16 storage only";
  if (p.gather_b || g.b_f32 || g.convolution || g.fold)
    return "B is gathered (a convolution's image), not stored as a matrix";
  if (w.split_k < 1) return fmt::format("tiling {}: want a split of 1 or more", w.ToString());
  if (auto why = CheckTiling(w, s.trans_a, s.trans_b, t)) return why;
  // 16-byte chunks wholly inside or outside each operand: K and the contiguous dimensions are
  // multiples of 8 (which also aligns the batch offsets, multiples of a matrix).
  if (s.k % 8 || (s.trans_a && s.m % 8) || (!s.trans_b && s.n % 8))
    return "K and each operand's contiguous dimension must be multiples of 8";
  int64_t ks = SplitLength(s.k, w.split_k, w.row_bytes / 2);
  if (w.split_k > 1 && CeilDiv(s.k, ks) != w.split_k)
    return fmt::format("K = {} does not split {} ways", s.k, w.split_k);
  return std::nullopt;
}

std::vector<WgmmaTiling> ModelWgmmaTilings(const GemmOperands& g, const Target& t) {
  const GemmShape& s = g.shape;
  std::vector<WgmmaTiling> out;
  // Only products whose 128 x 128 tiles fill the compute units: on the H200, of six transformer
  // products at batch 1 (128 or 197 rows) none ran faster on this kernel than on the warp-tiled
  // one (the best tilings of each 0.97-1.22x slower), and of three at batch 32 one did
  // (4096 x 768 x 3072: 1.19x faster; docs/precision.md). Smaller products would only dilute
  // the tuner's budget.
  WgmmaTiling probe{64, 32, 2, 64};
  if (s.m < kMinModelRows || s.k < kMinModelDepth || CheckModelWgmma(probe, g, t) ||
      Tiles(ModelGemmProblem(g), {128, 128, 3, 64}) < static_cast<int64_t>(t.compute_units))
    return out;
  auto add = [&](WgmmaTiling w) {
    if (CheckModelWgmma(w, g, t)) return;
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  };
  // First the largest tile that is valid (where 128 x 128 tiles fill the device, every tile
  // does), as a heuristic would take it.
  for (WgmmaTiling w : std::vector<WgmmaTiling>{
           {128, 128, 3, 64}, {128, 64, 4, 64}, {64, 64, 6, 64}, {64, 32, 6, 64}}) {
    w = Deepest(w, w.stages);
    if (!CheckModelWgmma(w, g, t)) {
      add(w);
      break;
    }
  }
  // Tiles of one or two warpgroups by 32 to 256 columns, 64- or 128-byte rows, up to 3, 4 or 8
  // stages (as many as fit), K split 1 to 16 ways.
  for (int bm : {64, 128})
    for (int bn : {32, 64, 128, 256})
      for (int rowb : {64, 128})
        for (int most : {3, 4, 8}) {
          WgmmaTiling w = Deepest({bm, bn, most, rowb}, most);
          for (int split : {1, 2, 4, 8, 16}) {
            if (split > 1 && SplitLength(s.k, split, rowb / 2) < kMinSplitRange) continue;
            w.split_k = split;
            add(w);
          }
        }
  return out;
}

std::vector<KernelSpec> GenerateModelWgmmaGemm(const GemmOperands& g,
                                               const std::string& kernel_name, const Target& t,
                                               const WgmmaTiling& w, const Chain& epilogue) {
  if (auto why = CheckModelWgmma(w, g, t))
    Fail(ErrorCode::kInvalidArgument, "{}: the warpgroup kernel does not take this product: {}",
         kernel_name, *why);
  const GemmShape& s = g.shape;
  GemmProblem problem = ModelGemmProblem(g);
  bool even = s.m % w.bm == 0 && s.n % w.bn == 0 && s.k % (w.row_bytes / 2) == 0;
  int64_t ks = SplitLength(s.k, w.split_k, w.row_bytes / 2), splits = CeilDiv(s.k, ks);
  // Along K an edge is only where the ranges end: with split K every range but the last is
  // whole steps, and EVEN covers the last.
  KernelSource src = WgmmaSource(problem, kernel_name, t, w, even);
  src.Define("GLOAD(p, i)", "LOAD(p, i)");
  DefineModelProduct(src, g, splits, ks, t);
  KernelSpec spec = ModelProductSpec(src, g, kernel_name, splits, epilogue);
  spec.inline_ptx = spec.tensor_cores = t.wgmma || t.mma_sync;  // wgmma, cp.async
  size_t wg = WorkItems(w);
  spec.global = {static_cast<size_t>(CeilDiv(s.m, w.bm)) * wg,
                 static_cast<size_t>(CeilDiv(s.n, w.bn)), static_cast<size_t>(s.batch * splits)};
  spec.local = {wg, 1, 1};
  spec.flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
               static_cast<double>(s.k) * static_cast<double>(s.batch);
  return WithSplitSum(std::move(spec), g, splits, epilogue);
}

}  // namespace texel::codegen
