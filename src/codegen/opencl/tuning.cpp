#include "codegen/opencl/tuning.h"

#include <algorithm>

#include "codegen/opencl/conv_blocked.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/matmul.h"
#include "codegen/opencl/window_rows.h"

namespace texel::codegen {

std::optional<Tunable> TunableOf(const ir::Node& n, const Target& target) {
  // Texture kernels (generate_texture.cpp) have no declared space: the buffer family that
  // ConvTunable and the others would name is not what runs, so tuning it would measure and
  // store a kernel the model never takes.
  for (const auto* values : {&n.inputs, &n.outputs})
    for (const ir::Value* v : *values)
      if (v != nullptr && v->is_image()) return std::nullopt;
  switch (n.op) {
    case ir::OpKind::kConv: return ConvTunable(n, target);
    case ir::OpKind::kMaxPool: return WindowRowsTunable(n, target);
    case ir::OpKind::kMatMul: return MatMulNodeTunable(n, target);
    case ir::OpKind::kAttention: return AttentionTunable(n, target);
    case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax: return RowsTunable(n, target);
    default:
      if (n.info().cls == ir::OpClass::kReduce) return RowsTunable(n, target);
      return std::nullopt;
  }
}

const TunePoint& Choose(const Tunable& t, const Target& target) {
  if (target.tuning != nullptr)
    if (std::optional<TunePoint> p = target.tuning->Pick(t)) {
      auto it = std::find(t.candidates.begin(), t.candidates.end(), *p);
      if (it != t.candidates.end()) return *it;
    }
  return t.candidates.front();
}

std::string PointString(const TunePoint& p) {
  std::string s;
  for (const auto& [name, value] : p) {
    if (!s.empty()) s += ',';
    s += name + '=' + std::to_string(value);
  }
  return s;
}

}  // namespace texel::codegen
