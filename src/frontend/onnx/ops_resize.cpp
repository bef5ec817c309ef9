// Importers for Resize (opsets 10-13) and Upsample (opsets 7-9): the output shape, per-axis
// scales and roi become attributes of one core Resize op.
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

}  // namespace

void RegisterResizeOps(Registry& r) {
  r["Resize"] = Resize;
  r["Upsample"] = Upsample;
}

}  // namespace texel::onnx_frontend
