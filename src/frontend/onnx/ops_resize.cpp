// Importers for resampling ops: Resize (opsets 10-13) and Upsample (opsets 7-9), whose output
// shape, per-axis scales and roi become attributes of one core Resize op; GridSample (opset 16)
// and RoiAlign (opsets 10, 16), one core op each.
#include <cmath>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

std::vector<double> ConstFloats(NodeImporter& n, size_t i, std::string_view what) {
  const HostTensor& t = n.ConstInput(i, what);
  std::vector<double> v(t.size());
  for (int64_t k = 0; k < t.size(); ++k) v[k] = t.GetDouble(k);
  return v;
}

void EmitResize(NodeImporter& n, ir::Value* x, std::vector<double> scales, Shape sizes,
                std::vector<double> roi, ir::Attrs attrs) {
  const Shape& xs = x->type.shape;
  if (sizes.empty()) {
    if (scales.size() != xs.size()) n.Invalid("scales must have one entry per input dim");
    for (size_t d = 0; d < xs.size(); ++d) {
      if (scales[d] <= 0) n.Invalid("scales must be positive");
      sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(xs[d]) * scales[d])));
    }
  } else {
    if (sizes.size() != xs.size()) n.Invalid("sizes must have one entry per input dim");
    scales.clear();
    for (size_t d = 0; d < xs.size(); ++d)
      scales.push_back(
          static_cast<double>(static_cast<float>(sizes[d]) / static_cast<float>(xs[d])));
  }
  if (!roi.empty() && roi.size() != 2 * xs.size()) roi.clear();
  attrs.Set("sizes", sizes);
  attrs.Set("scales", scales);
  attrs.Set("roi", roi);
  if (NumElements(sizes) == 0) {
    n.SetOutput(0, n.Const(HostTensor(x->type.dtype, sizes)));
    return;
  }
  n.SetOutput(0, n.Emit(OpKind::kResize, {x}, attrs));
}

std::string Mode(NodeImporter& n) {
  std::string mode = n.AttrString("mode", "nearest");
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";  // Upsample-7 spellings
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    n.Invalid(fmt::format("unknown mode '{}'", mode));
  return mode;
}

// Resize-10 and Upsample: asymmetric coordinates and the "simple" nearest rounding.
ir::Attrs LegacyAttrs(const std::string& mode) {
  return {{"mode", mode},
          {"coord", std::string("asymmetric")},
          {"nearest_mode", std::string("simple")},
          {"cubic_a", -0.75},
          {"exclude_outside", int64_t{0}},
          {"extrapolation", 0.0}};
}

void Resize(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  std::string mode = Mode(n);
  if (n.opset() < 11) {  // Resize-10: X, scales; asymmetric coordinates
    EmitResize(n, x, ConstFloats(n, 1, "scales"), {}, {}, LegacyAttrs(mode));
    return;
  }
  std::vector<double> roi, scales;
  Shape sizes;
  if (n.Input(1) && n.Input(1)->type.bytes() > 0) roi = ConstFloats(n, 1, "roi");
  if (n.Input(2) && n.Input(2)->type.bytes() > 0) scales = ConstFloats(n, 2, "scales");
  if (n.Input(3) && n.Input(3)->type.bytes() > 0) sizes = n.ConstInts(3, "sizes");
  if (scales.empty() == sizes.empty()) n.Invalid("exactly one of scales and sizes must be given");
  EmitResize(n, x, scales, sizes, roi,
             {{"mode", mode},
              {"coord", n.AttrString("coordinate_transformation_mode", "half_pixel")},
              {"nearest_mode", n.AttrString("nearest_mode", "round_prefer_floor")},
              {"cubic_a", n.AttrFloat("cubic_coeff_a", -0.75)},
              {"exclude_outside", n.AttrInt("exclude_outside", 0)},
              {"extrapolation", n.AttrFloat("extrapolation_value", 0.0)}});
}

void Upsample(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  std::string mode = Mode(n);
  std::vector<double> scales;
  if (n.opset() < 9) {
    scales = n.AttrFloats("scales");
  } else {
    scales = ConstFloats(n, 1, "scales");
  }
  EmitResize(n, x, scales, {}, {}, LegacyAttrs(mode));
}

// GridSample-16 (4-D only); opset 20's "linear" / "cubic" spellings are accepted too.
void GridSample(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* grid = n.RequiredInput(1);
  if (x->type.shape.size() != 4)
    n.Unsupported(
        fmt::format("GridSample of a rank-{} input (only 4-D: N, C, H, W)", x->type.shape.size()));
  if (x->type.shape[2] == 0 || x->type.shape[3] == 0) n.Invalid("X has an empty spatial dim");
  const Shape& gs = grid->type.shape;
  if (gs.size() != 4 || gs[3] != 2 || gs[0] != x->type.shape[0])
    n.Invalid(fmt::format("grid {} must be [N, H_out, W_out, 2] for input {}", ShapeStr(gs),
                          ShapeStr(x->type.shape)));
  std::string mode = n.AttrString("mode", "bilinear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    n.Invalid(fmt::format("unknown mode '{}'", mode));
  std::string pad = n.AttrString("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    n.Invalid(fmt::format("unknown padding_mode '{}'", pad));
  if (grid->type.dtype != x->type.dtype)
    n.Unsupported(fmt::format("a {} grid for a {} input", DTypeName(grid->type.dtype),
                              DTypeName(x->type.dtype)));
  Shape out = {x->type.shape[0], x->type.shape[1], gs[1], gs[2]};
  if (NumElements(out) == 0) {  // nothing to sample (and no kernel over an empty buffer)
    n.SetOutput(0, n.Const(HostTensor(x->type.dtype, out)));
    return;
  }
  n.SetOutput(0, n.Emit(OpKind::kGridSample, {x, grid},
                        {{"mode", mode},
                         {"padding_mode", pad},
                         {"align_corners", int64_t{n.AttrInt("align_corners", 0) != 0}}}));
}

// RoiAlign-10 has no coordinate_transformation_mode and behaves as output_half_pixel;
// RoiAlign-16 defaults to half_pixel.
void RoiAlign(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* rois = n.RequiredInput(1);
  ir::Value* idx = n.RequiredInput(2);
  if (x->type.shape.size() != 4) n.Invalid("X must be 4-D (N, C, H, W)");
  const Shape& xs = x->type.shape;
  if (xs[0] == 0 || xs[2] == 0 || xs[3] == 0) n.Invalid("X has an empty batch or spatial dim");
  const Shape& rs = rois->type.shape;
  if (rs.size() != 2 || rs[1] != 4) n.Invalid(fmt::format("rois {} must be [R, 4]", ShapeStr(rs)));
  if (idx->type.shape != Shape{rs[0]})
    n.Invalid(fmt::format("batch_indices {} must be [{}]", ShapeStr(idx->type.shape), rs[0]));
  if (idx->type.dtype != DType::kInt64 && idx->type.dtype != DType::kInt32)
    n.Invalid("batch_indices must be integers");
  if (idx->type.dtype != DType::kInt64)
    idx = n.Emit(OpKind::kCast, {idx}, {{"to", int64_t(DType::kInt64)}});
  if (rois->type.dtype != x->type.dtype)
    n.Invalid(
        fmt::format("rois are {}, X is {}", DTypeName(rois->type.dtype), DTypeName(x->type.dtype)));
  std::string mode = n.AttrString("mode", "avg");
  if (mode != "avg" && mode != "max") n.Invalid(fmt::format("unknown mode '{}'", mode));
  std::string coord = n.opset() < 16 ? std::string("output_half_pixel")
                                     : n.AttrString("coordinate_transformation_mode", "half_pixel");
  if (coord != "half_pixel" && coord != "output_half_pixel")
    n.Invalid(fmt::format("unknown coordinate_transformation_mode '{}'", coord));
  int64_t oh = n.AttrInt("output_height", 1), ow = n.AttrInt("output_width", 1);
  int64_t ratio = n.AttrInt("sampling_ratio", 0);
  if (oh <= 0 || ow <= 0) n.Invalid("output_height and output_width must be positive");
  if (ratio < 0) n.Invalid("sampling_ratio must be >= 0");
  Shape out = {rs[0], xs[1], oh, ow};
  if (NumElements(out) == 0) {
    n.SetOutput(0, n.Const(HostTensor(x->type.dtype, out)));
    return;
  }
  n.SetOutput(0, n.Emit(OpKind::kRoiAlign, {x, rois, idx},
                        {{"mode", mode},
                         {"half_pixel", int64_t{coord == "half_pixel"}},
                         {"output_height", oh},
                         {"output_width", ow},
                         {"sampling_ratio", ratio},
                         {"spatial_scale", n.AttrFloat("spatial_scale", 1.0)}}));
}

}  // namespace

void RegisterResizeOps(Registry& r) {
  r["Resize"] = Resize;
  r["Upsample"] = Upsample;
  r["GridSample"] = GridSample;
  r["RoiAlign"] = RoiAlign;
}

}  // namespace texel::onnx_frontend
