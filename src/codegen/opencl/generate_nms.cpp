// NonMaxSuppression (kernels/nms.cl): a padded selection plus its row count.
#include <algorithm>
#include <cmath>

#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::codegen {

void CheckNonMaxSuppression(const ir::Node& n) {
  if (n.inputs[0]->type.dtype != DType::kFloat32)
    Fail(ErrorCode::kUnsupported, "NonMaxSuppression on {} is not supported on the device",
         DTypeName(n.inputs[0]->type.dtype));
}

KernelSpec GenerateNonMaxSuppression(const ir::Node& n, const std::string& kernel_name) {
  CheckNonMaxSuppression(n);
  const Shape& boxes = n.inputs[0]->type.shape;
  const Shape& scores = n.inputs[1]->type.shape;
  double score_thr = n.attrs.Float("score_threshold");
  KernelSource src(kernel_name, "nms");
  src.Define("B", boxes[0]).Define("C", scores[1]).Define("NB", boxes[1]);
  src.Define("MAX_PER_CLASS", std::min(n.attrs.Int("max_per_class"), boxes[1]));
  src.Define("IOU_THR", FloatLiteral(n.attrs.Float("iou_threshold")));
  src.Define("HAS_SCORE_THR", std::isnan(score_thr) ? 0 : 1);
  src.Define("SCORE_THR", FloatLiteral(std::isnan(score_thr) ? 0.0 : score_thr));
  src.Define("CENTER", n.attrs.Int("center_point_box"));
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.args = {n.inputs[0]->id, n.inputs[1]->id, n.outputs[0]->id, n.outputs[1]->id};
  spec.global = {1};
  spec.local = {1};
  return spec;
}

}  // namespace texel::codegen
