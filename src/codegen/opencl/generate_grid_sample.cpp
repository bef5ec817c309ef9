// GridSample (4-D: x [N, C, H, W], grid [N, Ho, Wo, 2] holding (x, y) in [-1, 1]) as a pointwise
// body, following the ONNX reference implementation step by step:
//  1. denormalise each grid coordinate to a pixel position (align_corners decides whether -1
//     and 1 are the centres or the outer edges of the border pixels);
//  2. nearest mode rounds it half to even (as PyTorch and the reference do);
//  3. a position outside the borders ([0, len-1] with align_corners, else [-0.5, len-0.5]) is
//     clamped to [0, len-1] (border) or reflected about the borders (reflection);
//  4. the taps (1 nearest, 2 linear, 4 cubic with A = -0.75 per axis) are read with the padding
//     mode applied to each tap: zero outside (zeros), clamped (border) or reflected (reflection).
#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

// Statements reflecting float variable v about [lo, hi] until it lies inside, as the reference's
// _gs_reflect; a degenerate range (one pixel, align_corners) maps everything to lo.
std::string Reflect(const std::string& v, double lo, double hi) {
  return fmt::format(
      "{{ const float lo = {lo}, hi = {hi}, rng = hi - lo; "
      "if (rng <= 0.0f) {v} = lo; "
      "else if ({v} < lo || {v} > hi) {{ "
      "const float dx = {v} < lo ? lo - {v} : {v} - hi; const float q = floor(dx / rng); "
      "const float r = dx - q * rng; const int even = fmod(q, 2.0f) == 0.0f; "
      "{v} = ({v} < lo) == even ? lo + r : hi - r; }} }}",
      fmt::arg("v", v), fmt::arg("lo", FloatLiteral(lo)), fmt::arg("hi", FloatLiteral(hi)));
}

// Statements turning the integer tap position `p` (a long) of an axis of length len into an
// in-bounds index, or -1 for a zero tap (padding zeros).
std::string PadTap(const std::string& pad, int64_t len, double lo, double hi) {
  if (pad == "zeros") return fmt::format("if (p < 0 || p >= {}) p = -1; ", len);
  if (pad == "border") return fmt::format("p = clamp(p, 0L, {}L); ", len - 1);
  return fmt::format("{{ float f = (float)p; {} p = clamp((long)f, 0L, {}L); }} ",
                     Reflect("f", lo, hi), len - 1);
}

}  // namespace

void CheckGridSample(const ir::Node& n) {
  if (n.inputs[0]->type.dtype != DType::kFloat32)
    Fail(ErrorCode::kUnsupported, "GridSample of {} is not supported (float32 only)",
         DTypeName(n.inputs[0]->type.dtype));
  const std::string mode = n.attrs.Str("mode"), pad = n.attrs.Str("padding_mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    Fail(ErrorCode::kUnsupported, "GridSample mode '{}' is not supported", mode);
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    Fail(ErrorCode::kUnsupported, "GridSample padding_mode '{}' is not supported", pad);
}

std::string GridSampleBody(const ir::Node& n) {
  const Shape& xs = n.inputs[0]->type.shape;
  const Shape& os = n.outputs[0]->type.shape;
  const std::string mode = n.attrs.Str("mode"), pad = n.attrs.Str("padding_mode");
  const bool align = n.attrs.Int("align_corners") != 0;
  const int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  const int first = taps == 4 ? -1 : 0;
  // Output coordinates c0 = n, c1 = c, c2 = y, c3 = x; the grid holds (x, y) pairs.
  std::string body = fmt::format("const long g = ((c0 * {} + c2) * {} + c3) * 2; ", os[2], os[3]);
  std::string loops, close, weight = "1.0f", offset, valid = "1";
  // Axis 0 is y (grid component 1, input dim 2), axis 1 is x (component 0, dim 3).
  for (int a = 0; a < 2; ++a) {
    const int64_t len = xs[2 + a], stride = a == 0 ? xs[3] : 1;
    const double lo = align ? 0.0 : -0.5, hi = align ? double(len - 1) : double(len) - 0.5;
    const std::string x = fmt::format("x{}", a);
    const std::string nrm = fmt::format("(float)in1[g + {}]", 1 - a);
    body += align ? fmt::format("float {} = ({} + 1.0f) / 2.0f * {}.0f; ", x, nrm, len - 1)
                  : fmt::format("float {} = (({} + 1.0f) * {}.0f - 1.0f) / 2.0f; ", x, nrm, len);
    if (mode == "nearest") body += fmt::format("{} = rint({}); ", x, x);
    if (pad == "border")
      body += fmt::format("if ({} < {} || {} > {}) {} = clamp({}, 0.0f, {}.0f); ", x,
                          FloatLiteral(lo), x, FloatLiteral(hi), x, x, len - 1);
    if (pad == "reflection") body += Reflect(x, lo, hi) + " ";
    // Far-away positions (zeros padding) are clamped so the float -> long conversion is defined;
    // every tap there is still outside.
    body += fmt::format("{} = clamp({}, -8.0f, {}.0f); ", x, x, len + 8);
    if (taps == 1) {  // the reference truncates the rounded position to an integer
      body += fmt::format("long o{} = 0; {{ long p = (long){}; {}o{} = p < 0 ? -1 : p * {}; }} ", a,
                          x, PadTap(pad, len, lo, hi), a, stride);
      offset += fmt::format(" + o{}", a);
      valid += fmt::format(" && o{} >= 0", a);
      continue;
    }
    body += fmt::format(
        "const float f{a} = floor({x}); const float t{a} = {x} - f{a}; "
        "float w{a}[{taps}]; long o{a}[{taps}]; "
        "for (int k = 0; k < {taps}; ++k) {{ long p = (long)f{a} + k + ({first}); ",
        fmt::arg("a", a), fmt::arg("x", x), fmt::arg("taps", taps), fmt::arg("first", first));
    if (taps == 2)
      body += fmt::format("w{}[k] = k == 0 ? 1.0f - t{} : t{}; ", a, a, a);
    else
      body += fmt::format("const float d = fabs(t{} - (float)(k - 1)); w{}[k] = {}; ", a, a,
                          CubicWeight("d", "-0.75f"));
    body += PadTap(pad, len, lo, hi) + fmt::format("o{}[k] = p < 0 ? -1 : p * {}; }} ", a, stride);
    loops += fmt::format("for (int k{} = 0; k{} < {}; ++k{}) {{ ", a, a, taps, a);
    close += "} ";
    weight += fmt::format(" * w{}[k{}]", a, a);
    offset += fmt::format(" + o{}[k{}]", a, a);
    valid += fmt::format(" && o{}[k{}] >= 0", a, a);
  }
  const std::string base = fmt::format("(c0 * {} + c1) * {}", xs[1], xs[2] * xs[3]);
  if (taps == 1) return body + fmt::format("v = ({}) ? in0[{}{}] : 0.0f;", valid, base, offset);
  return body + fmt::format("float acc = 0.0f; {}if ({}) acc += {} * in0[{}{}]; {}v = acc;", loops,
                            valid, weight, base, offset, close);
}

}  // namespace texel::codegen
