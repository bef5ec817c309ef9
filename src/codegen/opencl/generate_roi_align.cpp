// RoiAlign (x [N, C, H, W], rois [R, 4] as (x1, y1, x2, y2), batch_indices [R]) as a pointwise
// body: output element (r, c, ph, pw) averages (or maxes) a grid of bilinear samples inside its
// bin, following the ONNX reference (itself the onnxruntime kernel):
//  - roi corners are scaled by spatial_scale and shifted by -0.5 in half_pixel mode; in
//    output_half_pixel mode rois are at least 1x1;
//  - the sampling grid is sampling_ratio^2, or ceil(roi size / output size) per axis when
//    sampling_ratio is 0, so it depends on the roi values and is computed at run time;
//  - a sample outside [-1, H] x [-1, W] counts as zero; others are clamped to the input;
//  - max mode takes the max over samples of the max of the four weighted corner values.
// Rois and batch indices are read at run time; a batch index outside [0, N) is clamped so that
// no read is out of bounds.
#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::codegen {

void CheckRoiAlign(const ir::Node& n) {
  if (n.inputs[0]->type.dtype != DType::kFloat32)
    Fail(ErrorCode::kUnsupported, "RoiAlign of {} is not supported (float32 only)",
         DTypeName(n.inputs[0]->type.dtype));
}

std::string RoiAlignBody(const ir::Node& n) {
  const Shape& xs = n.inputs[0]->type.shape;
  const Shape& os = n.outputs[0]->type.shape;
  const ir::Attrs& a = n.attrs;
  const bool is_max = a.Str("mode") == "max";
  const bool half_pixel = a.Int("half_pixel") != 0;
  const int64_t h = xs[2], w = xs[3];
  std::string s = fmt::format(
      "const float sw = in1[c0 * 4] * {scale} - {off}, sh = in1[c0 * 4 + 1] * {scale} - {off}; "
      "float rw = (in1[c0 * 4 + 2] * {scale} - {off}) - sw; "
      "float rh = (in1[c0 * 4 + 3] * {scale} - {off}) - sh; ",
      fmt::arg("scale", FloatLiteral(a.Float("spatial_scale"))),
      fmt::arg("off", half_pixel ? "0.5f" : "0.0f"));
  if (!half_pixel) s += "rw = fmax(rw, 1.0f); rh = fmax(rh, 1.0f); ";
  int64_t ratio = a.Int("sampling_ratio");
  s += fmt::format(
      "const float bh = rh / {oh}.0f, bw = rw / {ow}.0f; "
      "const int gh = {gh}, gw = {gw}; const float count = (float)max(gh * gw, 1); "
      "const long b = clamp((long)in2[c0], 0L, {nmax}L); "
      "const long base = (b * {c} + c1) * {hw}; "
      "float acc = 0.0f; int first = 1; "
      "for (int iy = 0; iy < gh; ++iy) {{ "
      "float y = sh + c2 * bh + (iy + 0.5f) * bh / gh; "
      "for (int ix = 0; ix < gw; ++ix) {{ "
      "float x = sw + c3 * bw + (ix + 0.5f) * bw / gw; float val = 0.0f; "
      "if (!(y < -1.0f || y > {h}.0f || x < -1.0f || x > {w}.0f)) {{ "
      "float yy = fmax(y, 0.0f), xx = fmax(x, 0.0f); long yl = (long)yy, xl = (long)xx, yh, xh; "
      "if (yl >= {h1}) {{ yh = yl = {h1}; yy = (float)yl; }} else yh = yl + 1; "
      "if (xl >= {w1}) {{ xh = xl = {w1}; xx = (float)xl; }} else xh = xl + 1; "
      "const float ly = yy - yl, lx = xx - xl, hy = 1.0f - ly, hx = 1.0f - lx; "
      "const float v1 = hy * hx * in0[base + yl * {w} + xl]; "
      "const float v2 = hy * lx * in0[base + yl * {w} + xh]; "
      "const float v3 = ly * hx * in0[base + yh * {w} + xl]; "
      "const float v4 = ly * lx * in0[base + yh * {w} + xh]; "
      "val = {combine}; }} "
      "{accumulate} }} }} ",
      fmt::arg("oh", os[2]), fmt::arg("ow", os[3]),
      fmt::arg("gh",
               ratio > 0 ? std::to_string(ratio) : fmt::format("(int)ceil(rh / {}.0f)", os[2])),
      fmt::arg("gw",
               ratio > 0 ? std::to_string(ratio) : fmt::format("(int)ceil(rw / {}.0f)", os[3])),
      fmt::arg("nmax", xs[0] - 1), fmt::arg("c", xs[1]), fmt::arg("hw", h * w), fmt::arg("h", h),
      fmt::arg("w", w), fmt::arg("h1", h - 1), fmt::arg("w1", w - 1),
      fmt::arg("combine", is_max ? "fmax(fmax(v1, v2), fmax(v3, v4))" : "v1 + v2 + v3 + v4"),
      fmt::arg("accumulate",
               is_max ? "acc = first ? val : fmax(acc, val); first = 0;" : "acc += val;"));
  return s + (is_max ? "v = acc;" : "v = acc / count;");
}

}  // namespace texel::codegen
