// Window kernels: transposed convolution (kernels/conv_transpose.cl), pooling (kernels/pool.cl)
// and, on GPUs, depthwise convolution (kernels/depthwise.cl, a point of the depthwise family),
// over 3 spatial dims (window.h). Other convolutions run as GEMMs (generate_conv.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/window.h"
#include "codegen/opencl/window_rows.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

// An integer macro value; negative ones in parentheses.
std::string Int(int64_t v) { return v < 0 ? fmt::format("({})", v) : std::to_string(v); }

void DefineWindow(KernelSource& src, const Window3& w) {
  for (const auto& [key, value] : WindowDefines(w)) src.Define(key, value);
}

// One work-item per ox outputs of a row: lx along the output row by up to 64 / lx rows per
// work-group (the kernels skip items past the edges). Work-groups of 8 alone filled a quarter of
// an NVIDIA warp: ResNet-50's max pooling took 20 us on the H100 at batch 1.
void SetWindowGeometry(const Window3& w, int64_t planes, KernelSpec& spec, int ox = 1, int lx = 8) {
  size_t rows = static_cast<size_t>(w.out[0] * w.out[1]);
  size_t ly = std::clamp<size_t>(rows, 1, 64 / static_cast<size_t>(lx));
  size_t items = static_cast<size_t>((w.out[2] + ox - 1) / ox);
  spec.global = {RoundUp(items, static_cast<size_t>(lx)), RoundUp(rows, ly),
                 static_cast<size_t>(planes)};
  spec.local = {static_cast<size_t>(lx), ly, 1};
}

}  // namespace

bool IsDepthwiseConv(const ir::Node& n) {
  int64_t groups = n.attrs.Int("group", 1);
  return n.op == ir::OpKind::kConv && groups > 1 && n.inputs[0]->type.shape[1] == groups &&
         n.outputs[0]->type.shape[1] == groups;
}

void CheckWindowRank(const ir::Node& n) {
  size_t rank = n.inputs[0]->type.shape.size();
  if (rank < 3 || rank > 5)
    Fail(ErrorCode::kUnsupported, "{} over a rank-{} input is not supported on the device",
         OpName(n.op), rank);
}

void CheckPool(const ir::Node& n) {
  CheckWindowRank(n);
  // MaxPool also runs on integers (ONNX allows int8 / uint8); averaging needs floats.
  DType t = n.inputs[0]->type.dtype;
  if (n.op == ir::OpKind::kAveragePool)
    RequireOneFloatType(n);
  else if (!IsFloat(t) && t != DType::kInt8 && t != DType::kUInt8 && t != DType::kInt32 &&
           t != DType::kInt64)
    Fail(ErrorCode::kUnsupported, "{} on {} is not supported on the device", OpName(n.op),
         DTypeName(t));
}

Window3 ToWindow3(const ir::Node& n, const Shape& kernel) {
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  CheckWindowRank(n);
  size_t nsp = x.size() - 2;
  const auto& s = n.attrs.Ints("strides");
  const auto& p = n.attrs.Ints("pads");
  const auto& d = n.attrs.Ints("dilations");
  Window3 w;
  size_t lead = 3 - nsp;
  for (size_t i = 0; i < 3; ++i) {
    bool real = i >= lead;
    size_t j = i - lead;
    w.in[i] = real ? x[2 + j] : 1;
    w.out[i] = real ? y[2 + j] : 1;
    w.k[i] = real ? kernel[j] : 1;
    w.s[i] = real ? s[j] : 1;
    w.pb[i] = real ? p[j] : 0;
    w.pe[i] = real ? p[nsp + j] : 0;
    w.d[i] = real ? d[j] : 1;
  }
  return w;
}

KernelSpec FinishConvKernel(const ir::Node& n, KernelSource& src, const std::string& kernel_name,
                            const Chain& epilogue) {
  bool bias = n.inputs.size() > 2;
  src.Define("BIAS_PARAM", bias ? ", __global const T_STORE* restrict bias_p" : "");
  src.Define("BIAS(c)", bias ? "LOAD(bias_p, c)" : "0");
  KernelSpec spec;
  spec.name = kernel_name;
  for (const ir::Value* v : n.inputs) spec.args.push_back(v->id);
  spec.args.push_back(n.outputs[0]->id);
  ApplyEpilogue(src, kernel_name, n.outputs[0], epilogue, spec);
  spec.source = src.Render();
  return spec;
}

ConstTensorPtr PackFiltersByOutput(const HostTensor& w, int64_t groups, int64_t voc) {
  int64_t cout = w.shape[0], ocg = cout / groups, ocb = (ocg + voc - 1) / voc;
  int64_t inner = w.size() / cout;  // ICG x taps
  auto packed = std::make_shared<HostTensor>(DType::kFloat32, Shape{groups * ocb * inner * voc});
  float* dst = packed->data<float>();
  const float* src = w.data<float>();
  std::fill(dst, dst + packed->size(), 0.0f);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t oc = 0; oc < ocg; ++oc) {
      int64_t b = oc / voc, v = oc % voc;
      float* block = dst + (g * ocb + b) * inner * voc;
      const float* row = src + (g * ocg + oc) * inner;
      for (int64_t i = 0; i < inner; ++i) block[i * voc + v] = row[i];
    }
  return packed;
}

void DefineRowPrefetch(KernelSource& src, const std::string& kernel_name) {
  const std::string f = kernel_name + "_prefetch";
  src.Prelude(
      fmt::format("#if defined(__clang__) && !defined(__SPIR__)\n#define {0}(p) "
                  "__builtin_prefetch((p), 0, 3)\n#else\n"
                  "#define {0}(p) prefetch((p), 1)\n#endif\n",
                  f));
  src.Define("PREFETCH_AHEAD", 8);
  src.Define("PREFETCH_ROW(p, n)",
             fmt::format("do {{ for (int o_ = 0; o_ < (n); o_ += 16) {0}((p) + o_); "
                         "{0}((p) + (n) - 1); }} while (0)",
                         f));
}

std::vector<std::pair<std::string, std::string>> WindowDefines(const Window3& w) {
  static const char* const kAxis[3] = {"D", "H", "W"};
  std::vector<std::pair<std::string, std::string>> defs;
  for (int i = 0; i < 3; ++i) {
    std::string a = kAxis[i];
    defs.insert(defs.end(), {{"I" + a, Int(w.in[i])},
                             {"O" + a, Int(w.out[i])},
                             {"K" + a, Int(w.k[i])},
                             {"S" + a, Int(w.s[i])},
                             {"P" + a, Int(w.pb[i])},
                             {"D" + a, Int(w.d[i])}});
  }
  return defs;
}

namespace {

// The window of convolution-like node n (x, w[, b] -> y, w's extents after its first two dims)
// and the storage of its one float type, defined in src.
Window3 DefineConvWindow(const ir::Node& n, KernelSource& src) {
  const Shape& wt = n.inputs[1]->type.shape;
  Window3 win = ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  DefineWindow(src, win);
  DefineStorage(src, RequireOneFloatType(n));
  return win;
}

}  // namespace

// x, w[, b] -> y; w is [IC, OC / group, k...].
KernelSpec GenerateConvTranspose(const ir::Node& n, const std::string& kernel_name,
                                 const Chain& epilogue) {
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& wt = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  int64_t group = n.attrs.Int("group");
  KernelSource src(kernel_name, "conv_transpose");
  Window3 win = DefineConvWindow(n, src);
  src.Define("N", x[0]).Define("IC", x[1]).Define("OC", y[1]);
  src.Define("IC_PER_G", x[1] / group).Define("OC_PER_G", wt[1]);
  KernelSpec spec = FinishConvKernel(n, src, kernel_name, epilogue);
  SetWindowGeometry(win, y[0] * y[1], spec);
  // Every input element meets w[1] * prod(k) weights (the scatter view).
  spec.flops =
      2.0 * static_cast<double>(NumElements(x)) * static_cast<double>(NumElements(wt) / wt[0]);
  return spec;
}

bool TakesDepthwiseFamily(const ir::Node& n, const Target& t) {
  return t.gpu && IsDepthwiseConv(n) && !n.outputs[0]->is_image();
}

namespace {

// Whether the window kernel can take p at output rows of ow: no more outputs per work-item than
// the row has, and no more work-items along it than its outputs need (past the first 8).
bool WindowFits(const DepthwiseWindow& p, int64_t ow) {
  return p.ox <= ow && (p.lx == 8 || static_cast<size_t>(p.lx * p.ox) <= RoundUp(ow, 8));
}

}  // namespace

DepthwiseWindow DepthwiseHeuristic(const ir::Node& n) {
  const Shape& wt = n.inputs[1]->type.shape;
  Window3 w = ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  // H200, every point at MobileNetV2's and EfficientNet-B0's shapes (docs/tuning.md): at stride
  // 1, 4 outputs a work-item (a 3x3 window's row read as 6 inputs, not 12) and 8 work-items along
  // the row, 1.7-2.0x faster than the implicit GEMM's heuristic point at batch 32 and 1.26x at
  // batch 1; at stride 2, 2 outputs and 16 work-items, 1.7x.
  DepthwiseWindow p = w.s[2] == 1 ? DepthwiseWindow{4, 8} : DepthwiseWindow{2, 16};
  if (!WindowFits(p, w.out[2])) p.lx = 8;
  while (p.ox > 1 && !WindowFits(p, w.out[2])) p.ox /= 2;
  return p;
}

DepthwiseWindow DepthwiseWindowOf(const TunePoint& p) {
  return {static_cast<int>(p.at("ox")), static_cast<int>(p.at("lx"))};
}

std::optional<Tunable> DepthwiseTunable(const ir::Node& n, const Target& t, const Tunable& gemm) {
  if (!TakesDepthwiseFamily(n, t)) return std::nullopt;
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& wt = n.inputs[1]->type.shape;
  Window3 w = ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  Tunable tn;
  tn.family = "depthwise";
  tn.version = 2;
  tn.signature = fmt::format(
      "n={},c={},id={},ih={},iw={},od={},oh={},ow={},kd={},kh={},kw={},sd={},sh={},sw={},dd={},"
      "dh={},dw={},dtype={}",
      x[0], x[1], w.in[0], w.in[1], w.in[2], w.out[0], w.out[1], w.out[2], w.k[0], w.k[1], w.k[2],
      w.s[0], w.s[1], w.s[2], w.d[0], w.d[1], w.d[2], DTypeName(n.inputs[0]->type.dtype));
  // The window kernel's outputs per work-item and work-items along the row, the heuristic's
  // first; then the implicit GEMM's points.
  auto point = [](const DepthwiseWindow& p) {
    return TunePoint{{"window", 1}, {"ox", p.ox}, {"lx", p.lx}};
  };
  tn.candidates.push_back(point(DepthwiseHeuristic(n)));
  for (int ox : {1, 2, 4})
    for (int lx : {8, 16, 32}) {
      TunePoint p = point({ox, lx});
      if (WindowFits({ox, lx}, w.out[2]) && p != tn.candidates[0]) tn.candidates.push_back(p);
    }
  for (TunePoint p : gemm.candidates) {
    p["window"] = 0;
    tn.candidates.push_back(std::move(p));
  }
  return tn;
}

// x, w[, b] -> y with one filter per channel.
KernelSpec GenerateDepthwise(const ir::Node& n, const std::string& kernel_name,
                             const DepthwiseWindow& p, const Chain& epilogue) {
  const Shape& wt = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  KernelSource src(kernel_name, "depthwise");
  Window3 win = DefineConvWindow(n, src);
  src.Define("C", y[1]).Define("OX", p.ox);
  KernelSpec spec = FinishConvKernel(n, src, kernel_name, epilogue);
  SetWindowGeometry(win, y[0] * y[1], spec, p.ox, p.lx);
  spec.flops =
      2.0 * static_cast<double>(NumElements(y)) * static_cast<double>(NumElements(wt) / wt[0]);
  return spec;
}

KernelSpec GeneratePool(const ir::Node& n, const std::string& kernel_name, const Target& target,
                        const Chain& epilogue) {
  CheckPool(n);
  if (auto rows = WindowRowsTunable(n, target))
    return GenerateWindowRows(n, kernel_name, Choose(*rows, target), epilogue);
  DType t = n.inputs[0]->type.dtype;
  bool is_float = IsFloat(t);
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  const auto& k = n.attrs.Ints("kernel");
  Window3 win = ToWindow3(n, k);
  KernelSource src(kernel_name, "pool");
  DefineWindow(src, win);
  DefineStorage(src, t);
  src.Define("NC", x[0] * x[1]);
  src.Define("PD_END", Int(win.pe[0])).Define("PH_END", Int(win.pe[1]));
  src.Define("PW_END", Int(win.pe[2]));
  // MaxPoolIndices: the first maximum in window order; its flat index into x (N, C included),
  // row-major or, with storage_order 1, column-major over the spatial dims (the leading neutral
  // dims of 1-D and 2-D windows have size 1 and coordinate 0 either way).
  bool indices = n.op == ir::OpKind::kMaxPoolIndices;
  bool col_major = indices && n.attrs.Int("storage_order", 0) != 0;
  src.Define("T_OUT", indices ? "long" : "T_STORE");
  src.Define("STORE_OUT(p, i, v)", indices ? "(p)[i] = (v)" : "STORE(p, i, v)");
  // The lowest value of T starts a maximum.
  std::string lowest = is_float             ? "(-INFINITY)"
                       : t == DType::kUInt8 ? "0"
                       : t == DType::kInt8  ? "(-128)"
                       : t == DType::kInt32 ? "INT_MIN"
                                            : "LONG_MIN";
  src.Define("AT(base, d, h, w)", !indices    ? "0"
                                  : col_major ? "((base) + (d) + (long)ID * ((h) + (long)IH * (w)))"
                                              : "((base) + ((long)(d) * IH + (h)) * IW + (w))");
  if (n.op == ir::OpKind::kMaxPool) {
    src.Define("INIT", lowest);
    src.Define("ACC(acc, arg, v, at)", is_float ? "acc = fmax(acc, v)" : "acc = max(acc, v)");
    src.Define("FINISH(acc, arg, count, padded)", "acc");
  } else if (indices) {
    src.Define("INIT", lowest);
    src.Define("ACC(acc, arg, v, at)", "if (arg < 0 || v > acc) { acc = v; arg = at; }");
    src.Define("FINISH(acc, arg, count, padded)", "arg");
  } else {
    bool include_pad = n.attrs.Int("count_include_pad") != 0;
    src.Define("INIT", "0");
    src.Define("ACC(acc, arg, v, at)", "acc += v");
    src.Define("FINISH(acc, arg, count, padded)",
               include_pad ? "(acc / (T)(padded))" : "(acc / (T)(count))");
  }
  KernelSpec spec;
  spec.name = kernel_name;
  spec.args = {n.inputs[0]->id, n.outputs[0]->id};
  ApplyEpilogue(src, kernel_name, n.outputs[0], epilogue, spec);
  spec.source = src.Render();
  SetWindowGeometry(win, y[0] * y[1], spec);
  spec.flops = static_cast<double>(NumElements(y) * win.k[0] * win.k[1] * win.k[2]);
  return spec;
}

}  // namespace texel::codegen
