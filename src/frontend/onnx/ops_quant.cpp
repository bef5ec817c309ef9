// Importers for quantisation and generated constants, composed of core ops:
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
//   DequantizeLinear: y = (x - zero_point) * scale
//   DynamicQuantizeLinear: scale = (max(0, max x) - min(0, min x)) / 255,
//                          zero_point = saturate(round(-min(0, min x) / scale)), y as above
//   Hann / Hamming / Blackman windows: constants computed on the host.
#include <cmath>
#include <numbers>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"
#include "frontend/onnx/tensor_proto.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

// A per-axis parameter ([C]) reshaped to broadcast along `axis` of x; scalars stay.
ir::Value* AlongAxis(NodeImporter& n, ir::Value* p, const ir::Value* x) {
  if (p->type.shape.size() != 1 || x->type.shape.size() < 2) return p;
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  int64_t axis = n.AttrInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || x->type.shape[axis] != p->type.shape[0])
    n.Invalid("scale / zero point length does not match the axis");
  Shape s(rank - axis, 1);
  s[0] = p->type.shape[0];
  return n.Reshape(p, s);
}

ir::Value* ToF32(NodeImporter& n, ir::Value* v) {
  if (v->type.dtype == DType::kFloat32) return v;
  return n.Emit(OpKind::kCast, {v}, {{"to", int64_t(DType::kFloat32)}});
}

ir::Value* Saturate(NodeImporter& n, ir::Value* v, DType to) {
  double lo = to == DType::kUInt8 ? 0 : -128, hi = to == DType::kUInt8 ? 255 : 127;
  ir::Value* c = n.Emit(OpKind::kClip, {v}, {{"min", lo}, {"max", hi}});
  return n.Emit(OpKind::kCast, {c}, {{"to", int64_t(to)}});
}

void QuantizeLinear(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* scale = AlongAxis(n, n.RequiredInput(1), x);
  ir::Value* zp = n.Input(2);
  n.IgnoreAttr("saturate");
  DType to = zp ? zp->type.dtype : DType::kUInt8;
  if (to != DType::kUInt8 && to != DType::kInt8)
    n.Unsupported(fmt::format("quantising to {} is not supported", DTypeName(to)));
  ir::Value* q = n.Emit(OpKind::kRound, {n.Emit(OpKind::kDiv, {ToF32(n, x), scale})});
  if (zp) q = n.Emit(OpKind::kAdd, {q, ToF32(n, AlongAxis(n, zp, x))});
  n.SetOutput(0, Saturate(n, q, to));
}

void DequantizeLinear(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* scale = AlongAxis(n, n.RequiredInput(1), x);
  ir::Value* v = ToF32(n, x);
  if (ir::Value* zp = n.Input(2)) v = n.Emit(OpKind::kSub, {v, ToF32(n, AlongAxis(n, zp, x))});
  n.SetOutput(0, n.Emit(OpKind::kMul, {v, scale}));
}

void DynamicQuantizeLinear(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  std::vector<int64_t> all;
  for (size_t d = 0; d < x->type.shape.size(); ++d) all.push_back(static_cast<int64_t>(d));
  ir::Attrs red = {{"axes", all}, {"keepdims", int64_t{0}}};
  ir::Value* zero = n.ConstScalar(DType::kFloat32, 0.0);
  ir::Value* hi = n.Emit(OpKind::kMax, {n.Emit(OpKind::kReduceMax, {x}, red), zero});
  ir::Value* lo = n.Emit(OpKind::kMin, {n.Emit(OpKind::kReduceMin, {x}, red), zero});
  ir::Value* scale = n.Emit(OpKind::kDiv, {n.Emit(OpKind::kSub, {hi, lo}),
                                           n.ConstScalar(DType::kFloat32, 255.0)});
  ir::Value* zp_f = n.Emit(OpKind::kClip, {n.Emit(OpKind::kRound, {n.Emit(OpKind::kDiv,
                                              {n.Emit(OpKind::kNeg, {lo}), scale})})},
                           {{"min", 0.0}, {"max", 255.0}});
  ir::Value* q = n.Emit(OpKind::kAdd, {n.Emit(OpKind::kRound, {n.Emit(OpKind::kDiv, {x, scale})}), zp_f});
  n.SetOutput(0, Saturate(n, q, DType::kUInt8));
  n.SetOutput(1, scale);
  n.SetOutput(2, n.Emit(OpKind::kCast, {zp_f}, {{"to", int64_t(DType::kUInt8)}}));
}

// Generalised cosine windows: w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N), with
// N = size (periodic) or size - 1 (symmetric).
template <int kKind>
void Window(NodeImporter& n) {
  int64_t size = n.ConstInput(0, "size").GetInt(0);
  if (size < 0) n.Invalid("negative window size");
  bool periodic = n.AttrInt("periodic", 1) != 0;
  DType dt = DType::kFloat32;
  if (n.HasAttr("output_datatype") && !DTypeFromOnnx(static_cast<int>(n.AttrInt("output_datatype")), &dt))
    n.Unsupported("this output_datatype is not supported");
  double a0 = kKind == 0 ? 0.5 : kKind == 1 ? 25.0 / 46.0 : 0.42;
  double a1 = kKind == 0 ? 0.5 : kKind == 1 ? 21.0 / 46.0 : 0.5;
  double a2 = kKind == 2 ? 0.08 : 0.0;
  double denom = static_cast<double>(periodic ? size : size - 1);
  HostTensor w(DType::kFloat64, {size});
  for (int64_t k = 0; k < size; ++k) {
    double t = denom > 0 ? 2.0 * std::numbers::pi * static_cast<double>(k) / denom : 0.0;
    w.data<double>()[k] = a0 - a1 * std::cos(t) + a2 * std::cos(2 * t);
  }
  ir::Value* c = n.Const(std::move(w));
  n.SetOutput(0, n.Emit(OpKind::kCast, {c}, {{"to", int64_t(dt)}}));
}

}  // namespace

void RegisterQuantOps(Registry& r) {
  r["QuantizeLinear"] = QuantizeLinear;
  r["DequantizeLinear"] = DequantizeLinear;
  r["DynamicQuantizeLinear"] = DynamicQuantizeLinear;
  r["HannWindow"] = Window<0>;
  r["HammingWindow"] = Window<1>;
  r["BlackmanWindow"] = Window<2>;
}

}  // namespace texel::onnx_frontend
