// Attention: one kernel per Attention node (and a merge kernel where the keys are split),
// generated for its head dims, views and biases: kernels/attention.cl (a row per work-item),
// attention_tiled.cl (GPUs, fp32 arithmetic) or attention_mma.cl (f16 on NVIDIA's matrix engine).
// Parameters (AttentionParams, explicit so that a tuner or benchmark can choose them): BQ query
// rows per work-group, BK keys per local-memory tile, VW lanes per vector access, the splits.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <optional>
#include <vector>

#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "ir/attention_layout.h"
#include "ir/host_eval.h"

namespace texel::codegen {

namespace {

// Local memory of the tiled kernel (kernels/attention_tiled.cl): Q, K (two tiles with
// async_copy, P in their place), V and P tiles, the row exchanges.
uint64_t TiledLocalBytes(const AttentionParams& p, int64_t d, int64_t dv) {
  int64_t pt = p.bk * (p.bq + 4);
  int64_t ks = p.async_copy ? 2 * p.bk * std::max<int64_t>(d + 4, p.bq + 4) : p.bk * d + pt;
  int64_t wg = p.bq / p.rm * 8;
  return 4 * static_cast<uint64_t>(d * p.bq + ks + p.bk * dv + p.bq * 8 + wg);
}

// Rows of view m (dims r-2, r-1) are contiguous and every row starts 16-byte aligned (`chunk`
// elements: 4 f32, 8 f16).
bool RowsAligned(const ir::IndexMap& m, int64_t chunk) {
  size_t r = m.shape.size();
  if (m.strides[r - 1] != 1 || m.offset % chunk != 0) return false;
  for (size_t d = 0; d + 1 < r; ++d)
    if (m.shape[d] != 1 && m.strides[d] % chunk != 0) return false;
  return true;
}

// Local memory of the matrix-engine kernel (kernels/attention_mma.cl): two K and two V tiles of
// f16, rows padded by 8; emulated, also P (f16) and the quad exchanges.
uint64_t MmaLocalBytes(const AttentionParams& p, int64_t d, int64_t dv, bool emulated) {
  uint64_t bytes = 2 * 2 * static_cast<uint64_t>(p.bk * (d + 8 + dv + 8));
  if (emulated) bytes += 2 * static_cast<uint64_t>(p.bq * p.bk) + 4 * 2 * p.bq;
  return bytes;
}

// The matrix-engine kernel's parameters for f16 storage, where it takes the shape.
std::optional<AttentionParams> MmaAttentionParams(int64_t sq, int64_t sk, int64_t batch, int64_t d,
                                                  int64_t dv, const Target& t) {
  // f16 on the matrix engine: warps of 16 rows, 4 per work-group, halved while the work-groups
  // number less than half the compute units; keys in tiles of 64, halved down to 16 while two
  // tiles of K and V do not fit (else the fp32-arithmetic kernels); split over the keys (a second
  // kernel merges) only where the work-groups are still fewer than half the compute units, each
  // split at least two tiles. Measured on the H100 (texel_attention_bench --dtype f16,
  // docs/attention.md): 2 warps at ViT's 197 x 12 heads (12.7 TFLOP/s against 11.3 with 1), 4 at
  // 1024 x 12 (89.5 against 84.8 with 2), 1 and 2 alike at BERT's 128 x 12; splitting 2 ways was
  // slower at each of those.
  if (!(t.mma_sync || t.mma_emulated) || d % 16 != 0 || dv % 16 != 0 || d > 128 || dv > 128 ||
      t.max_work_group_size < 128)
    return std::nullopt;
  AttentionParams p;
  p.mma = true;
  p.fast_exp = t.gpu;
  int warps = 4;
  auto groups = [&](int w) { return (sq + 16 * w - 1) / (16 * w) * batch; };
  const int64_t half_cus = std::max<int64_t>(1, t.compute_units / 2);
  while (warps > 1 && groups(warps) < half_cus) warps /= 2;
  p.bq = 16 * warps;
  for (p.bk = 64; p.bk > 16 && MmaLocalBytes(p, d, dv, !t.mma_sync) > t.local_mem_bytes;) p.bk /= 2;
  int64_t want = groups(warps) >= half_cus
                     ? 1
                     : (static_cast<int64_t>(t.compute_units) + groups(warps) - 1) / groups(warps);
  p.splits = static_cast<int>(std::clamp<int64_t>(std::min(want, sk / (2 * p.bk)), 1, 16));
  if (MmaLocalBytes(p, d, dv, !t.mma_sync) > t.local_mem_bytes) return std::nullopt;
  return p;
}

}  // namespace

AttentionParams ChooseAttentionParams(int64_t sq, int64_t sk, int64_t batch, int64_t d, int64_t dv,
                                      DType storage, bool causal, const Target& t) {
  if (storage == DType::kFloat16)
    if (auto mma = MmaAttentionParams(sq, sk, batch, d, dv, t)) return *mma;
  AttentionParams p;
  size_t elem_bytes = storage == DType::kFloat64 ? 8 : 4;
  p.vw = d % 4 == 0 && dv % 4 == 0 ? 4 : 1;
  int64_t rows = 1;
  while (rows < sq) rows *= 2;
  if (t.gpu) {
    // Whole warps; halve the rows per work-group while that leaves compute units idle.
    p.bq = 64;
    while (p.bq > 32 && (sq + p.bq - 1) / p.bq * batch < static_cast<int64_t>(t.compute_units))
      p.bq /= 2;
  } else {
    p.bq = static_cast<int>(std::min<int64_t>(16, rows));
  }
  p.bq = static_cast<int>(std::min<size_t>(p.bq, t.max_work_group_size));
  // K and V tiles take at most half the local memory.
  p.bk = 32;
  while (p.bk > 4 && static_cast<uint64_t>(p.bk * (d + dv)) * elem_bytes > t.local_mem_bytes / 2)
    p.bk /= 2;
  // The tiled kernel (up to 64 rows and 128 work-items, 4 x 4 score and 4 x DV/8 output blocks
  // each) where its local memory fits: Q, a K and a V tile and the probabilities, 40 KiB at d 64
  // with 64 rows.
  AttentionParams tiled64;
  tiled64.bq = 64;
  p.tiled = t.gpu && elem_bytes == 4 && d % 4 == 0 && dv % 32 == 0 && sq >= 32 &&
            TiledLocalBytes(tiled64, d, dv) <= t.local_mem_bytes && t.max_work_group_size >= 128;
  if (p.tiled) {
    // 32 rows per work-group where 64-row blocks would number at most a quarter of the compute
    // units (BERT's sequence of 128 with 12 heads: 24): twice the work-groups to split. 4 rows
    // per work-item: 8 (half the local reads per FMA) measured slower at every shape on the
    // H100 (docs/attention.md).
    p.bq = (sq + 63) / 64 * batch * 4 <= static_cast<int64_t>(t.compute_units) ? 32 : 64;
    p.rm = 4;
    p.bk = 32;
    p.vw = 4;
    // K and V by cp.async where the device has it (or emulates an sm_80 GPU's kernels: tests)
    // and the local memory holds two K tiles (the views' alignment is checked by the
    // generator, which falls back to registers).
    p.async_copy =
        (t.mma_sync || t.mma_emulated) && TiledLocalBytes(tiled64, d, dv) <= t.local_mem_bytes;
    // With cp.async, 32-row blocks split about 4 per compute unit are as fast or faster at every
    // shape measured on the H100 (27.4 against 26.4 TFLOP/s at sequence 1024, 5.7 against 4.9 at
    // ViT's 197, 6.0 against 5.7 at Swin's windows) except causal attention with enough 64-row
    // blocks for the compute units (1024: 15.8 against 14.6).
    if (p.async_copy)
      p.bq = causal && (sq + 63) / 64 * batch >= static_cast<int64_t>(t.compute_units) ? 64 : 32;
  }
  // Too few work-groups leave a GPU mostly idle (one row per work-item: a sequence of 1024
  // with 12 heads is 384 warps on 132 compute units): split the keys until there are about 8
  // work-groups per compute unit, each split at least two tiles. The tiled kernel, whose last
  // work-group per row block merges the splits: about 2 per compute unit (4 when causal, whose
  // groups have half the work on average), a power of two of splits (even ranges), each at least
  // two tiles. Measured on an H100 (texel_attention_bench, docs/attention.md): split 2 is the
  // fastest at sequences 128, 197 and 1024, 4 at causal 1024 (3 and 6 are 5-15% slower);
  // with cp.async about 4 per compute unit (above); native_exp saves 3-10%.
  if (t.gpu) {
    p.fast_exp = true;
    p.warp_sync = p.tiled && t.ptx && t.warp_size == 32;
    int64_t groups = (sq + p.bq - 1) / p.bq * batch;
    int64_t per_cu = !p.tiled ? 8 : causal || p.async_copy ? 4 : 2;
    int64_t want = (per_cu * static_cast<int64_t>(t.compute_units) + groups - 1) / groups;
    int64_t most = sk / (2 * p.bk);
    if (p.tiled) {
      want = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(want)));
      most =
          static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(std::max<int64_t>(most, 1))));
    }
    p.splits = static_cast<int>(std::clamp<int64_t>(std::min(want, most), 1, 16));
  }
  return p;
}

namespace {

// The batch coordinates bc<d> of work-group g over `batch` (statements).
std::string BatchCoords(const Shape& batch) {
  std::string s = "long t = g;";
  for (size_t d = batch.size(); d-- > 0;)
    s += fmt::format(" const long bc{} = t % {}; t /= {};", d, batch[d], batch[d]);
  return s + " (void)t;";
}

// "var = offset + bc0 * s0 + ...;" over the batch dims where the operand varies (broadcast dims of
// size 1 add nothing), plus its constant offset.
std::string BatchOffset(const std::string& var, const Shape& shape,
                        const std::vector<int64_t>& strides, int64_t offset, size_t nbatch) {
  std::string s = fmt::format(" {} = {}", var, offset);
  size_t lead = nbatch + 2 - shape.size();  // a bias may have fewer dims
  for (size_t d = 0; d + 2 < shape.size(); ++d)
    if (shape[d] != 1 && strides[d] != 0) s += fmt::format(" + bc{} * {}", d + lead, strides[d]);
  return s + ";";
}

// Reads VW elements c*VW.. of row `row` of operand p (offset var `off`), strides rs (row), cs
// (lane), as one VT.
std::string VectorLoad(const std::string& p, const std::string& off, int64_t rs, int64_t cs, int vw,
                       DType t) {
  std::string row = fmt::format("{} + (long)(r) * {}", off, rs);
  if (vw == 1) return fmt::format("LOAD({}, {} + (long)(c) * {})", p, row, cs);
  if (cs == 1 && t == DType::kFloat16) return fmt::format("vload_half4((c), {} + {})", p, row);
  if (cs == 1) return fmt::format("vload4((c), {} + {})", p, row);
  std::string lanes;
  for (int e = 0; e < vw; ++e)
    lanes += fmt::format("{}LOAD({}, {} + (long)((c) * {} + {}) * {})", e ? ", " : "", p, row, vw,
                         e, cs);
  return fmt::format("((VT)({}))", lanes);
}

std::string VectorStore(int64_t rs, int64_t cs, int vw, DType t) {
  std::string row = fmt::format("oo + (long)(r) * {}", rs);
  if (vw == 1) return fmt::format("STORE(o, {} + (long)(c) * {}, x)", row, cs);
  if (cs == 1 && t == DType::kFloat16) return fmt::format("vstore_half4_rte(x, (c), o + {})", row);
  if (cs == 1) return fmt::format("vstore4(x, (c), o + {})", row);
  std::string s = "do { const VT y_ = (x);";
  const char* lane[] = {"s0", "s1", "s2", "s3"};
  for (int e = 0; e < vw; ++e)
    s += fmt::format(" STORE(o, {} + (long)((c) * {} + {}) * {}, y_.{});", row, vw, e, cs, lane[e]);
  return s + " } while (0)";
}

// What decides an Attention node's kernel beside its target: its layout, storage, mask, biases
// and whether K's and V's rows can be copied as 16-byte pieces of f16 (f16_rows) or f32.
struct AttentionShape {
  ir::AttentionLayout layout;
  DType t;
  bool causal, f16_rows, f32_rows;
  size_t biases;
};

AttentionShape AttentionShapeOf(const ir::Node& n) {
  const ir::Attrs& a = n.attrs;
  AttentionShape s{ir::AttentionLayoutOf(a, n.inputs[0]->type.shape, n.inputs[1]->type.shape,
                                         n.inputs[2]->type.shape),
                   RequireOneFloatType(n),
                   a.Int("causal", 0) != 0,
                   false,
                   false,
                   n.inputs.size() - 3};
  const ir::IndexMap &k = s.layout.k, &v = s.layout.v;
  s.f16_rows = RowsAligned(k, 8) && RowsAligned(v, 8);
  s.f32_rows = RowsAligned(k, 4) && RowsAligned(v, 4);
  return s;
}

// The heuristic's parameters: ChooseAttentionParams', or the fp32-arithmetic kernels' where
// the matrix-engine kernel cannot copy K's and V's rows.
AttentionParams HeuristicAttention(const AttentionShape& s, const Target& target) {
  const ir::AttentionLayout& l = s.layout;
  int64_t nb = NumElements(l.batch);
  AttentionParams p = ChooseAttentionParams(l.sq, l.sk, nb, l.d, l.dv, s.t, s.causal, target);
  if (p.mma && !s.f16_rows) {
    Target plain = target;
    plain.mma_sync = plain.mma_emulated = false;
    p = ChooseAttentionParams(l.sq, l.sk, nb, l.d, l.dv, s.t, s.causal, plain);
  }
  return p;
}

// Whether p's rows per work-group, rows per work-item and splits fit the target (the kernel's
// other parameters being the heuristic's, which CheckAttentionParams accepts).
bool AttentionFits(const AttentionParams& p, const AttentionShape& s, const Target& t) {
  const ir::AttentionLayout& l = s.layout;
  size_t items = static_cast<size_t>(p.mma ? p.bq / 16 * 32 : p.tiled ? p.bq / p.rm * 8 : p.bq);
  if (items > t.max_work_group_size || p.splits < 1 || p.splits > 16) return false;
  if (p.splits > 1 && int64_t{p.splits} * 2 * p.bk > l.sk) return false;  // two tiles a split
  if (p.mma) return MmaLocalBytes(p, l.d, l.dv, !t.mma_sync) <= t.local_mem_bytes;
  if (p.tiled) return TiledLocalBytes(p, l.d, l.dv) <= t.local_mem_bytes;
  return true;
}

constexpr int kAttentionVersion = 1;

TunePoint AttentionPoint(const AttentionParams& p) {
  return {{"kernel", p.mma     ? 2
                     : p.tiled ? 1
                               : 0},
          {"bq", p.bq},
          {"rm", p.rm},
          {"splits", p.splits}};
}

// The heuristic's kernel h (its other choices follow from the shape and the device), with its
// rows per work-group, rows per work-item (tiled) and key splits varied.
Tunable AttentionSpace(const AttentionShape& s, const AttentionParams& h, const Target& target) {
  const ir::AttentionLayout& l = s.layout;
  Tunable tn;
  tn.family = "attention";
  tn.version = kAttentionVersion;
  tn.signature =
      fmt::format("b={},sq={},sk={},d={},dv={},dtype={},causal={},biases={},rows16={},rows4={}",
                  NumElements(l.batch), l.sq, l.sk, l.d, l.dv, DTypeName(s.t), int{s.causal},
                  s.biases, int{s.f16_rows}, int{s.f32_rows});
  tn.candidates.push_back(AttentionPoint(h));
  std::vector<int> bqs = h.mma     ? std::vector<int>{16, 32, 64}
                         : h.tiled ? std::vector<int>{32, 64}
                                   : std::vector<int>{16, 32, 64, 128};
  for (int bq : bqs)
    for (int rm : h.tiled ? std::vector<int>{4, 8} : std::vector<int>{h.rm})
      for (int splits : {1, 2, 3, 4, 8}) {
        if (splits == 3 && h.tiled) continue;  // the tiled kernel's own merge: powers of two
        AttentionParams p = h;
        p.bq = bq, p.rm = rm, p.splits = splits;
        TunePoint pt = AttentionPoint(p);
        if (AttentionFits(p, s, target) &&
            std::find(tn.candidates.begin(), tn.candidates.end(), pt) == tn.candidates.end())
          tn.candidates.push_back(std::move(pt));
      }
  return tn;
}

}  // namespace

Tunable AttentionTunable(const ir::Node& n, const Target& target) {
  AttentionShape s = AttentionShapeOf(n);
  return AttentionSpace(s, HeuristicAttention(s, target), target);
}

std::vector<KernelSpec> GenerateAttention(const ir::Node& n, const std::string& kernel_name,
                                          const Target& target) {
  AttentionShape s = AttentionShapeOf(n);
  AttentionParams p = HeuristicAttention(s, target);
  if (target.tuning != nullptr) {  // without a database the heuristic's point is the choice
    Tunable space = AttentionSpace(s, p, target);
    const TunePoint& pt = Choose(space, target);
    p.bq = static_cast<int>(pt.at("bq"));
    p.rm = static_cast<int>(pt.at("rm"));
    p.splits = static_cast<int>(pt.at("splits"));
  }
  return GenerateAttentionWith(n, kernel_name, target, &p);
}

// Refuses parameters the kernels cannot take (kUnsupported, naming why) and settles the ones
// that follow from others: the tiled kernel's vector width and key tile, copies only where the
// rows allow them (f16_rows: K's and V's rows in 16-byte chunks of f16; f32_rows: of f32).
void CheckAttentionParams(AttentionParams* p, int64_t dh, int64_t dv, DType t, bool f16_rows,
                          bool f32_rows, const Target& target) {
  size_t elem = t == DType::kFloat64 ? 8 : 4;
  if (p->mma) {
    if (p->tiled || p->warp_sync || p->async_copy)
      Fail(ErrorCode::kUnsupported,
           "matrix-engine attention is its own kernel: not tiled, warp_sync or async_copy");
    if (static_cast<size_t>(p->bq / 16 * 32) > target.max_work_group_size)
      Fail(ErrorCode::kUnsupported, "matrix-engine attention: {} warps exceed the work-group size",
           p->bq / 16);
    if (!(target.mma_sync || target.mma_emulated) || t != DType::kFloat16)
      Fail(ErrorCode::kUnsupported, "matrix-engine attention needs mma.sync and f16 storage");
    if (!(dh % 16 == 0 && dv % 16 == 0 && p->bk % 16 == 0 && p->bk > 0 &&
          (p->bq == 16 || p->bq == 32 || p->bq == 64)))
      Fail(ErrorCode::kUnsupported,
           "matrix-engine attention takes head dims and key tiles in sixteens, 16-64 rows");
    if (!f16_rows)
      Fail(ErrorCode::kUnsupported, "matrix-engine attention needs K and V rows 16-byte aligned");
    if (MmaLocalBytes(*p, dh, dv, !target.mma_sync) > target.local_mem_bytes)
      Fail(ErrorCode::kUnsupported, "matrix-engine attention needs {} bytes of local memory",
           MmaLocalBytes(*p, dh, dv, !target.mma_sync));
  }
  if (p->tiled && !(dh % 4 == 0 && dv % 32 == 0 && elem == 4))
    Fail(ErrorCode::kUnsupported, "the tiled attention kernel needs d % 4 == 0, dv % 32 == 0, f32");
  if (p->tiled && !((p->bq == 32 || p->bq == 64) && (p->rm == 4 || p->rm == 8)))
    Fail(ErrorCode::kUnsupported, "the tiled attention kernel takes 32 or 64 rows, 4 or 8 each");
  if (p->tiled) p->vw = 4, p->bk = 32;
  if (p->async_copy && !(p->tiled && f32_rows && t == DType::kFloat32))
    p->async_copy = false;  // the views' rows cannot be copied as 16-byte pieces
  if (p->tiled && TiledLocalBytes(*p, dh, dv) > target.local_mem_bytes)
    Fail(ErrorCode::kUnsupported, "the tiled attention kernel needs {} bytes of local memory",
         TiledLocalBytes(*p, dh, dv));
  if (p->warp_sync && !(target.ptx && target.warp_size == 32))
    Fail(ErrorCode::kUnsupported, "warp-synchronised attention needs 32-lane NVIDIA warps");
  if (p->vw == 4 && (dh % 4 != 0 || dv % 4 != 0)) p->vw = 1;
}

// BATCH_OFFSETS (each operand's offset of the work-group's batch entry) and BIAS(i, j) (the sum
// of the node's bias inputs, read at their broadcast strides, appended to spec.args); returns
// the biases' parameters.
std::string DefineBatchAndBias(KernelSource& src, KernelSpec& spec, const ir::Node& n,
                               const ir::AttentionLayout& layout) {
  const ir::IndexMap &q = layout.q, &k = layout.k, &v = layout.v, &o = layout.o;
  size_t r = q.shape.size();
  std::string offsets = BatchCoords(layout.batch);
  offsets += BatchOffset("qo", q.shape, q.strides, q.offset, r - 2);
  offsets += BatchOffset("ko", k.shape, k.strides, k.offset, r - 2);
  offsets += BatchOffset("vo", v.shape, v.strides, v.offset, r - 2);
  offsets += BatchOffset("oo", o.shape, o.strides, o.offset, r - 2);
  Shape scores = layout.Scores();
  std::string bias = "0", bias_params;
  for (size_t b = 3; b < n.inputs.size(); ++b) {
    const ir::Value* bv = n.inputs[b];
    std::vector<int64_t> bs = ir::BroadcastStrides(bv->type.shape, scores);
    Shape full(scores.size() - bv->type.shape.size(), 1);
    full.insert(full.end(), bv->type.shape.begin(), bv->type.shape.end());
    std::string var = fmt::format("bo{}", b - 3);
    offsets += fmt::format(" long {};", var) + BatchOffset(var, full, bs, 0, r - 2);
    bias += fmt::format(" + LOAD(b{}, {} + (long)(i) * {} + (j) * {})", b - 3, var, bs[r - 2],
                        bs[r - 1]);
    bias_params += fmt::format(", __global const T_STORE* b{}", b - 3);
    spec.args.push_back(bv->id);
  }
  src.Define("BATCH_OFFSETS", offsets);
  src.Define("BIAS(i, j)", "(" + bias + ")");
  return bias_params;
}

std::vector<KernelSpec> GenerateAttentionWith(const ir::Node& n, const std::string& kernel_name,
                                              const Target& target, const AttentionParams* params) {
  DType t = RequireOneFloatType(n);
  const ir::Attrs& a = n.attrs;
  ir::AttentionLayout layout = ir::AttentionLayoutOf(
      a, n.inputs[0]->type.shape, n.inputs[1]->type.shape, n.inputs[2]->type.shape);
  TEXEL_CHECK(ir::AttentionOutputShape(a, layout) == n.outputs[0]->type.shape,
              "attention output shape");
  const ir::IndexMap &q = layout.q, &k = layout.k, &v = layout.v, &o = layout.o;
  const Shape& batch = layout.batch;
  size_t r = q.shape.size();
  int64_t sq = layout.sq, sk = layout.sk, dh = layout.d, dv = layout.dv;
  int64_t nb = NumElements(batch);
  size_t elem = t == DType::kFloat64 ? 8 : 4;
  bool causal = a.Int("causal", 0) != 0;
  AttentionParams p =
      params ? *params : ChooseAttentionParams(sq, sk, nb, dh, dv, t, causal, target);
  // K's and V's rows as 16-byte chunks of f16 (the matrix-engine kernel's copies).
  bool f16_rows = RowsAligned(k, 8) && RowsAligned(v, 8);
  if (!params && p.mma && !f16_rows) {
    // K's and V's rows cannot be copied as 16-byte pieces: the fp32-arithmetic kernels.
    Target plain = target;
    plain.mma_sync = plain.mma_emulated = false;
    p = ChooseAttentionParams(sq, sk, nb, dh, dv, t, causal, plain);
  }
  CheckAttentionParams(&p, dh, dv, t, f16_rows, RowsAligned(k, 4) && RowsAligned(v, 4), target);

  KernelSource src(kernel_name, p.mma     ? "attention_mma"
                                : p.tiled ? "attention_tiled"
                                          : "attention");
  DefineStorage(src, t);
  std::string vt = p.vw == 1 ? "T" : (t == DType::kFloat64 ? "double4" : "float4");
  src.Define("VW", p.vw).Define("VT", vt);
  src.Define("SUMV(a)", p.vw == 1 ? "(a)" : "((a).s0 + (a).s1 + (a).s2 + (a).s3)");
  src.Define("D", dh).Define("DV", dv).Define("SQ", sq).Define("SK", sk);
  src.Define("BQ", p.bq).Define("BK", p.bk);
  if (p.tiled) src.Define("ROWS", p.bq).Define("RM", p.rm).Define("ASYNC", p.async_copy);
  if (p.async_copy || p.mma) DefineAsyncCopy(src, target);
  if (p.mma) {
    DefineMatrixEngine(src, target);
    src.Define("WARPS", p.bq / 16).Define("BKV", p.bk).Define("MMA_PTX", target.mma_sync);
    src.Define("Q_H(r, c)", fmt::format("((__global const ushort*)q)[qo + (long)(r) * {} + "
                                        "(long)(c) * {}]",
                                        q.strides[r - 2], q.strides[r - 1]));
    src.Define("O_STORE1(r, c, x)", fmt::format("STORE(o, oo + (long)(r) * {} + (long)(c) * {}, x)",
                                                o.strides[r - 2], o.strides[r - 1]));
  }
  src.Define("SCALE", FloatLiteral(a.Float("scale")));
  src.Define("CAUSAL", a.Int("causal", 0));
  src.Define("EXP(x)", p.fast_exp ? "native_exp(x)" : "exp(x)");
  // A warp barrier also orders the warp's local-memory accesses (PTX ISA, bar.warp.sync).
  src.Define("ROW_SYNC()", p.warp_sync
                               ? R"(__asm volatile("bar.warp.sync 0xffffffff;" ::: "memory"))"
                               : "barrier(CLK_LOCAL_MEM_FENCE)");
  int64_t chunk = RoundUp(static_cast<size_t>((sk + p.splits - 1) / p.splits), p.bk);
  src.Define("SPLIT", p.splits).Define("NB", fmt::format("{}L", nb));
  std::string begin = p.splits > 1 ? fmt::format("((int)get_group_id(2) * {})", chunk) : "0";
  src.Define("KEY_BEGIN", begin);
  std::string end = fmt::format("min({}, {} + {})", sk, begin, chunk);
  if (a.Int("causal", 0)) end = fmt::format("min({}, (i0) + {} + {})", end, p.bq, sk - sq);
  src.Define("KEY_END(i0)", end);
  src.Define("SPLIT_REC(s, g, i)", "(part + (((long)(s) * NB + (g)) * SQ + (i)) * (DV + 2))");
  src.Define("PART_REC(g, i)", "SPLIT_REC(get_group_id(2), g, i)");
  // The tiled kernel merges its splits itself where work-groups can hand results over.
  bool fixup = p.splits > 1 && p.tiled && target.group_handoff;
  src.Define("FIXUP", fixup);
  if (fixup) DefineArrival(src, target);
  std::string lanes = p.vw == 1 ? "" : std::to_string(p.vw);
  src.Define("PART_STORE(rec, c, x)",
             p.vw == 1 ? "(rec)[c] = (x)" : fmt::format("vstore{}((x), (c), (rec))", lanes));
  src.Define("PART_AT(rec, c)", p.vw == 1 ? "(rec)[c]" : fmt::format("vload{}((c), (rec))", lanes));
  KernelSpec spec;
  spec.name = kernel_name;
  spec.args = {n.inputs[0]->id, n.inputs[1]->id, n.inputs[2]->id, n.outputs[0]->id};
  std::string bias_params = DefineBatchAndBias(src, spec, n, layout);
  // The kernels' parameters (one list for the three templates): q, k, v; the split records where
  // a merge kernel follows, else the output; the biases; with the in-kernel merge its records and
  // arrival counters.
  std::string dest = p.splits > 1 && !fixup ? "__global T* part" : "__global T_STORE* o";
  src.Define("ATTENTION_ARGS",
             "__global const T_STORE* q, __global const T_STORE* k, __global const T_STORE* v, " +
                 dest + bias_params + (fixup ? ", __global T* part, __global int* counters" : ""));
  src.Define("Q_AT(r, c)", VectorLoad("q", "qo", q.strides[r - 2], q.strides[r - 1], p.vw, t));
  src.Define("K_AT(r, c)", VectorLoad("k", "ko", k.strides[r - 2], k.strides[r - 1], p.vw, t));
  src.Define("V_AT(r, c)", VectorLoad("v", "vo", v.strides[r - 2], v.strides[r - 1], p.vw, t));
  if (p.async_copy || p.mma) {
    // Chunk c of 16 bytes of row r.
    int chunk_elems = p.mma ? 8 : 4;
    src.Define("K_PTR(r, c)",
               fmt::format("(k + ko + (long)(r) * {} + (c) * {})", k.strides[r - 2], chunk_elems));
    src.Define("V_PTR(r, c)",
               fmt::format("(v + vo + (long)(r) * {} + (c) * {})", v.strides[r - 2], chunk_elems));
  }
  src.Define("O_STORE(r, c, x)", VectorStore(o.strides[r - 2], o.strides[r - 1], p.vw, t));
  spec.source = src.Render();
  // bar.warp.sync, membar.gl; mma.sync, ldmatrix, cp.async, shfl.sync
  spec.inline_ptx = p.warp_sync || (fixup && target.ptx) || (p.mma && target.mma_sync);
  spec.tensor_cores = p.mma && target.mma_sync;
  size_t groups = static_cast<size_t>((sq + p.bq - 1) / p.bq);
  size_t lw = static_cast<size_t>(p.mma ? p.bq / 16 * 32 : p.tiled ? p.bq / p.rm * 8 : p.bq);
  spec.global = {groups * lw, static_cast<size_t>(nb), static_cast<size_t>(p.splits)};
  spec.local = {lw, 1, 1};
  double pairs = static_cast<double>(nb) * static_cast<double>(sq) * static_cast<double>(sk);
  if (a.Int("causal", 0)) pairs /= 2;
  spec.flops = 2.0 * pairs * static_cast<double>(dh + dv);
  if (p.splits == 1) return {spec};
  // The partial rows go to a scratch buffer; the merge kernel writes the output.
  int64_t part_bytes = p.splits * nb * sq * (dv + 2) * static_cast<int64_t>(elem);
  spec.scratch_bytes = {part_bytes};
  if (fixup) {
    spec.args.push_back(-1);
    spec.args.push_back(-2);
    spec.scratch_bytes.push_back(static_cast<int64_t>(groups) * nb * 4);
    spec.zeroed_scratch = {1};
    return {spec};
  }
  spec.args[3] = -1;
  KernelSpec merge;
  merge.name = kernel_name + "_merge";
  src.Retarget(merge.name, "attention_merge");
  merge.source = src.Render();
  merge.args = {-1, n.outputs[0]->id};
  merge.scratch_bytes = {part_bytes};
  merge.global = {RoundUp(static_cast<size_t>(nb * sq * (dv / p.vw)), 64)};
  merge.local = {64};
  merge.flops = static_cast<double>(nb * sq * dv * p.splits * 3);
  return {spec, merge};
}

}  // namespace texel::codegen
