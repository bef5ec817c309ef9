#include "codegen/opencl/window_rows.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/window.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

constexpr int kVersion = 2;

bool IsDepthwiseConv(const ir::Node& n) {
  int64_t groups = n.attrs.Int("group", 1);
  return n.op == ir::OpKind::kConv && groups > 1 && n.inputs[0]->type.shape[1] == groups &&
         n.outputs[0]->type.shape[1] == groups;
}

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
  tn.candidates.push_back({{"rh", rh0}, {"vw", vw0}});
  for (int64_t vw : {4, 8, 16})
    for (int64_t rh = 1; rh <= rows; rh *= 2) {
      TunePoint p{{"rh", rh}, {"vw", vw}};
      if (p != tn.candidates[0]) tn.candidates.push_back(p);
    }
  return tn;
}

namespace {

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
  src.Define("SPAN", vw * w.s[2] + (w.k[2] - 1) * w.d[2]);
  src.Define("TV", fmt::format("float{}", vw));
  src.Define("VLOAD(p)", fmt::format("vload{}(0, (p))", vw));
  src.Define("ELEM(v, e)", "(((T*)&(v))[e])");
  src.Define("INIT", conv ? "0" : "-INFINITY").Define("PAD", conv ? "0" : "-INFINITY");
  src.Define("ACC(acc, v, wt)", conv ? "(v) * (wt) + (acc)" : "fmax(acc, v)");
  // Vectors whose windows stay inside the row start from VLO to VHI; the outputs outside that
  // range go one at a time (EDGES) where there is such a vector and the loads are vectors
  // (stride 1 or 2). The last vector may overlap the one before: its outputs are written twice,
  // alike, as a step's arguments never share memory (runtime/memory_plan.h).
  auto [vlo, vhi] = VectorsInside(w, vw);
  bool edges = vlo <= vhi;
  src.Define("EDGES", edges).Define("VLO", vlo).Define("VHI", vhi);
  src.Define("VECS", edges ? CeilDiv(vhi - vlo, vw) + 1 : 0);
  src.Define("WEIGHT(i)", conv ? "LOAD(w, i)" : "0");
  src.Define("WEIGHT_PARAM", conv ? ", __global const T_STORE* restrict w" : "");
  KernelSpec spec;
  if (conv) {
    spec = FinishConvKernel(n, src, kernel_name, epilogue);
    // One filter per channel is already in the packed order.
    if (icg > 1 || ocg > 1) {
      ConstTensorPtr filters = n.inputs[1]->constant;
      TEXEL_CHECK(filters != nullptr, "conv rows need constant filters");
      spec.packed.push_back(
          {1, [filters, groups, wm] { return PackFiltersByOutput(*filters, groups, wm); }});
    }
  } else {
    src.Define("BIAS_PARAM", "").Define("BIAS(c)", "0");
    spec.name = kernel_name;
    spec.args = {n.inputs[0]->id, n.outputs[0]->id};
    ApplyEpilogue(src, kernel_name, n.outputs[0], epilogue, spec);
    spec.source = src.Render();
  }
  spec.local = {1, 1};
  spec.global = {static_cast<size_t>(CeilDiv(w.out[0] * w.out[1], rh)),
                 static_cast<size_t>(x[0] * groups * ocb)};
  int64_t taps = w.k[0] * w.k[1] * w.k[2];
  spec.flops =
      (conv ? 2.0 * static_cast<double>(icg) : 1.0) * static_cast<double>(NumElements(y) * taps);
  return spec;
}

}  // namespace

KernelSpec GenerateWindowRows(const ir::Node& n, const std::string& kernel_name, const TunePoint& p,
                              const Chain& epilogue) {
  return RowsKernel(n, kernel_name, p.at("vw"), 1, p.at("rh"), epilogue);
}

KernelSpec GenerateConvRows(const ir::Node& n, const std::string& kernel_name, int64_t vw,
                            int64_t wm, const Chain& epilogue) {
  return RowsKernel(n, kernel_name, vw, wm, 1, epilogue);
}

}  // namespace texel::codegen
