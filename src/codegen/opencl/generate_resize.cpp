// Resize (nearest / linear / cubic) as a pointwise body: each output element maps its
// coordinate on every resized axis back into the input (coordinate transformation), then reads
// one tap (nearest) or a separable product of 2 (linear) or 4 (cubic) taps per axis.
#include <algorithm>
#include <span>
#include <string_view>

#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

// The input coordinate (float expression) of output coordinate c on one axis. As in the ONNX
// reference, the resized length in the formulas is in * scale, not the floored output size.
std::string SourceCoord(const std::string& mode, int d, int64_t in, double scale, double roi_start,
                        double roi_end) {
  std::string c = fmt::format("(float)c{}", d);
  std::string s = FloatLiteral(scale);
  double out = static_cast<double>(in) * scale;
  if (mode == "half_pixel") return fmt::format("(({} + 0.5f) / {} - 0.5f)", c, s);
  if (mode == "pytorch_half_pixel")
    return out > 1 ? fmt::format("(({} + 0.5f) / {} - 0.5f)", c, s) : "0.0f";
  if (mode == "align_corners")
    return out > 1 ? fmt::format("({} * {})", c, FloatLiteral(double(in - 1) / (out - 1))) : "0.0f";
  if (mode == "asymmetric") return fmt::format("({} / {})", c, s);
  if (mode == "tf_half_pixel_for_nearest" || mode == "tf_half_pixel_for_nn")
    return fmt::format("(({} + 0.5f) / {})", c, s);
  if (mode == "tf_crop_and_resize") {
    double span = (roi_end - roi_start) * double(in - 1);
    return out > 1 ? fmt::format("({} + {} * {})", FloatLiteral(roi_start * double(in - 1)), c,
                                 FloatLiteral(span / (out - 1)))
                   : FloatLiteral(0.5 * (roi_start + roi_end) * double(in - 1));
  }
  Fail(ErrorCode::kInternal, "coordinate_transformation_mode '{}' passed CheckResize", mode);
}

std::string NearestIndex(const std::string& mode, const std::string& x, bool downsampling) {
  if (mode == "round_prefer_floor") return fmt::format("(long)ceil({} - 0.5f)", x);
  if (mode == "round_prefer_ceil") return fmt::format("(long)floor({} + 0.5f)", x);
  if (mode == "floor") return fmt::format("(long)floor({})", x);
  if (mode == "ceil") return fmt::format("(long)ceil({})", x);
  if (mode == "simple")  // Resize-10 / Upsample
    return downsampling ? fmt::format("(long)ceil({})", x) : fmt::format("(long)({})", x);
  Fail(ErrorCode::kInternal, "nearest_mode '{}' passed CheckResize", mode);
}

constexpr std::string_view kCoordModes[] = {
    "half_pixel",        "pytorch_half_pixel",        "align_corners",
    "asymmetric",        "tf_half_pixel_for_nearest", "tf_half_pixel_for_nn",
    "tf_crop_and_resize"};
constexpr std::string_view kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                              "ceil", "simple"};

bool OneOf(std::string_view s, std::span<const std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

}  // namespace

void CheckResize(const ir::Node& n) {
  const ir::Attrs& a = n.attrs;
  const std::string& mode = a.Str("mode");
  DType t = n.inputs[0]->type.dtype;
  if (mode != "nearest" && t != DType::kFloat32 && t != DType::kFloat64)
    Fail(ErrorCode::kUnsupported, "{} Resize of {} is not supported", mode, DTypeName(t));
  if (!OneOf(a.Str("coord"), kCoordModes))
    Fail(ErrorCode::kUnsupported, "coordinate_transformation_mode '{}' is not supported",
         a.Str("coord"));
  if (mode == "nearest" && !OneOf(a.Str("nearest_mode"), kNearestModes))
    Fail(ErrorCode::kUnsupported, "nearest_mode '{}' is not supported", a.Str("nearest_mode"));
}

std::string CubicWeight(const std::string& t, const std::string& a) {
  return fmt::format(
      "({t} <= 1.0f ? (({a} + 2.0f) * {t} - ({a} + 3.0f)) * {t} * {t} + 1.0f "
      ": ({t} < 2.0f ? (({a} * {t} - 5.0f * {a}) * {t} + 8.0f * {a}) * {t} - 4.0f * {a} : 0.0f))",
      fmt::arg("t", t), fmt::arg("a", a));
}

std::string ResizeBody(const ir::Node& n) {
  const ir::Value* x = n.inputs[0];
  const Shape& xs = x->type.shape;
  const Shape& os = n.outputs[0]->type.shape;
  const ir::Attrs& a = n.attrs;
  const std::string mode = a.Str("mode"), coord = a.Str("coord");
  const auto& scales = a.Floats("scales");
  const auto& roi = a.Floats("roi");
  std::vector<int64_t> xst = Strides(xs), base_st(xs.size(), 0);
  bool crop = coord == "tf_crop_and_resize";
  std::string pre, loops, close, weight = "1.0f", offset;
  int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  for (size_t d = 0; d < xs.size(); ++d) {
    bool identity = xs[d] == os[d] && scales[d] == 1.0 && !crop;
    if (identity) {
      base_st[d] = xst[d];
      continue;
    }
    int i = static_cast<int>(d);
    pre += fmt::format("const float x{} = {}; ", i,
                       SourceCoord(coord, i, xs[d], scales[d], roi.empty() ? 0 : roi[d],
                                   roi.empty() ? 1 : roi[d + xs.size()]));
    if (crop) pre += fmt::format("if (x{} < 0.0f || x{} > {}.0f) inside = 0; ", i, i, xs[d] - 1);
    if (mode == "nearest") {
      pre += fmt::format("const long o{} = clamp({}, 0L, {}L) * {}; ", i,
                         NearestIndex(a.Str("nearest_mode"), fmt::format("x{}", i), scales[d] < 1),
                         xs[d] - 1, xst[d]);
      offset += fmt::format(" + o{}", i);
      continue;
    }
    // Taps f-1..f+2 (cubic) or f..f+1 (linear) around f = floor(x), clamped to the edge.
    int first = taps == 4 ? -1 : 0;
    pre +=
        fmt::format("const float f{} = floor(x{}); const float r{} = x{} - f{}; ", i, i, i, i, i);
    pre += fmt::format("float w{}[{}]; long o{}[{}]; float s{} = 0.0f; ", i, taps, i, taps, i);
    pre += fmt::format("for (int k = 0; k < {}; ++k) {{ const long p = (long)f{} + k + ({}); ",
                       taps, i, first);
    if (taps == 2) {
      pre += fmt::format("w{}[k] = k == 0 ? 1.0f - r{} : r{}; ", i, i, i);
    } else {  // cubic convolution with coefficient A
      pre += fmt::format("const float t = fabs(r{} - (float)(k + ({}))); w{}[k] = {}; ", i, first,
                         i, CubicWeight("t", FloatLiteral(a.Float("cubic_a"))));
    }
    if (a.Int("exclude_outside"))
      pre += fmt::format("if (p < 0 || p > {}) w{}[k] = 0.0f; ", xs[d] - 1, i);
    pre += fmt::format("s{} += w{}[k]; o{}[k] = clamp(p, 0L, {}L) * {}; }} ", i, i, i, xs[d] - 1,
                       xst[d]);
    if (a.Int("exclude_outside"))
      pre += fmt::format("for (int k = 0; k < {}; ++k) w{}[k] /= s{}; ", taps, i, i);
    loops += fmt::format("for (int k{} = 0; k{} < {}; ++k{}) {{ ", i, i, taps, i);
    close += "} ";
    weight += fmt::format(" * w{}[k{}]", i, i);
    offset += fmt::format(" + o{}[k{}]", i, i);
  }
  std::string read = fmt::format("in0[{}{}]", OffsetExpr(base_st), offset);
  std::string body = "int inside = 1; ";
  body += pre;
  if (mode == "nearest") {
    body += fmt::format("v = {};", read);
  } else {
    body += fmt::format("float acc = 0.0f; {}acc += {} * (float){}; {}v = acc;", loops, weight,
                        read, close);
  }
  if (crop) body += fmt::format(" if (!inside) v = {};", FloatLiteral(a.Float("extrapolation")));
  return body;
}

}  // namespace texel::codegen
