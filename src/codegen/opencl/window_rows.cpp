#include "codegen/opencl/window_rows.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/window.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

constexpr int kVersion = 3;

// The first and last starts of vw outputs along the row whose windows stay inside it, loaded as
// vectors (first > last: there are none).
std::pair<int64_t, int64_t> VectorsInside(const Window3& w, int64_t vw) {
  if (w.s[2] > 2) return {1, 0};
  int64_t first = CeilDiv(w.pb[2], w.s[2]);
  int64_t last = std::min(
      w.out[2] - vw, FloorDiv(w.in[2] - (w.k[2] - 1) * w.d[2] - w.s[2] * vw + w.pb[2], w.s[2]));
  return {first, last};
}

Window3 WindowOf(const ir::Node& n) {
  if (n.op == ir::OpKind::kConv) {
    const Shape& wt = n.inputs[1]->type.shape;
    return ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  }
  return ToWindow3(n, n.attrs.Ints("kernel"));
}

// The lane offsets of output chunk lanes' inputs for each tap along the row, in units of the
// chunk vectors the taps read (stride 1: inputs; stride 2: even or odd inputs), and whether the
// shift variant applies: stride 1 or 2, every offset within one chunk of the output chunk.
struct LaneShifts {
  bool applies = false;
  std::vector<int64_t> offset;  // per tap: kw * DW - PW (stride 2: halved, rounded down)
  std::vector<int> odd;         // per tap, stride 2: reads the odd inputs
};

LaneShifts ShiftsOf(const Window3& w, int64_t vw) {
  LaneShifts ls;
  if (w.s[2] > 2) return ls;
  ls.applies = true;
  for (int64_t kw = 0; kw < w.k[2]; ++kw) {
    int64_t d = kw * w.d[2] - w.pb[2];
    int64_t m = w.s[2] == 2 ? FloorDiv(d, 2) : d;
    ls.offset.push_back(m);
    ls.odd.push_back(w.s[2] == 2 && d - 2 * m == 1);
    ls.applies = ls.applies && m >= -vw && m <= vw;
  }
  return ls;
}

// A shuffle2 mask literal of vw lanes from `first` on, `step` apart.
std::string Lanes(int64_t vw, int64_t first, int64_t step) {
  std::string lanes;
  for (int64_t t = 0; t < vw; ++t) lanes += fmt::format("{}{}", t ? ", " : "", first + t * step);
  return fmt::format("(uint{})({})", vw, lanes);
}

// PARTIAL(p): the r (< vw) inputs from p as vector loads of 8, 4, 2 and 1 that stay inside the
// row, PAD in the remaining lanes.
std::string PartialLoad(int64_t vw, int64_t r) {
  if (r == 0) return "((TV)(PAD))";
  std::string parts;
  int64_t at = 0;
  for (int64_t piece : {8, 4, 2, 1})
    if (r - at >= piece) {
      parts += at ? ", " : "";
      parts +=
          piece == 1 ? fmt::format("(p)[{}]", at) : fmt::format("vload{}(0, (p) + {})", piece, at);
      at += piece;
    }
  for (int64_t t = r; t < vw; ++t) parts += ", (T)(PAD)";
  return fmt::format("((TV)({}))", parts);
}

// TAPS(acc, row, j, wk): the taps along input row `row` for output chunk j. A tap whose inputs
// lie inside the row loads them as one vector from where they start (stride 2: the even lanes of
// two); near the row's ends it shifts them in from the chunks before and after (stride 1: chunks
// j - 1, j, j + 1; stride 2: the even or odd lanes of chunk pairs 2j - 2 to 2j + 3), PAD beyond
// the row. Shifting everywhere was slower: the compiler narrows the neighbours' loads to the
// lanes a shift takes and reassembles them with permutes (MobileNetV2's 32-channel 112 x 112
// depthwise convolution 0.16 -> 0.17 ms on PoCL, its stride-2 ones 2x slower). With j known
// after unrolling, each tap keeps one of the two.
std::string TapsMacro(const Window3& w, const LaneShifts& ls, int64_t vw) {
  bool s2 = w.s[2] == 2;
  auto chunk = [&](int kind, int64_t which) {  // lanes of kind 0 (even) or 1 (odd), or all
    std::string k = fmt::format("(j) + {}", which);
    if (!s2) return fmt::format("CHUNK(row, {})", k);
    const char* lanes = kind ? "odd" : "even";
    return fmt::format("((TV)(CHUNK(row, 2 * ({})).{}, CHUNK(row, 2 * ({}) + 1).{}))", k, lanes, k,
                       lanes);
  };
  std::string taps;
  for (size_t kw = 0; kw < ls.offset.size(); ++kw) {
    int64_t m = ls.offset[kw], d = kw * w.d[2] - w.pb[2];
    int kind = ls.odd[kw];
    std::string shifted = m == 0  ? chunk(kind, 0)
                          : m < 0 ? fmt::format("shuffle2({}, {}, {})", chunk(kind, -1),
                                                chunk(kind, 0), Lanes(vw, vw + m, 1))
                                  : fmt::format("shuffle2({}, {}, {})", chunk(kind, 0),
                                                chunk(kind, 1), Lanes(vw, m, 1));
    std::string start = fmt::format("{} * (j) * VW + {}", s2 ? 2 : 1, d);
    std::string direct =
        s2 ? fmt::format("((TV)(VLOAD((row) + {0}).even, VLOAD((row) + {0} + VW).even))", start)
           : fmt::format("VLOAD((row) + {})", start);
    taps += fmt::format(
        " acc = ACC(acc, {0} >= 0 && {0} + {1} * VW <= IW ? {2} : {3}, WEIGHT((wk) + {4}));", start,
        s2 ? 2 : 1, direct, shifted, kw);
  }
  return fmt::format("{{{} }}", taps);
}

}  // namespace

std::optional<Tunable> WindowRowsTunable(const ir::Node& n, const Target& t) {
  if (t.gpu || (!IsDepthwiseConv(n) && n.op != ir::OpKind::kMaxPool)) return {};
  for (const ir::Value* v : n.inputs)
    if (v->type.dtype != DType::kFloat32) return {};
  if (n.outputs.size() != 1 || n.outputs[0]->type.dtype != DType::kFloat32) return {};
  const Shape& x = n.inputs[0]->type.shape;
  Window3 w = WindowOf(n);
  Tunable tn;
  tn.family = "window_rows";
  tn.version = kVersion;
  tn.signature = fmt::format(
      "op={},n={},c={},id={},ih={},iw={},od={},oh={},ow={},kd={},kh={},kw={},sd={},sh={},sw={},"
      "dtype=f32",
      n.op == ir::OpKind::kConv ? "dwconv" : "maxpool", x[0], x[1], w.in[0], w.in[1], w.in[2],
      w.out[0], w.out[1], w.out[2], w.k[0], w.k[1], w.k[2], w.s[0], w.s[1], w.s[2]);
  int64_t rows = w.out[0] * w.out[1], planes = x[0] * x[1];
  int64_t ow = w.out[2];
  // The widest vector some of whose starts keep the window inside the row (the row's ends one
  // output at a time), else one that covers the row.
  int64_t vw0 = ow >= 12 ? 16 : ow > 4 ? 8 : 4;
  for (int64_t vw : {16, 8, 4}) {
    auto [first, last] = VectorsInside(w, vw);
    if (first <= last) {
      vw0 = vw;
      break;
    }
  }
  int64_t rh0 = std::clamp<int64_t>(rows * planes / 64, 1, rows);
  // Whole rows in chunks where the taps' lanes can be shifted in (stride 1 or 2): the narrowest
  // vector of 4, 8 or 16 that covers rows of up to 16, else 16.
  int64_t cw0 = ow <= 4 ? 4 : ow <= 8 ? 8 : 16;
  if (ShiftsOf(w, cw0).applies)
    tn.candidates.push_back({{"rh", rh0}, {"shift", 1}, {"vw", cw0}});
  else
    tn.candidates.push_back({{"rh", rh0}, {"shift", 0}, {"vw", vw0}});
  for (int64_t shift : {0, 1})
    for (int64_t vw : {4, 8, 16})
      for (int64_t rh = 1; rh <= rows; rh *= 2) {
        TunePoint p{{"rh", rh}, {"shift", shift}, {"vw", vw}};
        if (shift && !ShiftsOf(w, vw).applies) continue;
        if (p != tn.candidates[0]) tn.candidates.push_back(p);
      }
  return tn;
}

namespace {

// VSTORE(v, i) (vw results to the output from flat index i), VSTORE_TO(v, p) and, where the
// epilogue has a vector form, VEPILOGUE (ApplyVectorEpilogue).
void DefineVectorStores(KernelSource& src, const ir::Node& n, const std::string& kernel_name,
                        int64_t vw, const Chain& epilogue) {
  src.Define("VSTORE(v, i)", fmt::format("vstore{}((v), 0, out + (i))", vw));
  src.Define("VSTORE_TO(v, p)", fmt::format("vstore{}((v), 0, (p))", vw));
  ApplyVectorEpilogue(src, kernel_name, n.outputs[0], epilogue, static_cast<int>(vw));
}

// Defines what convolution and pooling differ in for both kernels (what a tap does, what lies
// beyond the input, the filters and bias), binds the arguments, applies the fused epilogue and
// renders the source.
KernelSpec FinishWindowKernel(const ir::Node& n, KernelSource& src, const std::string& kernel_name,
                              const Chain& epilogue) {
  bool conv = n.op == ir::OpKind::kConv;
  src.Define("INIT", conv ? "0" : "-INFINITY").Define("PAD", conv ? "0" : "-INFINITY");
  src.Define("ACC(acc, v, wt)", conv ? "(v) * (wt) + (acc)" : "fmax(acc, v)");
  src.Define("WEIGHT(i)", conv ? "LOAD(w, i)" : "0");
  src.Define("WEIGHT_PARAM", conv ? ", __global const T_STORE* restrict w" : "");
  if (conv) return FinishConvKernel(n, src, kernel_name, epilogue);
  src.Define("BIAS_PARAM", "").Define("BIAS(c)", "0");
  KernelSpec spec;
  spec.name = kernel_name;
  spec.args = {n.inputs[0]->id, n.outputs[0]->id};
  ApplyEpilogue(src, kernel_name, n.outputs[0], epilogue, spec);
  spec.source = src.Render();
  return spec;
}

// The window_rows kernel of n: vw outputs per vector, wm output channels and rh rows per
// work-item.
KernelSpec RowsKernel(const ir::Node& n, const std::string& kernel_name, int64_t vw, int64_t wm,
                      int64_t rh, const Chain& epilogue) {
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  Window3 w = WindowOf(n);
  bool conv = n.op == ir::OpKind::kConv;
  // Pooling: one group per channel, one channel in and out.
  int64_t groups = conv ? n.attrs.Int("group", 1) : x[1];
  int64_t icg = x[1] / groups, ocg = y[1] / groups, ocb = CeilDiv(ocg, wm);
  KernelSource src(kernel_name, "window_rows");
  DefineStorage(src, DType::kFloat32);
  for (const auto& [key, value] : WindowDefines(w)) src.Define(key, value);
  src.Define("C", x[1]).Define("COUT", y[1]).Define("G", groups).Define("ICG", icg);
  src.Define("OCG", ocg).Define("OCB", ocb).Define("WM", wm);
  src.Define("VW", vw).Define("RH", rh);
  if (conv && icg > 1) DefineRowPrefetch(src, kernel_name);
  src.Define("SPAN", vw * w.s[2] + (w.k[2] - 1) * w.d[2]);
  src.Define("TV", fmt::format("float{}", vw));
  src.Define("VLOAD(p)", fmt::format("vload{}(0, (p))", vw));
  src.Define("ELEM(v, e)", "(((T*)&(v))[e])");
  // Vectors whose windows stay inside the row start from VLO to VHI; the outputs outside that
  // range go one at a time (EDGES) where there is such a vector and the loads are vectors
  // (stride 1 or 2). The last vector may overlap the one before: its outputs are written twice,
  // alike, as a step's arguments never share memory (runtime/memory_plan.h).
  auto [vlo, vhi] = VectorsInside(w, vw);
  bool edges = vlo <= vhi;
  src.Define("EDGES", edges).Define("VLO", vlo).Define("VHI", vhi);
  src.Define("VECS", edges ? CeilDiv(vhi - vlo, vw) + 1 : 0);
  DefineVectorStores(src, n, kernel_name, vw, epilogue);
  KernelSpec spec = FinishWindowKernel(n, src, kernel_name, epilogue);
  // One filter per channel is already in the packed order.
  if (conv && (icg > 1 || ocg > 1)) {
    ConstTensorPtr filters = n.inputs[1]->constant;
    TEXEL_CHECK(filters != nullptr, "conv rows need constant filters");
    spec.packed.push_back(
        {1, [filters, groups, wm] { return PackFiltersByOutput(*filters, groups, wm); }});
  }
  spec.local = {1, 1};
  spec.global = {static_cast<size_t>(CeilDiv(w.out[0] * w.out[1], rh)),
                 static_cast<size_t>(x[0] * groups * ocb)};
  int64_t taps = w.k[0] * w.k[1] * w.k[2];
  spec.flops =
      (conv ? 2.0 * static_cast<double>(icg) : 1.0) * static_cast<double>(NumElements(y) * taps);
  return spec;
}

// The shift variant (window_shift.cl) of depthwise Conv or MaxPool n: whole rows in chunks of vw
// outputs, rh rows of one plane per work-item.
KernelSpec ShiftKernel(const ir::Node& n, const std::string& kernel_name, int64_t vw, int64_t rh,
                       const Chain& epilogue) {
  const Shape& x = n.inputs[0]->type.shape;
  Window3 w = WindowOf(n);
  LaneShifts ls = ShiftsOf(w, vw);
  TEXEL_CHECK(ls.applies, "window_shift needs stride 1 or 2 and taps within a chunk");
  bool conv = n.op == ir::OpKind::kConv;
  KernelSource src(kernel_name, "window_shift");
  DefineStorage(src, DType::kFloat32);
  for (const auto& [key, value] : WindowDefines(w)) src.Define(key, value);
  src.Define("C", x[1]).Define("VW", vw).Define("RH", rh);
  src.Define("CHUNKS", CeilDiv(w.out[2], vw));
  src.Define("TV", fmt::format("float{}", vw));
  src.Define("VLOAD(p)", fmt::format("vload{}(0, (p))", vw));
  src.Define("PARTIAL(p)", PartialLoad(vw, w.in[2] % vw));
  src.Define("TAPS(acc, row, j, wk)", TapsMacro(w, ls, vw));
  DefineVectorStores(src, n, kernel_name, vw, epilogue);
  KernelSpec spec = FinishWindowKernel(n, src, kernel_name, epilogue);
  spec.local = {1, 1};
  spec.global = {static_cast<size_t>(CeilDiv(w.out[0] * w.out[1], rh)),
                 static_cast<size_t>(x[0] * x[1])};
  int64_t taps = w.k[0] * w.k[1] * w.k[2];
  spec.flops =
      (conv ? 2.0 : 1.0) * static_cast<double>(NumElements(n.outputs[0]->type.shape) * taps);
  return spec;
}

}  // namespace

KernelSpec GenerateWindowRows(const ir::Node& n, const std::string& kernel_name, const TunePoint& p,
                              const Chain& epilogue) {
  if (p.at("shift")) return ShiftKernel(n, kernel_name, p.at("vw"), p.at("rh"), epilogue);
  return RowsKernel(n, kernel_name, p.at("vw"), 1, p.at("rh"), epilogue);
}

KernelSpec GenerateConvRows(const ir::Node& n, const std::string& kernel_name, int64_t vw,
                            int64_t wm, const Chain& epilogue) {
  return RowsKernel(n, kernel_name, vw, wm, 1, epilogue);
}

}  // namespace texel::codegen
