#include "codegen/opencl/conv_blocked.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/window.h"
#include "codegen/opencl/window_rows.h"

namespace texel::codegen {
namespace {

constexpr int kVersion = 5;

// The row block of lo to hi pixels (the whole row when shorter) that leaves the fewest unused
// pixels in the last block; the longer on ties (fewer broadcasts per filter load). One vector of
// channels takes 6-14; two take 5-8 (2 x 8 accumulators and the two filter vectors leave
// AVX-512's 32 registers room; 2 x 11 ran 1.7x slower than 2 x 8 on SqueezeNet's 3x3
// convolutions).
int64_t RowBlock(int64_t ow, int64_t lo, int64_t hi) {
  if (ow <= lo) return ow;
  int64_t best = hi;
  for (int64_t rw = hi; rw >= lo; --rw)
    if (CeilDiv(ow, rw) * rw < CeilDiv(ow, best) * best) best = rw;
  return best;
}

// Pixels per vector along the row: 16 where the row has that many (the last vector overlaps the
// one before), else 8. With whole vectors stored as such, a 56-wide row's four vectors of 16
// beat seven of 8 (PoCL, 24 -> 144 1x1 on 56 x 56: 0.098 against 0.123 ms).
int64_t RowVector(int64_t ow) { return ow >= 16 ? 16 : 8; }

// Output channels per work-item along the row: all of at most 8, else 24, 16, 12 or 8, whichever
// leaves the fewest unused, the more on ties: each input vector then feeds more products
// (PoCL, 144 -> 24 1x1 on 56 x 56: 24 channels 0.102 ms, 12 0.199; 24 accumulators of 16 lanes
// fit AVX-512's 32 registers).
int64_t ChannelBlock(int64_t ocg) {
  if (ocg <= 8) return ocg;
  int64_t best = 24;
  for (int64_t wm : {24, 16, 12, 8})
    if (CeilDiv(ocg, wm) * wm < CeilDiv(ocg, best) * best) best = wm;
  return best;
}

bool IsDepthwise(const ir::Node& n) {
  int64_t groups = n.attrs.Int("group", 1);
  return groups > 1 && n.inputs[0]->type.shape[1] == groups &&
         n.outputs[0]->type.shape[1] == groups;
}

}  // namespace

std::optional<Tunable> ConvBlockedTunable(const ir::Node& n, const Target& t) {
  if (t.gpu || n.op != ir::OpKind::kConv || IsDepthwise(n) || !n.inputs[1]->constant) return {};
  for (const ir::Value* v : n.inputs)
    if (v->type.dtype != DType::kFloat32) return {};
  if (n.outputs[0]->type.dtype != DType::kFloat32) return {};
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& wt = n.inputs[1]->type.shape;
  Window3 w = ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  int64_t groups = n.attrs.Int("group", 1);
  Tunable tn;
  tn.family = "conv_blocked";
  tn.version = kVersion;
  tn.signature = fmt::format(
      "n={},ic={},oc={},g={},id={},ih={},iw={},od={},oh={},ow={},kd={},kh={},kw={},sd={},sh={},"
      "sw={},dtype=f32",
      x[0], x[1], wt[0], groups, w.in[0], w.in[1], w.in[2], w.out[0], w.out[1], w.out[2], w.k[0],
      w.k[1], w.k[2], w.s[0], w.s[1], w.s[2]);
  int64_t ocg = wt[0] / groups, ow = w.out[2];
  int64_t voc0 = ocg > 8 ? 16 : 8;
  // Long rows with few output channels, or 1x1 filters over few input channels, take vectors
  // along the row: along the channels, each accumulator lane is stored on its own, which costs
  // more than the few products per output (PoCL, MobileNetV2's 16 -> 96 1x1 convolution on
  // 112 x 112: 1.27 -> 0.23 ms; SqueezeNet's 3 -> 64 3x3 stride 2 went 2x slower along the row).
  bool one_by_one = w.k[0] * w.k[1] * w.k[2] == 1;
  if (ow >= 48 && (ocg <= 32 || (one_by_one && wt[1] <= 32)))
    tn.candidates.push_back({{"along", 1}, {"vw", RowVector(ow)}, {"wm", ChannelBlock(ocg)}});
  // Two vectors of channels where there are that many (each broadcast pixel feeds two FMAs).
  else if (ocg > 16)
    tn.candidates.push_back({{"along", 0}, {"nv", 2}, {"rw", RowBlock(ow, 5, 8)}, {"voc", 16}});
  else
    tn.candidates.push_back({{"along", 0}, {"nv", 1}, {"rw", RowBlock(ow, 6, 14)}, {"voc", voc0}});
  auto add = [&](TunePoint p) {
    if (p != tn.candidates[0]) tn.candidates.push_back(std::move(p));
  };
  // Along the channels: nv vectors of voc channels x rw pixels (nv x rw accumulators of the 32
  // vector registers AVX-512 has).
  for (int64_t nv : {1, 2, 4})
    for (int64_t voc : {8, 16})
      for (int64_t rw : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 20, 24, 28})
        if (rw * voc * nv <= 256 && rw <= ow && (nv - 1) * voc < ocg)
          add({{"along", 0}, {"nv", nv}, {"rw", rw}, {"voc", voc}});
  // Along the row: vw pixels in a vector x wm channels (window_rows.cl).
  for (int64_t vw : {8, 16})
    for (int64_t wm : {2, 4, 6, 8, 12, 16, 24})
      if (wm * vw <= 384 && wm <= 2 * ocg) add({{"along", 1}, {"vw", vw}, {"wm", wm}});
  return tn;
}

KernelSpec GenerateConvBlocked(const ir::Node& n, const std::string& kernel_name,
                               const TunePoint& p, const Chain& epilogue) {
  if (p.at("along") == 1) return GenerateConvRows(n, kernel_name, p.at("vw"), p.at("wm"), epilogue);
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& wt = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  Window3 w = ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  int64_t groups = n.attrs.Int("group", 1);
  int64_t voc = p.at("voc"), rw = p.at("rw"), nv = p.at("nv");
  int64_t ocg = y[1] / groups, ocb = CeilDiv(ocg, voc);
  KernelSource src(kernel_name, "conv_blocked");
  DefineStorage(src, DType::kFloat32);
  for (const auto& [key, value] : WindowDefines(w)) src.Define(key, value);
  src.Define("C", x[1]).Define("COUT", y[1]).Define("G", groups).Define("ICG", x[1] / groups);
  src.Define("OCG", ocg).Define("OCB", ocb).Define("VOC", voc).Define("RW", rw);
  src.Define("NV", nv);
  DefineRowPrefetch(src, kernel_name);
  src.Define("TV", fmt::format("float{}", voc));
  src.Define("VLOAD(p)", fmt::format("vload{}(0, (p))", voc));
  src.Define("VSTORE_TO(v, p)", fmt::format("vstore{}((v), 0, (p))", voc));
  KernelSpec spec = FinishConvKernel(n, src, kernel_name, epilogue);
  ConstTensorPtr filters = n.inputs[1]->constant;
  spec.packed.push_back(
      {1, [filters, groups, voc] { return PackFiltersByOutput(*filters, groups, voc); }});
  spec.local = {1, 1, 1};
  spec.global = {static_cast<size_t>(CeilDiv(w.out[2], rw)),
                 static_cast<size_t>(w.out[0] * w.out[1]),
                 static_cast<size_t>(x[0] * groups * CeilDiv(ocb, nv))};
  spec.flops = ConvFlops(n);
  return spec;
}

}  // namespace texel::codegen
