// Importers for quantisation and generated constants, composed of core ops:
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
//   DequantizeLinear: y = (x - zero_point) * scale
//   DynamicQuantizeLinear: scale = (max(0, max x) - min(0, min x)) / 255,
//                          zero_point = saturate(round(-min(0, min x) / scale)), y as above
//   ConvInteger / MatMulInteger: y = int32(op(x - x_zero_point, w - w_zero_point))
//   QLinearConv / QLinearMatMul: y = saturate(round_half_even(op(x - x_zp, w - w_zp) *
//                                  (x_scale * w_scale / y_scale)) + y_zp)
//   Hann / Hamming / Blackman windows: constants computed on the host.
// The integer and quantised linear ops run the float32 Conv / MatMul kernels on the
// zero-point-shifted operands (as the ONNX reference does in int32, and then scales once).
// Every product and partial sum is an integer, so the result is exact while the sums stay below
// 2^24 in magnitude: always for reduction lengths up to 258 (|product| <= 255 * 255), and for
// longer ones as long as the actual sums stay below. Larger sums lose their low bits.
#include <cmath>
#include <numbers>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/ops_nn.h"
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
  ir::Value* scale =
      n.Emit(OpKind::kDiv, {n.Emit(OpKind::kSub, {hi, lo}), n.ConstScalar(DType::kFloat32, 255.0)});
  ir::Value* zp_f =
      n.Emit(OpKind::kClip,
             {n.Emit(OpKind::kRound, {n.Emit(OpKind::kDiv, {n.Emit(OpKind::kNeg, {lo}), scale})})},
             {{"min", 0.0}, {"max", 255.0}});
  ir::Value* q =
      n.Emit(OpKind::kAdd, {n.Emit(OpKind::kRound, {n.Emit(OpKind::kDiv, {x, scale})}), zp_f});
  n.SetOutput(0, Saturate(n, q, DType::kUInt8));
  n.SetOutput(1, scale);
  n.SetOutput(2, n.Emit(OpKind::kCast, {zp_f}, {{"to", int64_t(DType::kUInt8)}}));
}

// A quantised operand: u8 or i8.
void CheckQuantized(NodeImporter& n, const ir::Value* v, std::string_view what) {
  if (v->type.dtype != DType::kUInt8 && v->type.dtype != DType::kInt8)
    n.Unsupported(fmt::format("{} of type {} is not supported (uint8 or int8)", what,
                              DTypeName(v->type.dtype)));
}

// A per-tensor (one element) or per-slice (1-D of length len) parameter, shaped to broadcast
// along the axis that has `trailing` dims after it.
ir::Value* PerSlice(NodeImporter& n, ir::Value* p, int64_t len, size_t trailing,
                    std::string_view what) {
  if (NumElements(p->type.shape) == 1) return n.Reshape(p, {});
  if (p->type.shape != Shape{len})
    n.Invalid(fmt::format("{} has shape {}; expected one element or [{}]", what,
                          ShapeStr(p->type.shape), len));
  Shape s(trailing + 1, 1);
  s[0] = len;
  return n.Reshape(p, s);
}

// x - zero_point in float32 (x alone when the zero point is absent). zp is already shaped by
// PerSlice (or null).
ir::Value* Shifted(NodeImporter& n, ir::Value* x, ir::Value* zp, std::string_view what) {
  CheckQuantized(n, x, what);
  if (!zp) return ToF32(n, x);
  if (zp->type.dtype != x->type.dtype)
    n.Invalid(fmt::format("the zero point of {} is {}, not {}", what, DTypeName(zp->type.dtype),
                          DTypeName(x->type.dtype)));
  return n.Emit(OpKind::kSub, {ToF32(n, x), ToF32(n, zp)});
}

// An integer-valued float32 accumulator as int32 (exact: see the top of this file).
ir::Value* ToI32(NodeImporter& n, ir::Value* acc) {
  return n.Emit(OpKind::kCast, {acc}, {{"to", int64_t(DType::kInt32)}});
}

// saturate(round_half_even(acc * scale) + zp) in zp's type (or `fallback` without zp). The
// reference multiplies in float64; here the product is float32, so a value within float32
// rounding of a .5 tie may round the other way (off by one).
ir::Value* Requantize(NodeImporter& n, ir::Value* acc, ir::Value* scale, ir::Value* zp,
                      DType fallback) {
  DType to = zp ? zp->type.dtype : fallback;
  if (to != DType::kUInt8 && to != DType::kInt8)
    n.Unsupported(fmt::format("quantising to {} is not supported", DTypeName(to)));
  ir::Value* q = n.Emit(OpKind::kRound, {n.Emit(OpKind::kMul, {acc, scale})});
  if (zp) q = n.Emit(OpKind::kAdd, {q, ToF32(n, zp)});
  return Saturate(n, q, to);
}

// Conv over shifted operands: x_zero_point is per tensor, w_zero_point per tensor or per output
// channel; b (int32, may be null) is added to the integer accumulator.
ir::Value* IntegerConv(NodeImporter& n, ir::Value* x, ir::Value* x_zp, ir::Value* w,
                       ir::Value* w_zp, ir::Value* b) {
  const Shape& ws = w->type.shape;
  if (ws.size() < 3) n.Invalid("the weight must have rank >= 3");
  ir::Value* xf = Shifted(n, x, x_zp ? PerSlice(n, x_zp, 1, 0, "x_zero_point") : nullptr, "x");
  ir::Value* wf =
      Shifted(n, w, w_zp ? PerSlice(n, w_zp, ws[0], ws.size() - 1, "w_zero_point") : nullptr, "w");
  if (b && b->type.dtype != DType::kInt32) n.Invalid("the bias must be int32");
  return EmitConv(n, xf, wf, b ? ToF32(n, b) : nullptr);
}

// MatMul over shifted operands: a's zero point is per tensor or per row (M), b's per tensor or
// per column (N).
ir::Value* IntegerMatMul(NodeImporter& n, ir::Value* a, ir::Value* a_zp, ir::Value* b,
                         ir::Value* b_zp) {
  const Shape& as = a->type.shape;
  const Shape& bs = b->type.shape;
  if (as.size() < 2 || bs.size() < 2)
    n.Unsupported("1-D operands are not supported (rank >= 2 only)");
  ir::Value* af =
      Shifted(n, a, a_zp ? PerSlice(n, a_zp, as[as.size() - 2], 1, "a_zero_point") : nullptr, "A");
  ir::Value* bf =
      Shifted(n, b, b_zp ? PerSlice(n, b_zp, bs.back(), 0, "b_zero_point") : nullptr, "B");
  return n.Emit(OpKind::kMatMul, {af, bf});
}

// A float32 scale input, per tensor or per slice (see PerSlice).
ir::Value* Scale(NodeImporter& n, size_t i, int64_t len, size_t trailing, std::string_view what) {
  ir::Value* s = n.RequiredInput(i);
  if (s->type.dtype != DType::kFloat32) n.Invalid(fmt::format("{} must be float32", what));
  return PerSlice(n, s, len, trailing, what);
}

void ConvInteger(NodeImporter& n) {
  n.SetOutput(0, ToI32(n, IntegerConv(n, n.RequiredInput(0), n.Input(2), n.RequiredInput(1),
                                      n.Input(3), nullptr)));
}

void MatMulInteger(NodeImporter& n) {
  n.SetOutput(0, ToI32(n, IntegerMatMul(n, n.RequiredInput(0), n.Input(2), n.RequiredInput(1),
                                        n.Input(3))));
}

// Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point[, B].
void QLinearConv(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* w = n.RequiredInput(3);
  ir::Value* acc = IntegerConv(n, x, n.Input(2), w, n.Input(5), n.Input(8));
  size_t trailing = acc->type.shape.size() - 2;  // spatial dims after the channel axis
  int64_t m = w->type.shape[0];
  ir::Value* scale =
      n.Emit(OpKind::kMul, {Scale(n, 1, 1, 0, "x_scale"), Scale(n, 4, m, trailing, "w_scale")});
  scale = n.Emit(OpKind::kDiv, {scale, Scale(n, 6, 1, 0, "y_scale")});
  ir::Value* y_zp = n.Input(7);
  n.SetOutput(0, Requantize(n, acc, scale, y_zp ? PerSlice(n, y_zp, 1, 0, "y_zero_point") : nullptr,
                            x->type.dtype));
}

// Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
void QLinearMatMul(NodeImporter& n) {
  ir::Value* a = n.RequiredInput(0);
  ir::Value* b = n.RequiredInput(3);
  ir::Value* acc = IntegerMatMul(n, a, n.Input(2), b, n.Input(5));
  const Shape& as = a->type.shape;
  ir::Value* scale = n.Emit(OpKind::kMul, {Scale(n, 1, as[as.size() - 2], 1, "a_scale"),
                                           Scale(n, 4, b->type.shape.back(), 0, "b_scale")});
  scale = n.Emit(OpKind::kDiv, {scale, Scale(n, 6, 1, 0, "y_scale")});
  ir::Value* y_zp = n.Input(7);
  n.SetOutput(0, Requantize(n, acc, scale, y_zp ? PerSlice(n, y_zp, 1, 0, "y_zero_point") : nullptr,
                            a->type.dtype));
}

// Generalised cosine windows: w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N), with
// N = size (periodic) or size - 1 (symmetric).
template <int kKind>
void Window(NodeImporter& n) {
  int64_t size = n.ConstInput(0, "size").GetInt(0);
  if (size < 0) n.Invalid("negative window size");
  bool periodic = n.AttrInt("periodic", 1) != 0;
  DType dt = DType::kFloat32;
  if (n.HasAttr("output_datatype") &&
      !DTypeFromOnnx(static_cast<int>(n.AttrInt("output_datatype")), &dt))
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
  r["ConvInteger"] = ConvInteger;
  r["MatMulInteger"] = MatMulInteger;
  r["QLinearConv"] = QLinearConv;
  r["QLinearMatMul"] = QLinearMatMul;
  r["HannWindow"] = Window<0>;
  r["HammingWindow"] = Window<1>;
  r["BlackmanWindow"] = Window<2>;
}

}  // namespace texel::onnx_frontend
