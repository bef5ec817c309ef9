// Batched matrix product with numpy batch broadcasting: kernels/matmul.cl (tiled) and
// kernels/matmul_direct.cl, parameters from ChooseMatMulParams (matmul.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/gemm/model_gemm.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/matmul.h"
#include "core/error.h"
#include "ir/host_eval.h"

namespace texel::codegen {

namespace {

// Offset expression of the matrix of output batch b in an operand with batch dims `batch`
// broadcast to `out_batch`.
std::string BatchOffset(const Shape& batch, const Shape& out_batch, int64_t matrix_elems) {
  if (NumElements(batch) <= 1) return "0";
  std::vector<int64_t> st = ir::BroadcastStrides(batch, out_batch);
  std::string s;
  int64_t div = 1;
  for (size_t d = out_batch.size(); d-- > 0;) {
    if (st[d] != 0)
      s += fmt::format("{}((long)(b) / {} % {}) * {}", s.empty() ? "" : " + ", div, out_batch[d],
                       st[d] * matrix_elems);
    div *= out_batch[d];
  }
  return s.empty() ? "0" : "(" + s + ")";
}

bool IsPow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }
int64_t FloorPow2(int64_t x) {
  int64_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}
int64_t CeilPow2(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

// The widest vector (<= max_width) whose width divides every one of `dims`.
int VecWidth(int max_width, std::initializer_list<int64_t> dims) {
  for (int w = max_width; w > 1; w /= 2)
    if (std::all_of(dims.begin(), dims.end(), [&](int64_t d) { return d % w == 0; })) return w;
  return 1;
}

// Widest vector for global loads: 16 bytes of f32/f16 storage or 2 doubles on a GPU (one load
// instruction); one AVX-512 register on a CPU (PoCL keeps a vector variable in one register).
int MaxVec(DType t, bool gpu) {
  if (gpu) return t == DType::kFloat64 ? 2 : 4;
  return t == DType::kFloat64 ? 8 : 16;
}

int ElemBytes(DType t) { return t == DType::kFloat64 ? 8 : 4; }  // compute type, local memory

// The C type of a vector of n compute values ("float4"; "float" when n == 1).
std::string VecType(DType t, int n) {
  std::string s = t == DType::kFloat16 ? "float" : std::string(CLTypeName(t));
  return n == 1 ? s : s + std::to_string(n);
}

// An n-wide load from / store to element storage at element index i (a multiple of n). Up to
// 16 bytes through a vector pointer, so that the GPU issues one load (buffers start aligned and
// rows are multiples of n); wider (CPU) through vloadn, which needs no alignment.
// f16 goes through HalfVectorLoad / vstore_halfn_rte.
std::string VecLoad(KernelSource& src, const Target& target, DType t, int n) {
  if (n == 1) return "LOAD(p, i)";
  if (t == DType::kFloat16 && n <= 4) return HalfVectorLoad(src, target, n);
  if (t == DType::kFloat16) return fmt::format("vload_half{}(0, (p) + (i))", n);
  if (n * ElemBytes(t) > 16) return fmt::format("vload{}(0, (p) + (i))", n);
  return fmt::format("(*(__global const {}*)((p) + (i)))", VecType(t, n));
}
std::string VecStore(DType t, int n) {
  if (t == DType::kFloat16) return fmt::format("vstore_half{}_rte((v), 0, (p) + (i))", n);
  return fmt::format("(*(__global {}*)((p) + (i)) = (v))", VecType(t, n));
}

int64_t TiledLocalBytes(const MatMulParams& p, DType t) {
  return 2 * p.tile_k * ((p.tile_m + 4) + p.tile_n) * ElemBytes(t);
}

// Work-group tiles the heuristic considers on a GPU, with their throughput per compute unit
// when the device is full, relative to the best: SGEMM n = 2048 and 4096 on an H100 (NVIDIA
// OpenCL; docs/decisions.md); the two smallest from BERT-base and ResNet-50 layers there (a
// 32x32 tile with 2x2 per work-item reached 25 GFLOP/s per compute unit, 0.1 of the best).
// A tuner will replace these numbers with measurements.
struct TileChoice {
  int tm, tn, tk, wm, wn;
  double efficiency;
};
constexpr TileChoice kGpuTiles[] = {
    {128, 128, 16, 16, 8, 1.0}, {128, 128, 16, 8, 8, 0.97}, {64, 128, 16, 8, 8, 0.85},
    {64, 128, 16, 4, 8, 0.84},  {64, 64, 16, 8, 8, 0.84},   {64, 64, 16, 4, 4, 0.71},
    {32, 64, 16, 2, 4, 0.46},   {32, 32, 16, 2, 2, 0.1},    {16, 16, 16, 1, 1, 0.03},
};

int StorageBytes(DType t) { return t == DType::kFloat64 ? 8 : t == DType::kFloat16 ? 2 : 4; }

int64_t DirectLocalBytes(const MatMulParams& p, DType t) {
  return (int64_t{p.split_k > 1 ? p.split_k * p.wi_m : 0} + p.panel_k) * p.tile_n * ElemBytes(t);
}

// The direct kernel for shape s: every row of a work-item's block shares one load of B.
MatMulParams DirectFor(const GemmShape& s, const Target& t) {
  MatMulParams p;
  p.kind = MatMulParams::Kind::kDirect;
  p.vec_b = p.wi_n =
      s.gather_b ? static_cast<int>(std::min<int64_t>(MaxVec(s.dtype, t.gpu), CeilPow2(s.n)))
                 : VecWidth(MaxVec(s.dtype, t.gpu), {s.n});
  int64_t col_items = CeilDiv(s.n, p.wi_n);
  if (!t.gpu) {
    // One work-group per core at a time, nothing to split. 8 rows x one 16-wide vector keeps 8
    // accumulator registers per work-item (fewer rows when that wastes less of the last block).
    // Beyond 8 rows, 8 row blocks x 8 column vectors share 64-row panels of B in local memory
    // (32 KiB, L1-sized): walking down a column strip of B directly thrashes the caches once
    // its row stride is a multiple of 4 KiB (measured 4-5x slower at n = 1024 on PoCL). A
    // strip of K <= 64 rows is read straight (copying it cost more than it saved: MobileNetV2's
    // 1x1 convolutions ran 1.6x faster without), unless B is gathered (a convolution's im2col),
    // where the panel gathers once for all the group's rows.
    int64_t wm = std::min<int64_t>(s.m, 8);
    for (int64_t w : {8, 6, 4})
      if (s.m > 8 && s.m % w == 0) {
        wm = w;
        break;
      }
    p.wi_m = static_cast<int>(wm);
    p.tile_m = static_cast<int>(wm * std::min<int64_t>(8, CeilDiv(s.m, wm)));
    p.tile_n = static_cast<int>(std::min<int64_t>(8, CeilPow2(col_items))) * p.wi_n;
    if (p.tile_m > p.wi_m && (s.k > 64 || s.gather_b)) p.panel_k = 64;
    return p;
  }
  p.wi_m = p.tile_m = static_cast<int>(std::min<int64_t>(s.m, 8));
  // Memory-bound: aim at two work-groups per compute unit, each 256 work-items, narrowing the
  // columns per group (down to one 32-byte sector per row of B) and splitting K instead.
  int64_t min_lx = std::max<int64_t>(1, 32 / (p.wi_n * StorageBytes(s.dtype)));
  int64_t row_groups = CeilDiv(s.m, p.wi_m) * s.batch;
  int64_t lx = FloorPow2(std::max<int64_t>(col_items * row_groups / (2 * t.compute_units), 1));
  lx = std::clamp<int64_t>(lx, min_lx, 64);
  lx = std::max<int64_t>(std::min(lx, CeilPow2(col_items)), 1);
  p.tile_n = static_cast<int>(lx) * p.wi_n;
  p.split_k = static_cast<int>(FloorPow2(std::max<int64_t>(256 / lx, 1)));
  while (p.split_k > 1 && (s.k / p.split_k < 8 || DirectLocalBytes(p, s.dtype) > 16 * 1024))
    p.split_k /= 2;
  return p;
}

// DirectFor's choice, or one column per work-item where a small device rejects it.
MatMulParams ChooseDirect(const GemmShape& s, const Target& t) {
  MatMulParams p = DirectFor(s, t);
  if (!CheckMatMulParams(p, s, t)) return p;
  p = MatMulParams{};
  p.kind = MatMulParams::Kind::kDirect;
  p.tile_m = p.wi_m = p.wi_n = p.vec_b = 1;
  p.tile_n = static_cast<int>(std::min<size_t>(64, std::max<size_t>(t.max_work_group_size, 1)));
  return p;
}

// BIAS_PARAM and BIAS(b, row): g's bias per row, or none.
void DefineBias(KernelSource& src, const GemmOperands& g, bool with) {
  src.Define("BIAS_PARAM", with ? ", __global const T_STORE* restrict bias_p" : "");
  src.Define("BIAS(b, row)", with ? "LOAD(bias_p, " + g.bias + ")" : "0");
}

// LOAD_B of a B stored transposed, [n, k]: VB elements of row k, zero beyond N.
constexpr const char* kTransposedLoadB = R"(  TVB v;
#pragma unroll
  for (int e = 0; e < VB; ++e) ELEM(v, e) = col + e < N ? LOAD_E(p, (long)(col + e) * K + k) : 0;
  return v;)";

}  // namespace

int64_t SplitLength(int64_t k, int64_t splits, int tile_k) {
  return CeilDiv(CeilDiv(k, splits), tile_k) * tile_k;
}

int SplitsToFill(int64_t groups, int64_t k, int tile_k, int64_t min_range, const Target& t) {
  int64_t cu = t.compute_units;
  auto fill = [&](int64_t splits) {
    int64_t items = groups * CeilDiv(k, SplitLength(k, splits, tile_k));
    return static_cast<double>(items) / static_cast<double>(CeilDiv(items, cu) * cu);
  };
  int64_t most = std::clamp<int64_t>(k / min_range, 1, 16);
  double best = 0;
  for (int64_t n = 1; n <= most; ++n) best = std::max(best, fill(n));
  for (int64_t n = 1; n <= most; ++n)
    if (fill(n) >= 0.95 * best) return static_cast<int>(n);
  return 1;
}

std::string MatMulParams::ToString() const {
  if (kind == Kind::kDirect)
    return fmt::format("direct {}x{} wi {}x{} split {} panel {}", tile_m, tile_n, wi_m, wi_n,
                       split_k, panel_k);
  return fmt::format("tiled {}x{}x{} wi {}x{} vec {}/{}{}", tile_m, tile_n, tile_k, wi_m, wi_n,
                     vec_a, vec_b, split_k > 1 ? fmt::format(" split {}", split_k) : "");
}

ComputeMode ComputeModeOf(const ir::Node& n) {
  bool half = n.outputs[0]->type.dtype == DType::kFloat16;
  return static_cast<ComputeMode>(n.attrs.Int(
      "compute_mode", static_cast<int64_t>(half ? ComputeMode::kFp16 : ComputeMode::kFp32)));
}

GemmShape GemmShapeOf(const ir::Node& n) {
  const Shape& a = n.inputs[0]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  GemmShape s;
  s.m = a[a.size() - 2];
  s.k = a.back();
  s.n = y.back();
  s.batch = NumElements(Shape(y.begin(), y.end() - 2));
  s.dtype = n.outputs[0]->type.dtype;
  s.trans_a = n.attrs.Int("trans_a", 0) != 0;
  s.trans_b = s.gather_b = n.attrs.Int("trans_b", 0) != 0;  // B^T: gathered a column at a time
  s.mode = ComputeModeOf(n);
  if (s.trans_a) std::swap(s.m, s.k);
  // One B for every batch ([..., m, k] x [k, n]): the batches of A are rows of one product,
  // which fills a GPU where m alone is small (a [seq, 1, d] activation times a weight).
  const Shape& b = n.inputs[1]->type.shape;
  if (!s.trans_a && NumElements(Shape(b.begin(), b.end() - 2)) == 1 &&
      NumElements(Shape(a.begin(), a.end() - 2)) == s.batch) {
    s.m *= s.batch;
    s.batch = 1;
  }
  return s;
}

std::optional<std::string> CheckMatMulParams(const MatMulParams& p, const GemmShape& s,
                                             const Target& t) {
  auto pos = [](int v) { return v > 0; };
  if (!pos(p.tile_m) || !pos(p.tile_n) || !pos(p.tile_k) || !pos(p.wi_m) || !pos(p.wi_n) ||
      !pos(p.vec_a) || !pos(p.vec_b) || !pos(p.split_k))
    return "parameters must be positive";
  for (int v : {p.vec_a, p.vec_b})
    if (v > MaxVec(s.dtype, t.gpu) || !IsPow2(v))
      return fmt::format("vector width {} unsupported", v);
  if (s.trans_a && p.vec_a != 1) return "a transposed A is loaded one element at a time";
  if (s.n % p.vec_b != 0 && !s.gather_b)
    return fmt::format("N={} is not a multiple of vec_b={}", s.n, p.vec_b);
  if (p.tile_n % p.wi_n != 0) return "tile_n must be a multiple of wi_n";
  int64_t items = int64_t{p.LocalX()} * p.LocalY();
  if (items > static_cast<int64_t>(t.max_work_group_size))
    return fmt::format("{} work-items exceed the device's {}", items, t.max_work_group_size);
  if (p.kind == MatMulParams::Kind::kDirect) {
    if (p.wi_n != p.vec_b) return "the direct kernel needs wi_n == vec_b";
    if (p.tile_m % p.wi_m != 0) return "tile_m must be a multiple of wi_m";
    if (p.split_k > 1 && (p.tile_m != p.wi_m || p.panel_k > 0))
      return "split_k > 1 needs tile_m == wi_m and no panel";
    if (p.panel_k < 0) return "panel_k must not be negative";
    if (!IsPow2(p.split_k)) return "split_k must be a power of two";
    if (DirectLocalBytes(p, s.dtype) > static_cast<int64_t>(t.local_mem_bytes))
      return "too much local memory";
    return std::nullopt;
  }
  if (std::max(p.vec_a, p.vec_b) > MaxVec(s.dtype, true))
    return "the tiled kernel loads at most 16 bytes at a time";
  if (s.k % p.vec_a != 0) return fmt::format("K={} is not a multiple of vec_a={}", s.k, p.vec_a);
  if (p.tile_m % p.wi_m != 0) return "tile_m must be a multiple of wi_m";
  if (p.tile_k % p.vec_a != 0 || p.tile_n % p.vec_b != 0)
    return "tile_k and tile_n must be multiples of the load vector widths";
  if (TiledLocalBytes(p, s.dtype) > static_cast<int64_t>(t.local_mem_bytes))
    return fmt::format("{} bytes of local memory exceed the device's {}",
                       TiledLocalBytes(p, s.dtype), t.local_mem_bytes);
  return std::nullopt;
}

// A product of at least 64M multiply-adds with a side of at most 256 whose 64 x 128 tiles do
// not fill the device once (transformer layers: 49-197 tokens by 768-3072 features): 64 x 128
// tiles, 8 x 8 per work-item, with K split so that the work-groups fill their last wave best
// (fewest splits within 5% of the best fill), each range at least 64 long and at most 16
// ranges; or nullopt. Measured on an H100 (texel_gemm_bench, docs/decisions.md): 1.3-2x faster
// than the tile model below at these shapes, which underrates splitting (it kept ranges >= 256
// and took larger tiles). Smaller products (a 2-layer, 256-wide decoder) lose more to the
// second kernel's launch than the split saves.
std::optional<MatMulParams> SmallProductParams(const GemmShape& s, const Target& t,
                                               const MatMulParams& base) {
  if (s.gather_b || s.dtype == DType::kFloat64 || std::min(s.m, s.n) > 256 ||
      s.batch * s.m * s.n * s.k < (int64_t{1} << 26))
    return std::nullopt;
  MatMulParams p = base;
  p.tile_m = 64, p.tile_n = 128, p.tile_k = 16, p.wi_m = 8, p.wi_n = 8;
  int64_t groups = CeilDiv(s.m, p.tile_m) * CeilDiv(s.n, p.tile_n) * s.batch;
  int64_t cu = t.compute_units;
  if (groups >= cu || CheckMatMulParams(p, s, t)) return std::nullopt;
  p.split_k = SplitsToFill(groups, s.k, p.tile_k, 64, t);
  return p;
}

MatMulParams ChooseMatMulParams(const GemmShape& s, const Target& t) {
  // Few rows or few columns: the tiles below would compute mostly padding. A squeeze-and-
  // excitation block's 1x1 convolutions on one pooled pixel (N = 1, M = 20-1152) took 14-24 us
  // each as one 16-128 row tile walking K alone, on an H200 in EfficientNet-B0.
  if (s.m <= 8 || s.n < 8 || !t.gpu) return ChooseDirect(s, t);
  // Estimated time = waves x tile area / (efficiency x occupancy), where waves = work-groups
  // per compute unit rounded up, and occupancy sqrt(work-items per compute unit / 128) below
  // 128 (a lone small work-group hides little latency). The cheapest wins; the earlier on ties.
  MatMulParams best;
  best.vec_a = s.trans_a ? 1 : VecWidth(MaxVec(s.dtype, true), {s.k});
  best.vec_b = s.gather_b ? MaxVec(s.dtype, true) : VecWidth(MaxVec(s.dtype, true), {s.n});
  if (auto small = SmallProductParams(s, t, best)) return *small;
  double best_cost = 0;
  bool found = false;
  for (const TileChoice& c : kGpuTiles) {
    // 128 accumulators spill as doubles.
    if (s.dtype == DType::kFloat64 && c.wm * c.wn > 64) continue;
    MatMulParams p = best;
    p.tile_m = c.tm, p.tile_n = c.tn, p.tile_k = c.tk, p.wi_m = c.wm, p.wi_n = c.wn;
    if (CheckMatMulParams(p, s, t)) continue;
    int64_t groups = CeilDiv(s.m, c.tm) * CeilDiv(s.n, c.tn) * s.batch;
    // Too few tiles to fill the device: split K over more work-groups, each range at least 256
    // long. Costs are in multiply-adds per compute unit; the partial sums add a launch (about
    // 5 us, 1.2M multiply-adds of an H100 compute unit) and (splits + 1) passes over the output
    // spread over the device at about 10 multiply-adds per byte (fp32 peak over bandwidth).
    p.split_k = 1;
    if (groups < t.compute_units)
      p.split_k = static_cast<int>(
          std::max<int64_t>(1, std::min<int64_t>(t.compute_units / groups, s.k / 256)));
    int64_t ks = SplitLength(s.k, p.split_k, c.tk);
    int64_t waves = CeilDiv(groups * CeilDiv(s.k, ks), t.compute_units);
    double items = static_cast<double>(waves * p.LocalX() * p.LocalY());
    double occupancy = std::sqrt(std::min(1.0, items / 128));
    double cost = static_cast<double>(waves) * c.tm * c.tn * static_cast<double>(ks) /
                  (c.efficiency * occupancy);
    if (p.split_k > 1)
      cost += 1.2e6 + static_cast<double>((p.split_k + 1) * s.batch * s.m * s.n) *
                          ElemBytes(s.dtype) * 20.0 / t.compute_units;
    if (!found || cost < best_cost * 0.999) best = p, best_cost = cost, found = true;
  }
  return found ? best : ChooseDirect(s, t);
}

namespace {

// 2: the GPU's direct-kernel points for few rows or columns, and the direct kernel as the
// heuristic's for fewer than 8 columns (entries tuned in the smaller space are not kept).
constexpr int kMatMulVersion = 2;

TunePoint PointOf(const MatMulParams& p) {
  return {{"kind", p.kind == MatMulParams::Kind::kDirect},
          {"tm", p.tile_m},
          {"tn", p.tile_n},
          {"tk", p.tile_k},
          {"wm", p.wi_m},
          {"wn", p.wi_n},
          {"va", p.vec_a},
          {"vb", p.vec_b},
          {"split", p.split_k},
          {"panel", p.panel_k}};
}

}  // namespace

MatMulParams MatMulParamsOf(const TunePoint& pt) {
  MatMulParams p;
  auto get = [&](const char* k) { return static_cast<int>(pt.at(k)); };
  p.kind = get("kind") ? MatMulParams::Kind::kDirect : MatMulParams::Kind::kTiled;
  p.tile_m = get("tm"), p.tile_n = get("tn"), p.tile_k = get("tk");
  p.wi_m = get("wm"), p.wi_n = get("wn"), p.vec_a = get("va"), p.vec_b = get("vb");
  p.split_k = get("split"), p.panel_k = get("panel");
  return p;
}

Tunable MatMulTunable(const GemmShape& s, const Target& t) {
  Tunable tn;
  tn.family = "matmul";
  tn.version = kMatMulVersion;
  tn.signature = fmt::format("b={},m={},n={},k={},dtype={},gather={},ta={},tb={},mode={}", s.batch,
                             s.m, s.n, s.k, DTypeName(s.dtype), int{s.gather_b}, int{s.trans_a},
                             int{s.trans_b}, ComputeModeName(s.mode));
  MatMulParams h = ChooseMatMulParams(s, t);
  tn.candidates.push_back(PointOf(h));
  auto add = [&](const MatMulParams& p) {
    if (CheckMatMulParams(p, s, t)) return;
    TunePoint pt = PointOf(p);
    if (std::find(tn.candidates.begin(), tn.candidates.end(), pt) == tn.candidates.end())
      tn.candidates.push_back(pt);
  };
  if (t.gpu) {
    MatMulParams base;
    base.vec_a = s.trans_a ? 1 : VecWidth(MaxVec(s.dtype, true), {s.k});
    base.vec_b = s.gather_b ? MaxVec(s.dtype, true) : VecWidth(MaxVec(s.dtype, true), {s.n});
    for (const TileChoice& c : kGpuTiles)
      for (int split : {1, 2, 4, 8}) {
        if (split > 1 && s.k / split < 64) continue;
        MatMulParams p = base;
        p.tile_m = c.tm, p.tile_n = c.tn, p.tile_k = c.tk, p.wi_m = c.wm, p.wi_n = c.wn;
        p.split_k = split;
        add(p);
      }
    // Few rows or columns (classifiers, depthwise and squeeze-and-excitation convolutions):
    // the direct kernel's rows per work-item, columns per group, vector width (gathered B:
    // 1, 2 or 4 pixels) and K split across the group.
    if (s.m <= 32 || s.n < 8) {
      add(ChooseDirect(s, t));
      MatMulParams d = DirectFor(s, t);
      for (int wm : {1, 2, 4, 8})
        for (int vb : {1, 2, 4, 8})
          for (int lx = 1; lx <= 64; lx *= 2)
            for (int split = 1; lx * split <= 256; split *= 2) {
              if ((wm > 1 && wm > s.m) || (split > 1 && s.k / split < 4) ||
                  (vb != d.vec_b && !s.gather_b) || lx > 2 * CeilDiv(s.n, vb))
                continue;
              MatMulParams p = d;
              p.wi_m = p.tile_m = wm;
              p.vec_b = p.wi_n = vb;
              p.tile_n = lx * vb;
              p.split_k = split;
              p.panel_k = 0;
              add(p);
            }
    }
    return tn;
  }
  // CPU: the direct kernel's row blocks, column vectors per group and panels of B.
  for (int wm : {2, 4, 6, 8})
    for (int lanes : {1, 2, 4, 8})
      for (int groups_m : {1, 2, 4, 8})
        for (int panel : {0, 64, 128}) {
          MatMulParams p = h;
          p.kind = MatMulParams::Kind::kDirect;
          p.split_k = 1;
          p.wi_m = static_cast<int>(std::min<int64_t>(wm, s.m));
          p.tile_m = p.wi_m * groups_m;
          p.tile_n = lanes * p.wi_n;
          p.panel_k = p.tile_m > p.wi_m ? panel : 0;
          if (p.tile_m > 2 * s.m) continue;
          add(p);
        }
  return tn;
}

MatMulParams TunedMatMulParams(const GemmShape& s, const Target& t) {
  if (t.tuning == nullptr) return ChooseMatMulParams(s, t);
  return MatMulParamsOf(Choose(MatMulTunable(s, t), t));
}

void DefineLoadB(KernelSource& src, const GemmOperands& g, const std::string& kernel_name,
                 bool hoisted) {
  for (const auto& [key, value] : g.defines) src.Define(key, value);
  src.Define("LOAD_B(p, k, col)", kernel_name + "_load_b(p, k, col)");
  src.Prelude(fmt::format(
      "inline TVB {}_load_b(const __global T_STORE_B* restrict p, int k, int col) {{\n{}\n}}\n",
      kernel_name, g.load_b));
  hoisted = hoisted && !g.gather_init.empty();
  src.Define("GATHER_HOISTED", hoisted);
  if (!hoisted) return;
  const std::string& n = kernel_name;
  src.Define("GATHER_T", n + "_gather_t");
  src.Define("GATHER_INIT(col)", n + "_gather_init(col)");
  src.Define("GATHER_LOAD(p, k, s)", n + "_gather_load(p, k, s)");
  src.Prelude(
      fmt::format("typedef struct {{\n{1}\n}} {0}_gather_t;\n"
                  "inline {0}_gather_t {0}_gather_init(int col) {{\n{2}\n}}\n"
                  "inline TVB {0}_gather_load(const __global T_STORE_B* restrict p, int k,\n"
                  "                           const {0}_gather_t* s) {{\n{3}\n}}\n",
                  n, g.gather_fields, g.gather_init, g.gather_load));
}

void DefineOutputIndex(KernelSource& src, const GemmOperands& g, bool folded) {
  TEXEL_CHECK(g.fold == 0 || !g.partials_only, "folded columns with partial sums only");
  if (folded && g.channels_last)
    src.Define("OUT_AT(b, r, c)", "((long)(c) * M + (r))");
  else if (folded && g.fold > 0)
    src.Define(
        "OUT_AT(b, r, c)",
        fmt::format("((((long)(c) / {0} * BATCH + (b)) * M + (r)) * {0} + (c) % {0})", g.fold));
  else
    src.Define("OUT_AT(b, r, c)", "((((long)(b)) * M + (r)) * N + (c))");
}

std::vector<KernelSpec> GenerateGemm(const GemmOperands& g, const std::string& kernel_name,
                                     const Target& target, const MatMulParams& p,
                                     const Chain& epilogue) {
  const GemmShape& s = g.shape;
  DType t = s.dtype;
  if (auto why = CheckMatMulParams(p, s, target))
    Fail(ErrorCode::kInvalidArgument, "matmul parameters '{}' for {}x{}x{}: {}", p.ToString(), s.m,
         s.n, s.k, *why);
  bool direct = p.kind == MatMulParams::Kind::kDirect;
  // Split-K: the product goes to scratch 0 (arg -1) as partial sums; bias and epilogue follow.
  int64_t ks = direct ? s.k : SplitLength(s.k, p.split_k, p.tile_k);
  int64_t splits = direct ? 1 : CeilDiv(s.k, ks);
  bool split = LeavesSlices(g, splits);
  bool bias = !g.bias.empty();
  KernelSource src(kernel_name, direct ? "matmul_direct" : "matmul");
  DefineStorage(src, t);
  src.Define("M", s.m).Define("N", s.n).Define("K", s.k).Define("BATCH", s.batch);
  src.Define("A_OFFSET(b)", g.a_offset).Define("B_OFFSET(b)", g.b_offset);
  src.Define("A_RS", s.trans_a ? 1 : s.k).Define("A_KS", s.trans_a ? s.m : 1);
  src.Define("ELEM(v, e)", fmt::format("(((T*)&(v))[e])"));
  src.Define("LX", p.LocalX()).Define("LY", p.LocalY());
  src.Define("VB", p.vec_b).Define("TVB", VecType(t, p.vec_b));
  TEXEL_CHECK(!g.b_f32 || !g.load_b.empty(), "an f32 image is gathered");
  src.Define("T_STORE_B", g.b_f32 ? "float" : "T_STORE");
  if (g.load_b.empty()) {
    src.Define("GLOAD_B(p, i)", VecLoad(src, target, t, p.vec_b));
    src.Define("LOAD_B(p, k, col)", "GLOAD_B(p, (long)(k) * N + (col))");
  } else {
    src.Define("LOAD_E(p, i)", g.b_f32 ? "((p)[i])" : "LOAD(p, i)");
    DefineLoadB(src, g, kernel_name);
  }
  DefineBias(src, g, bias && !split);
  DefineOutputIndex(src, g, !split);
  src.Define("EDGE_M", s.m % p.tile_m != 0).Define("EDGE_N", s.n % p.tile_n != 0);
  src.Define("CLAMP_N", s.n % p.tile_n != 0 && !s.gather_b);
  // Partial sums (split-K's, a LayerNorm's prologue's) are T: f32 for f16 storage, as wide as
  // the scratch (ElemBytes).
  // Results: the epilogue's type (a graph output converted by a fused Cast may differ from t).
  DType out_t =
      split ? (t == DType::kFloat16 ? DType::kFloat32 : t) : ChainResultType(g.out, epilogue);
  src.Define("T_OUT", out_t == DType::kFloat16 ? "half" : VecType(out_t, 1));
  src.Define("OSTORE(p, i, v)",
             out_t == DType::kFloat16 ? "vstore_half_rte((v), (i), (p))" : "(p)[i] = (v)");
  if (direct) {
    src.Define("WM", p.wi_m).Define("TM", p.tile_m);
    src.Define("SPLIT_K", p.split_k).Define("PANEL_K", p.panel_k);
  } else {
    int vm = VecWidth(4, {p.wi_m}), vn = VecWidth(4, {p.wi_n});
    int64_t threads = int64_t{p.LocalX()} * p.LocalY();
    int64_t a_vecs = int64_t{p.tile_m} * p.tile_k / p.vec_a;
    int64_t b_vecs = int64_t{p.tile_k} * p.tile_n / p.vec_b;
    src.Define("TM", p.tile_m).Define("TN", p.tile_n).Define("TK", p.tile_k);
    src.Define("WM", p.wi_m).Define("WN", p.wi_n);
    src.Define("VA", p.vec_a).Define("TVA", VecType(t, p.vec_a));
    src.Define("GLOAD_A(p, i)", VecLoad(src, target, t, p.vec_a));
    src.Define("VM", vm).Define("TVM", VecType(t, vm));
    src.Define("VN", vn).Define("TVN", VecType(t, vn));
    // Whole vectors of columns stay contiguous in the output (folded: within one image).
    if (vn > 1 && s.n % vn == 0 && (split || g.fold % vn == 0))
      src.Define("STORE_VN(p, i, v)", VecStore(out_t, vn));
    src.Define("LOADS_A", CeilDiv(a_vecs, threads)).Define("GUARD_A", a_vecs % threads != 0);
    src.Define("LOADS_B", CeilDiv(b_vecs, threads)).Define("GUARD_B", b_vecs % threads != 0);
    // A's rows are padded by 4 so that the transposed stores of adjacent k spread over banks.
    src.Define("AS_STRIDE", p.tile_m + 4).Define("BS_STRIDE", p.tile_n);
    src.Define("LOCAL_ALIGN", ElemBytes(t) * std::max({vm, vn, p.vec_b}));
    src.Define("EDGE_K", s.k % p.tile_k != 0);
    src.Define("SPLITS", splits).Define("KS", ks);
  }
  int64_t outputs = s.batch * s.m * s.n;
  KernelSpec spec;
  spec.name = kernel_name;
  spec.args = split ? std::vector<int>{g.args[0], g.args[1], -1} : g.args;
  ApplyEpilogue(src, kernel_name, g.out, split ? Chain{} : epilogue, spec, true);
  spec.source = src.Render();
  size_t lx = p.LocalX(), ly = p.LocalY();
  spec.global = {static_cast<size_t>(CeilDiv(s.n, p.tile_n)) * lx,
                 static_cast<size_t>(CeilDiv(s.m, p.tile_m)) * ly,
                 static_cast<size_t>(s.batch * splits)};
  spec.local = {lx, ly, 1};
  spec.flops = 2.0 * static_cast<double>(outputs * s.k);
  spec.gathers_b = !g.load_b.empty();
  if (!split) return {spec};

  spec.scratch_bytes = {splits * outputs * ElemBytes(t)};
  return WithSplitSum(std::move(spec), g, splits, epilogue);
}

std::vector<KernelSpec> WithSplitSum(KernelSpec spec, const GemmOperands& g, int64_t splits,
                                     const Chain& epilogue) {
  if (splits == 1 || g.partials_only) return {std::move(spec)};
  std::string sum = spec.name + "_sum";
  spec.end_op = 1;  // the product alone; the sum kernel finishes it and applies the epilogue
  return {std::move(spec), GenerateSplitSum(g, sum, splits, epilogue)};
}

KernelSpec GenerateSplitSum(const GemmOperands& g, const std::string& kernel_name, int64_t splits,
                            const Chain& epilogue) {
  const GemmShape& s = g.shape;
  int64_t outputs = s.batch * s.m * s.n;
  bool bias = !g.bias.empty();
  KernelSource sum(kernel_name, "matmul_splitk");
  DefineStorage(sum, s.dtype);
  sum.Define("M", s.m).Define("N", s.n).Define("BATCH", s.batch).Define("SPLITS", splits);
  DefineBias(sum, g, bias);
  DefineOutputIndex(sum, g, true);
  KernelSpec add;
  add.name = kernel_name;
  add.args = {-1};
  if (bias) add.args.push_back(g.args[2]);
  add.args.push_back(g.args.back());
  ApplyEpilogue(sum, kernel_name, g.out, epilogue, add, true);
  add.source = sum.Render();
  add.global = {RoundUp(static_cast<size_t>(outputs), 256)};
  add.local = {256};
  add.flops = static_cast<double>(outputs * splits);
  add.scratch_bytes = {splits * outputs * ElemBytes(s.dtype)};
  return add;
}

namespace {

GemmOperands OperandsOf(const ir::Node& n) {
  GemmOperands g;
  g.shape = GemmShapeOf(n);
  if (n.attrs.Int("trans_b", 0)) g.load_b = kTransposedLoadB;
  const Shape& a = n.inputs[0]->type.shape;
  const Shape& b = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), yb(y.begin(), y.end() - 2);
  g.a_offset = BatchOffset(ab, yb, g.shape.m * g.shape.k);
  g.b_offset = BatchOffset(bb, yb, g.shape.k * g.shape.n);
  g.args = {n.inputs[0]->id, n.inputs[1]->id, n.outputs[0]->id};
  g.out = n.outputs[0];
  return g;
}

}  // namespace

std::vector<KernelSpec> GenerateMatMulWith(const ir::Node& n, const std::string& kernel_name,
                                           const Target& target, const MatMulParams& p,
                                           const Chain& epilogue) {
  RequireOneFloatType(n);  // f64 only reaches here with cl_khr_fp64
  return GenerateGemm(OperandsOf(n), kernel_name, target, p, epilogue);
}

KernelSpec GenerateMatMulPartials(const ir::Node& n, const std::string& kernel_name,
                                  const Target& target, int64_t* slices) {
  RequireOneFloatType(n);
  GemmOperands g = OperandsOf(n);
  g.partials_only = true;
  std::optional<ModelGemm> engine = TunedModelGemm(g, target);
  std::vector<KernelSpec> specs =
      engine ? GenerateModelGemm(g, kernel_name, target, *engine)
             : GenerateGemm(g, kernel_name, target, TunedMatMulParams(g.shape, target));
  TEXEL_CHECK(specs.size() == 1 && specs[0].scratch_bytes.size() == 1, "partial product kernels");
  *slices = specs[0].scratch_bytes[0] /
            (NumElements(n.outputs[0]->type.shape) * ElemBytes(n.outputs[0]->type.dtype));
  return specs[0];
}

std::vector<KernelSpec> GenerateMatMul(const ir::Node& n, const std::string& kernel_name,
                                       const Target& target, const Chain& epilogue) {
  RequireOneFloatType(n);
  GemmOperands g = OperandsOf(n);
  if (auto engine = TunedModelGemm(g, target))
    return GenerateModelGemm(g, kernel_name, target, *engine, epilogue);
  return GenerateGemm(g, kernel_name, target, TunedMatMulParams(g.shape, target), epilogue);
}

std::optional<Tunable> MatMulNodeTunable(const ir::Node& n, const Target& t) {
  RequireOneFloatType(n);
  GemmOperands g = OperandsOf(n);
  if (auto engine = ModelGemmTunable(g, t)) return engine;
  return MatMulTunable(g.shape, t);
}

}  // namespace texel::codegen
