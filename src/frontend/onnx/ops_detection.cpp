// Importers for detection post-processing whose output size depends on the data.
//   NonMaxSuppression: the core op writes a padded [B*C*min(max, N), 3] result and the number of
//   valid rows; the selected indices may only be a graph output (the runtime trims it).
#include <cmath>
#include <limits>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

double ScalarOr(NodeImporter& n, size_t i, std::string_view what, double def) {
  if (!n.Input(i)) return def;
  const HostTensor& t = n.ConstInput(i, what);
  if (t.size() != 1) n.Invalid(fmt::format("{} must have one element", what));
  return t.GetDouble(0);
}

void NonMaxSuppression(NodeImporter& n) {
  ir::Value* boxes = n.RequiredInput(0);
  ir::Value* scores = n.RequiredInput(1);
  // An absent max_output_boxes_per_class means 0: nothing is selected.
  double max_per_class = ScalarOr(n, 2, "max_output_boxes_per_class", 0);
  double iou = ScalarOr(n, 3, "iou_threshold", 0);
  double score = ScalarOr(n, 4, "score_threshold", std::numeric_limits<double>::quiet_NaN());
  int64_t center = n.AttrInt("center_point_box", 0);
  if (center != 0 && center != 1) n.Invalid("center_point_box must be 0 or 1");
  if (boxes->type.dtype != DType::kFloat32)
    n.Unsupported(fmt::format("boxes of type {} are not supported", DTypeName(boxes->type.dtype)));
  ir::Node* node =
      n.graph().AddNode(ir::OpKind::kNonMaxSuppression, {boxes, scores},
                        {{"max_per_class", static_cast<int64_t>(std::max(max_per_class, 0.0))},
                         {"iou_threshold", iou},
                         {"score_threshold", score},
                         {"center_point_box", center}},
                        n.proto().output(0));
  node->outputs[0]->valid_rows = node->outputs[1];
  n.SetOutput(0, node->outputs[0]);
}

}  // namespace

void RegisterDetectionOps(Registry& r) { r["NonMaxSuppression"] = NonMaxSuppression; }

}  // namespace texel::onnx_frontend
