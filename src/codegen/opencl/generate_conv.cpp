// Convolution as an implicit GEMM on the MatMul kernels (matmul.h): per image n and group g,
// y[n, g] (OCg x P, P = output pixels) = W[g] (OCg x K, the OIDHW filters as they are, K =
// ICg * KD * KH * KW) x im2col(x[n, g]) (K x P). The im2col matrix is never stored: the kernel
// gathers its elements from x while loading B (GemmOperands::load_b), so tiling, vector widths,
// the bias and the fused epilogue all come from the GEMM path. A 1x1 convolution without
// stride or padding is a plain GEMM on x. A gathered convolution over several images is one
// product per group whose columns run over every image's pixels (GemmOperands::fold), stored
// back as NCHW. Depthwise convolutions (one filter per channel) take
// the direct GEMM kernel on GPUs (M = 1 row, K = the window). In a reduced-precision compute
// mode (ComputeModeOf: fp16 on f16 storage, or a "compute_mode" attribute) the warp-tiled kernel
// runs it on the matrix engine where ChooseModelWarpGemm takes it, gathering the image into its
// B tiles the same way. On CPUs, f32 convolutions take the register-blocked families instead:
// conv_blocked.h, and window_rows.h for depthwise ones.
#include <fmt/format.h>

#include "codegen/opencl/conv_blocked.h"
#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/gemm/model_gemm.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/matmul.h"
#include "codegen/opencl/support.h"
#include "codegen/opencl/window.h"
#include "codegen/opencl/window_rows.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

// A loop over VB columns from col (od, oh, ow) between `before` and `after`: the column's
// coordinates are divided out once and then stepped (the divisions cost more than the loads on
// GPUs), `body` sees them as od, oh, ow and the column as col + e. With `folded` the columns
// run over the images too (GemmOperands::fold): the image is img, the pixels per image PIX.
std::string ForColumns(const std::string& before, const std::string& body, const std::string& after,
                       bool folded) {
  std::string first = folded ? R"(
  int img = col / PIX, pix = col % PIX;
  int ow = pix % OW, oh = pix / OW % OH, od = pix / (OW * OH);)"
                             : R"(
  int ow = col % OW, oh = col / OW % OH, od = col / (OW * OH);)";
  std::string wrap = folded ? "if (++od == OD) od = 0, ++img;" : "++od;";
  return before + first + R"(
#pragma unroll
  for (int e = 0; e < VB; ++e) {
)" + body +
         R"(
    if (++ow == OW) {
      ow = 0;
      if (++oh == OH) {
        oh = 0;
        )" +
         wrap + R"(
      }
    }
  }
)" + after;
}

// The offset of the column's image in B, before the offset within it (folded columns).
std::string ImageOffset(bool folded, const char* type) {
  return folded ? fmt::format("({})img * CIMG + ", type) : "";
}

// B's row k (ic, kd, kh, kw) from column col (od, oh, ow): VB gathered elements, zero in the
// padding and beyond N; unsigned compares test both bounds at once.
std::string Im2ColLoad(bool folded) {
  return ForColumns(
      R"(  const int kw = k % KW, kr = k / KW, kh = kr % KH, kc = kr / KH;
  const int kd = kc % KD, ic = kc / KD;
  TVB v;)",
      R"(    const int id = od * SD - PD + kd * DD, ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
    ELEM(v, e) = col + e < N && (uint)id < ID && (uint)ih < IH && (uint)iw < IW
                     ? LOAD_E(p, )" +
          ImageOffset(folded, "long") + R"(((long)(ic * ID + id) * IH + ih) * IW + iw)
                     : 0;)",
      "  return v;", folded);
}

// The same gather in two parts for the warp-tiled kernel, whose work-items keep their VB
// columns at every step: per column, once, the offset of its window's origin in the image and
// a mask of the window's taps inside it (bit (kd * KH + kh) * KW + kw; none past N); per row k
// (ic, tap), the tap's offset, and each element is one test and one load. KWIN (taps, at most
// 64) and GMASK_T (uint, or ulong past 32 taps) come with the defines; GI: the index type.
constexpr const char* kIm2ColFields = "  GI base[VB];\n  GMASK_T mask[VB];";
std::string Im2ColInit(bool folded) {
  return ForColumns("  GATHER_T s;",
                    R"(    const int id = od * SD - PD, ih = oh * SH - PH, iw = ow * SW - PW;
    s.base[e] = )" + ImageOffset(folded, "GI") +
                        R"(((GI)id * IH + ih) * IW + iw;
    GMASK_T m = 0;
    if (col + e < N)
      for (int kd = 0; kd < KD; ++kd)
        for (int kh = 0; kh < KH; ++kh)
          for (int kw = 0; kw < KW; ++kw)
            if ((uint)(id + kd * DD) < ID && (uint)(ih + kh * DH) < IH && (uint)(iw + kw * DW) < IW)
              m |= (GMASK_T)1 << ((kd * KH + kh) * KW + kw);
    s.mask[e] = m;)",
                    "  return s;", folded);
}
constexpr const char* kIm2ColStep =
    R"(  const int tap = k % KWIN, ic = k / KWIN;
  const int kw = tap % KW, kh = tap / KW % KH, kd = KD == 1 ? 0 : tap / (KW * KH);
  const GI off = (GI)ic * (ID * IH * IW) + ((GI)kd * DD * IH + kh * DH) * IW + kw * DW;
  TVB v;
#pragma unroll
  for (int e = 0; e < VB; ++e) ELEM(v, e) = (s->mask[e] >> tap) & 1 ? LOAD_E(p, s->base[e] + off) : 0;
  return v;)";

bool IsPlainGemm(const Window3& w) {
  for (int i = 0; i < 3; ++i)
    if (w.k[i] != 1 || w.s[i] != 1 || w.pb[i] != 0 || w.pe[i] != 0) return false;
  return true;
}

// A 1x1 convolution reads x as B directly where full vectors of its `pixels` columns fit (4
// floats on a GPU, 16 on a CPU); otherwise gathering pays for the wider vectors.
bool GathersImage(const Window3& win, int64_t pixels, const Target& target) {
  return !IsPlainGemm(win) || pixels % (target.gpu ? 4 : 16) != 0;
}

}  // namespace

bool ConvCanConvertImage(const ir::Node& n) {
  if (n.op != ir::OpKind::kConv || n.inputs[0]->type.shape.size() < 3 ||
      n.inputs[0]->type.shape.size() > 5 || n.attrs.Int("group", 1) != 1 ||
      n.attrs.Int("channels_last", 0))
    return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i]->type.dtype != DType::kFloat16) return false;
  const Shape& wt = n.inputs[1]->type.shape;
  return n.outputs[0]->type.dtype == DType::kFloat16 &&
         !IsPlainGemm(ToWindow3(n, Shape(wt.begin() + 2, wt.end())));
}

bool ConvReadsF32Image(const ir::Node& n) {
  return n.op == ir::OpKind::kConv && n.attrs.Int("convert_input", 0) != 0;
}

DType RequireConvTypes(const ir::Node& n) {
  if (!ConvReadsF32Image(n)) return RequireOneFloatType(n);
  if (!ConvCanConvertImage(n) || n.inputs[0]->type.dtype != DType::kFloat32)
    Fail(ErrorCode::kUnsupported,
         "Conv with convert_input reads an f32 image into a one-group f16 convolution that "
         "gathers it");
  return DType::kFloat16;
}

namespace {

// The GEMM that computes Conv node n.
GemmOperands ConvGemm(const ir::Node& n, const Target& target) {
  DType t = RequireConvTypes(n);
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& wt = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  Window3 win = ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  int64_t groups = n.attrs.Int("group");
  int64_t ic_g = x[1] / groups, oc_g = y[1] / groups;
  int64_t in_pixels = win.in[0] * win.in[1] * win.in[2];
  GemmOperands g;
  g.shape.batch = x[0] * groups;
  g.shape.m = oc_g;
  g.shape.n = win.out[0] * win.out[1] * win.out[2];
  g.shape.k = ic_g * win.k[0] * win.k[1] * win.k[2];
  g.shape.dtype = t;
  // f32 convolutions (tf32's and tf32x3's channels-last regions) take the engine on NHWC images
  // only: an NCHW one computes in fp32 whatever its mark, and is tuned as such. NCHW ones
  // measured slower on the engine than on the scalar kernels at batch 32 (H200: GoogLeNet 1.12x,
  // DenseNet-121 1.04x, SqueezeNet 1.01x), NHWC ones faster (ResNet-50 0.88x, ResNet-18 0.79x).
  g.shape.mode = t == DType::kFloat32 ? ComputeMode::kFp32 : ComputeModeOf(n);
  g.convolution = true;
  bool grouped = groups > 1;
  g.a_offset = grouped ? fmt::format("((b) % {} * {})", groups, oc_g * g.shape.k) : "0";
  g.b_offset = grouped ? fmt::format("(((long)(b) / {} * {} + (b) % {} * {}) * {})", groups, x[1],
                                     groups, ic_g, in_pixels)
                       : fmt::format("((long)(b) * {})", x[1] * in_pixels);
  if (GathersImage(win, g.shape.n, target)) {
    g.shape.gather_b = true;
    // Several images (not depthwise): one product over all of them, columns = images x pixels,
    // so that small images fill the tiles (7 x 7 pixels filled 49 of a 64-column tile).
    bool folded = x[0] > 1 && !(grouped && ic_g == 1);
    if (folded) {
      g.fold = g.shape.n;
      g.shape.n *= x[0];
      g.shape.batch = groups;
      g.b_offset = grouped ? fmt::format("((long)(b) * {})", ic_g * in_pixels) : "0";
    }
    g.load_b = Im2ColLoad(folded);
    g.b_f32 = ConvReadsF32Image(n);
    g.defines = WindowDefines(win);
    if (folded)
      g.defines.insert(g.defines.end(), {{"PIX", std::to_string(g.fold)},
                                         {"CIMG", std::to_string(x[1] * in_pixels)}});
    int64_t taps = win.k[0] * win.k[1] * win.k[2];
    if (taps > 1 && taps <= 64) {
      g.gather_fields = kIm2ColFields, g.gather_init = Im2ColInit(folded),
      g.gather_load = kIm2ColStep;
      // The offsets (of every image where folded) fit an int.
      bool narrow = (folded ? x[0] : 1) * x[1] * in_pixels < (int64_t{1} << 31);
      g.defines.insert(g.defines.end(), {{"KWIN", std::to_string(taps)},
                                         {"GMASK_T", taps <= 32 ? "uint" : "ulong"},
                                         {"GI", narrow ? "int" : "long"}});
    }
  }
  bool bias = n.inputs.size() > 2;
  if (bias) g.bias = grouped ? fmt::format("(b) % {} * {} + (row)", groups, oc_g) : "(row)";
  g.args = {n.inputs[1]->id, n.inputs[0]->id};
  if (bias) g.args.push_back(n.inputs[2]->id);
  g.args.push_back(n.outputs[0]->id);
  g.out = n.outputs[0];
  return g;
}

bool ChannelsLast(const ir::Node& n) {
  return n.op == ir::OpKind::kConv && n.attrs.Int("channels_last", 0) != 0;
}

// The window of a channels-last Conv: x [N, H, W, C], w [M, KH, KW, C], y [N, OH, OW, M].
Window3 ChannelsLastWindow(const ir::Node& n) {
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& w = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  const auto& s = n.attrs.Ints("strides");
  const auto& p = n.attrs.Ints("pads");
  const auto& d = n.attrs.Ints("dilations");
  return Window3{{1, x[1], x[2]}, {1, y[1], y[2]}, {1, w[1], w[2]}, {1, s[0], s[1]},
                 {0, p[0], p[1]}, {0, p[2], p[3]}, {1, d[0], d[1]}};
}

// The product of Conv n as channels-last: m rows (filters), cols columns, depth k.
GemmOperands ChannelsLastProduct(const ir::Node& n, int64_t m, int64_t cols, int64_t k) {
  GemmOperands g;
  g.shape.m = m, g.shape.n = cols, g.shape.k = k;
  g.shape.dtype = n.outputs[0]->type.dtype;
  g.shape.mode = ComputeModeOf(n);
  g.shape.trans_b = true;
  g.convolution = g.channels_last = true;
  return g;
}

// A channels-last Conv as one product over every image: C [M, N x OH x OW] = W [M, KH KW C] x
// the image read as [N x OH x OW, KH KW C], each 16-byte chunk of a row (8 halves or 4 floats of
// one tap's channels) copied asynchronously from where the tap falls in x, zeros where it falls
// in the padding; C stored NHWC.
GemmOperands ChannelsLastGemm(const ir::Node& n) {
  RequireOneFloatType(n);
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& w = n.inputs[1]->type.shape;
  Window3 win = ChannelsLastWindow(n);
  GemmOperands g = ChannelsLastProduct(n, w[0], x[0] * win.out[1] * win.out[2], w[1] * w[2] * w[3]);
  g.defines = WindowDefines(win);
  g.defines.insert(
      g.defines.end(),
      {{"CIN", std::to_string(x[3])},
       {"NH_IH(k, c)", "((c) / OW % OH * SH - PH + (k) / CIN / KW * DH)"},
       {"NH_IW(k, c)", "((c) % OW * SW - PW + (k) / CIN % KW * DW)"},
       {"B_INSIDE(k, c)", "((uint)NH_IH(k, c) < (uint)IH && (uint)NH_IW(k, c) < (uint)IW)"},
       {"B_AT(k, c)",
        "((((long)((c) / (OH * OW)) * IH + NH_IH(k, c)) * IW + NH_IW(k, c)) * CIN + (k) % CIN)"}});
  bool bias = n.inputs.size() > 2;
  if (bias) g.bias = "(row)";
  g.args = {n.inputs[1]->id, n.inputs[0]->id};
  if (bias) g.args.push_back(n.inputs[2]->id);
  g.args.push_back(n.outputs[0]->id);
  g.out = n.outputs[0];
  return g;
}

}  // namespace

bool ConvTakesChannelsLast(const ir::Node& n, const Target& target) {
  if (n.op != ir::OpKind::kConv || ChannelsLast(n) || ConvReadsF32Image(n) ||
      n.inputs[0]->type.shape.size() != 4 || n.attrs.Int("group", 1) != 1 || !n.inputs[1]->constant)
    return false;
  DType t = n.outputs[0]->type.dtype;
  int64_t chunk = t == DType::kFloat16 ? 8 : 4;  // elements per 16-byte copy
  for (const ir::Value* v : n.inputs)
    if (v->type.dtype != t) return false;
  if (n.inputs[0]->type.shape[1] % chunk != 0) return false;
  // The engine must take the product (depth, rows, mode, storage).
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& w = n.inputs[1]->type.shape;
  Window3 win = ToWindow3(n, Shape(w.begin() + 2, w.end()));
  GemmOperands g = ChannelsLastProduct(n, w[0], x[0] * win.out[1] * win.out[2], w[1] * w[2] * w[3]);
  return ChooseModelWarpGemm(g, target).has_value();
}

std::optional<Tunable> ConvTunable(const ir::Node& n, const Target& target) {
  if (ChannelsLast(n)) return ModelGemmTunable(ChannelsLastGemm(n), target);
  if (auto rows = WindowRowsTunable(n, target)) return rows;
  if (auto blocked = ConvBlockedTunable(n, target)) return blocked;
  GemmOperands g = ConvGemm(n, target);
  if (auto engine = ModelGemmTunable(g, target)) return engine;
  Tunable gemm = MatMulTunable(g.shape, target);
  if (auto dw = DepthwiseTunable(n, target, gemm)) return dw;
  return gemm;
}

double ConvFlops(const ir::Node& n) {
  const Shape& wt = n.inputs[1]->type.shape;
  return 2.0 * static_cast<double>(NumElements(n.outputs[0]->type.shape)) *
         static_cast<double>(NumElements(wt) / wt[0]);
}

KernelTraits ConvTraits(const ir::Node& n, const Target& target) {
  const Shape& wt = n.inputs[1]->type.shape;
  KernelTraits t;
  t.flops = ConvFlops(n);
  if (ChannelsLast(n)) return t;  // copied as a stored matrix is
  // The CPU families read x along its rows; the implicit GEMM may gather it.
  if (WindowRowsTunable(n, target) || ConvBlockedTunable(n, target)) return t;
  if (TakesDepthwiseFamily(n, target)) return t;  // the heuristic's window kernel
  Window3 win = ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  t.gathers_b = GathersImage(win, win.out[0] * win.out[1] * win.out[2], target);
  return t;
}

std::vector<KernelSpec> GenerateConv(const ir::Node& n, const std::string& kernel_name,
                                     const Target& target, const Chain& epilogue) {
  if (ChannelsLast(n)) {
    GemmOperands g = ChannelsLastGemm(n);
    std::optional<ModelGemm> engine = TunedModelGemm(g, target);
    if (!engine)
      Fail(ErrorCode::kUnsupported,
           "Conv '{}' is channels-last, which only the matrix-engine kernel computes", n.name);
    return GenerateModelGemm(g, kernel_name, target, *engine, epilogue);
  }
  if (auto rows = WindowRowsTunable(n, target))
    return {GenerateWindowRows(n, kernel_name, Choose(*rows, target), epilogue)};
  if (auto blocked = ConvBlockedTunable(n, target))
    return {GenerateConvBlocked(n, kernel_name, Choose(*blocked, target), epilogue)};
  GemmOperands g = ConvGemm(n, target);
  if (auto engine = TunedModelGemm(g, target))
    return GenerateModelGemm(g, kernel_name, target, *engine, epilogue);
  if (TakesDepthwiseFamily(n, target)) {
    // Without a database the heuristic's window point, without building the matmul space.
    if (target.tuning == nullptr)
      return {GenerateDepthwise(n, kernel_name, DepthwiseHeuristic(n), epilogue)};
    Tunable dw = *DepthwiseTunable(n, target, MatMulTunable(g.shape, target));
    const TunePoint& p = Choose(dw, target);
    if (p.at("window") != 0)
      return {GenerateDepthwise(n, kernel_name, DepthwiseWindowOf(p), epilogue)};
    return GenerateGemm(g, kernel_name, target, MatMulParamsOf(p), epilogue);
  }
  return GenerateGemm(g, kernel_name, target, TunedMatMulParams(g.shape, target), epilogue);
}

}  // namespace texel::codegen
