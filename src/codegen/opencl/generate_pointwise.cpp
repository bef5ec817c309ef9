// Pointwise kernels (kernels/pointwise.cl): elementwise ops as expressions over broadcast
// loads x0, x1, x2, and data movement as a source-index computation.
#include <algorithm>

#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "ir/host_eval.h"

namespace texel::codegen {
namespace {

using ir::OpKind;

// One rule per line: the OpenCL expression of an elementwise op over x0, x1, x2 (of the input
// type T), for float and for integer/bool inputs. An empty string: no kernel for that type.
struct ExprRule {
  OpKind op;
  const char* float_expr;
  const char* int_expr;
};

constexpr ExprRule kExprRules[] = {
    {OpKind::kRelu, "(x0 < 0 ? 0.0f : x0)", "(x0 < 0 ? 0 : x0)"},
    {OpKind::kSigmoid, "(1.0f / (1.0f + exp(-x0)))", ""},
    {OpKind::kTanh, "tanh(x0)", ""},
    {OpKind::kExp, "exp(x0)", ""},
    {OpKind::kLog, "log(x0)", ""},
    {OpKind::kSqrt, "sqrt(x0)", ""},
    {OpKind::kNeg, "(-x0)", "(-x0)"},
    {OpKind::kAbs, "fabs(x0)", "(x0 < 0 ? -x0 : x0)"},
    {OpKind::kReciprocal, "(1.0f / x0)", ""},
    {OpKind::kErf, "erf(x0)", ""},
    {OpKind::kSoftplus, "(x0 > 20.0f ? x0 : log1p(exp(x0)))", ""},  // exp overflows past ~88
    {OpKind::kFloor, "floor(x0)", ""},
    {OpKind::kCeil, "ceil(x0)", ""},
    {OpKind::kRound, "rint(x0)", ""},  // half to even, as ONNX Round
    {OpKind::kSign, "(x0 > 0 ? 1.0f : (x0 < 0 ? -1.0f : 0.0f))", "((x0 > 0) - (x0 < 0))"},
    {OpKind::kSin, "sin(x0)", ""},
    {OpKind::kCos, "cos(x0)", ""},
    {OpKind::kNot, "", "(!x0)"},
    {OpKind::kTan, "tan(x0)", ""},
    {OpKind::kAsin, "asin(x0)", ""},
    {OpKind::kAcos, "acos(x0)", ""},
    {OpKind::kAtan, "atan(x0)", ""},
    {OpKind::kSinh, "sinh(x0)", ""},
    {OpKind::kCosh, "cosh(x0)", ""},
    {OpKind::kAsinh, "asinh(x0)", ""},
    {OpKind::kAcosh, "acosh(x0)", ""},
    {OpKind::kAtanh, "atanh(x0)", ""},
    {OpKind::kIsNaN, "isnan(x0)", ""},
    {OpKind::kIsInf, "(isinf(x0) && ((x0 > 0 && POS) || (x0 < 0 && NEG)))", ""},
    {OpKind::kClip, "(x0 < MINV ? MINV : (x0 > MAXV ? MAXV : x0))", ""},
    {OpKind::kLeakyRelu, "(x0 >= 0 ? x0 : x0 * ALPHA)", ""},
    {OpKind::kElu, "(x0 >= 0 ? x0 : ALPHA * expm1(x0))", ""},
    {OpKind::kHardSigmoid, "clamp(ALPHA * x0 + BETA, (T_IN)0, (T_IN)1)", ""},
    {OpKind::kCopy, "x0", "x0"},
    {OpKind::kAdd, "(x0 + x1)", "(x0 + x1)"},
    {OpKind::kSub, "(x0 - x1)", "(x0 - x1)"},
    {OpKind::kMul, "(x0 * x1)", "(x0 * x1)"},
    {OpKind::kDiv, "(x0 / x1)", "(x0 / x1)"},
    {OpKind::kPow, "pow(x0, x1)", "IPOW"},  // integers: a loop, see below
    {OpKind::kBitShift, "", "(LEFT ? x0 << x1 : x0 >> x1)"},
    {OpKind::kMax, "(isnan(x0) || x0 > x1 ? x0 : x1)", "(x0 > x1 ? x0 : x1)"},  // NaN wins
    {OpKind::kMin, "(isnan(x0) || x0 < x1 ? x0 : x1)", "(x0 < x1 ? x0 : x1)"},
    {OpKind::kEqual, "(x0 == x1)", "(x0 == x1)"},
    {OpKind::kLess, "(x0 < x1)", "(x0 < x1)"},
    {OpKind::kGreater, "(x0 > x1)", "(x0 > x1)"},
    {OpKind::kAnd, "", "(x0 && x1)"},
    {OpKind::kOr, "", "(x0 || x1)"},
    // Mod with fmod=0 takes the divisor's sign (Python %); fmod=1 the dividend's (C fmod).
    {OpKind::kMod, "MOD_F(x0, x1)", "MOD_I(x0, x1)"},
    {OpKind::kWhere, "", "(x0 ? x1 : x2)"},  // typed by the condition; see below
};

std::string CL(DType t) { return std::string(CLTypeName(t)); }

// f16 tensors hold half bits: elementwise ops load them with vload_half into float and store
// with vstore_half_rte (no cl_khr_fp16 needed); data movement copies the bits as ushort.
std::string ValueType(DType t, bool movement) {
  return t != DType::kFloat16 ? CL(t) : movement ? "ushort" : "float";
}
std::string PointerType(DType t, bool movement) {
  return t != DType::kFloat16 ? CL(t) : movement ? "ushort" : "half";
}

std::string ElementwiseBody(const ir::Node& n, KernelSource& src) {
  const ir::Value* out = n.outputs[0];
  std::string body;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ir::Value* in = n.inputs[k];
    auto st = ir::BroadcastStrides(in->type.shape, out->type.shape);
    if (in->type.dtype == DType::kFloat16)
      body += fmt::format("const float x{} = vload_half({}, in{}); ", k, OffsetExpr(st), k);
    else
      body += fmt::format("const {} x{} = in{}[{}]; ", CL(in->type.dtype), k, k, OffsetExpr(st));
  }
  if (n.op == OpKind::kCast) {
    DType from = n.inputs[0]->type.dtype, to = out->type.dtype;
    if (to == DType::kBool) return body + "v = (uchar)(x0 != 0);";
    // OpenCL's C-style conversion truncates float -> int toward zero, as ONNX Cast.
    (void)from;
    return body + fmt::format("v = ({})x0;", ValueType(to, false));
  }
  const ExprRule* rule = nullptr;
  for (const auto& r : kExprRules)
    if (r.op == n.op) rule = &r;
  TEXEL_CHECK(rule != nullptr, "no expression for {}", OpName(n.op));
  DType t = n.op == OpKind::kWhere ? DType::kBool : n.inputs[0]->type.dtype;
  src.Define("T_IN", CL(n.inputs[0]->type.dtype));
  const char* expr = IsFloat(t) ? rule->float_expr : rule->int_expr;
  if (!*expr)
    Fail(ErrorCode::kUnsupported, "{} on {} is not supported on the device", OpName(n.op),
         DTypeName(n.inputs[0]->type.dtype));
  if (n.op == OpKind::kClip) {
    src.Define("MINV", FloatLiteral(n.attrs.Float("min")));
    src.Define("MAXV", FloatLiteral(n.attrs.Float("max")));
  }
  if (n.op == OpKind::kBitShift) src.Define("LEFT", n.attrs.Int("left"));
  if (n.op == OpKind::kPow && !IsFloat(t))  // exact integer power by repeated multiplication
    return body + fmt::format("long r = 1; for (long k = 0; k < (long)x1; ++k) r *= x0; v = ({})r;",
                              CL(out->type.dtype));
  if (n.op == OpKind::kIsInf) {
    src.Define("POS", n.attrs.Int("detect_positive"));
    src.Define("NEG", n.attrs.Int("detect_negative"));
  }
  if (n.op == OpKind::kMod) {
    bool c_mod = n.attrs.Int("fmod") != 0;
    src.Define("MOD_F(a, b)", c_mod ? "fmod(a, b)"
                                    : "(fmod(a, b) != 0 && ((fmod(a, b) < 0) != (b < 0)) ? "
                                      "fmod(a, b) + b : fmod(a, b))");
    src.Define("MOD_I(a, b)", c_mod ? "(a % b)"
                                    : "((a % b) != 0 && (((a % b) < 0) != (b < 0)) ? "
                                      "(a % b) + b : (a % b))");
  }
  if (n.attrs.Has("alpha")) src.Define("ALPHA", FloatLiteral(n.attrs.Float("alpha")));
  if (n.attrs.Has("beta")) src.Define("BETA", FloatLiteral(n.attrs.Float("beta")));
  return body + fmt::format("v = ({}){};", ValueType(out->type.dtype, false), expr);
}

// Data movement: computes the source offset `s` of output element i in input 0.
std::string MovementBody(const ir::Node& n) {
  const ir::Value* x = n.inputs[0];
  const Shape& os = n.outputs[0]->type.shape;
  std::vector<int64_t> xst = Strides(x->type.shape);
  switch (n.op) {
    case OpKind::kReshape: return "v = in0[i];";
    case OpKind::kExpand:
      return fmt::format("v = in0[{}];", OffsetExpr(ir::BroadcastStrides(x->type.shape, os)));
    case OpKind::kTranspose: {
      const auto& perm = n.attrs.Ints("perm");
      std::vector<int64_t> st(os.size());
      for (size_t d = 0; d < os.size(); ++d) st[d] = xst[perm[d]];
      return fmt::format("v = in0[{}];", OffsetExpr(st));
    }
    case OpKind::kSlice: {
      const auto& starts = n.attrs.Ints("starts");
      const auto& steps = n.attrs.Ints("steps");
      int64_t base = 0;
      std::vector<int64_t> st(os.size());
      for (size_t d = 0; d < os.size(); ++d) {
        base += starts[d] * xst[d];
        st[d] = steps[d] * xst[d];
      }
      return fmt::format("v = in0[{} + {}];", base, OffsetExpr(st));
    }
    case OpKind::kGather: {
      int64_t axis = n.attrs.Int("axis"), dim = x->type.shape[axis];
      size_t r = n.inputs[1]->type.shape.size();
      std::vector<int64_t> ist = Strides(n.inputs[1]->type.shape);
      std::vector<int64_t> idx_st(os.size(), 0), x_st(os.size(), 0);
      for (size_t k = 0; k < r; ++k) idx_st[axis + k] = ist[k];
      for (int64_t d = 0; d < axis; ++d) x_st[d] = xst[d];
      for (size_t d = axis + 1; d < x->type.shape.size(); ++d) x_st[d + r - 1] = xst[d];
      // Negative indices count from the end; out-of-range ones are clamped (never read out of
      // bounds; the importer rejects constant out-of-range indices).
      return fmt::format(
          "long g = (long)in1[{}]; if (g < 0) g += {}; g = clamp(g, 0L, {}L); "
          "v = in0[{} + g * {}];",
          OffsetExpr(idx_st), dim, dim - 1, OffsetExpr(x_st), xst[axis]);
    }
    case OpKind::kGatherElements: {
      int64_t axis = n.attrs.Int("axis"), dim = x->type.shape[axis];
      std::vector<int64_t> st = xst;
      st[axis] = 0;
      return fmt::format(
          "long g = (long)in1[i]; if (g < 0) g += {}; g = clamp(g, 0L, {}L); "
          "v = in0[{} + g * {}];",
          dim, dim - 1, OffsetExpr(st), xst[axis]);
    }
    case OpKind::kResize: return ResizeBody(n);
    case OpKind::kGridSample: return GridSampleBody(n);
    case OpKind::kRoiAlign: return RoiAlignBody(n);
    case OpKind::kScatterElements:
    case OpKind::kScatterND: return ScatterBody(n);
    case OpKind::kGatherND: {
      // Output coords: [batch..., index rows..., trailing data dims...].
      int64_t b = n.attrs.Int("batch_dims");
      const Shape& is = n.inputs[1]->type.shape;
      int64_t r = is.back(), rows_rank = static_cast<int64_t>(is.size()) - 1;
      std::vector<int64_t> ist = Strides(is);
      std::vector<int64_t> idx_st(os.size(), 0), x_st(os.size(), 0);
      for (int64_t d = 0; d < rows_rank; ++d) idx_st[d] = ist[d];
      for (int64_t d = 0; d < b; ++d) x_st[d] = xst[d];
      for (size_t d = b + r; d < x->type.shape.size(); ++d) x_st[rows_rank + d - b - r] = xst[d];
      std::string s =
          fmt::format("long s = {}; const long row = {};", OffsetExpr(x_st), OffsetExpr(idx_st));
      for (int64_t j = 0; j < r; ++j) {
        int64_t dim = x->type.shape[b + j];
        s += fmt::format(
            " {{ long g = (long)in1[row + {}]; if (g < 0) g += {}; "
            "s += clamp(g, 0L, {}L) * {}; }}",
            j, dim, dim - 1, xst[b + j]);
      }
      return s + " v = in0[s];";
    }
    case OpKind::kTopKIndices: {
      // The element of rank c_axis: rank(e) = #{better elements} + #{equal ones before e}.
      int64_t axis = n.attrs.Int("axis"), len = x->type.shape[axis];
      std::vector<int64_t> st(os.size(), 0);
      for (size_t d = 0; d < os.size(); ++d) st[d] = static_cast<int>(d) == axis ? 0 : xst[d];
      std::string better = n.attrs.Int("largest") ? ">" : "<";
      return fmt::format(
          "const long base = {}; v = 0; "
          "for (long e = 0; e < {}; ++e) {{ const {} xe = in0[base + e * {}]; long rank = 0; "
          "for (long f = 0; f < {}; ++f) {{ const {} xf = in0[base + f * {}]; "
          "rank += (xf {} xe) || (xf == xe && f < e); }} if (rank == c{}) {{ v = e; break; }} }}",
          OffsetExpr(st), len, CL(x->type.dtype), xst[axis], len, CL(x->type.dtype), xst[axis],
          better, axis);
    }
    case OpKind::kCumSum: {
      int64_t axis = n.attrs.Int("axis"), dim = x->type.shape[axis];
      bool excl = n.attrs.Int("exclusive") != 0, rev = n.attrs.Int("reverse") != 0;
      std::vector<int64_t> st = xst;
      st[axis] = 0;
      std::string lo = rev ? fmt::format("c{}{}", axis, excl ? " + 1" : "") : "0";
      std::string hi = rev ? std::to_string(dim) : fmt::format("c{}{}", axis, excl ? "" : " + 1");
      return fmt::format("v = 0; for (long k = {}; k < {}; ++k) v += in0[{} + k * {}];", lo, hi,
                         OffsetExpr(st), xst[axis]);
    }
    case OpKind::kPad: {
      const auto& pads = n.attrs.Ints("pads");
      std::string mode = n.attrs.Str("mode");
      size_t rank = os.size();
      std::string s = "long s = 0; int inside = 1;";
      for (size_t d = 0; d < rank; ++d) {
        int64_t len = x->type.shape[d];
        s += fmt::format(" {{ long p = c{} - {};", d, pads[d]);
        if (mode == "constant")
          s += fmt::format(" if (p < 0 || p >= {}) inside = 0;", len);
        else if (mode == "edge")
          s += fmt::format(" p = clamp(p, 0L, {}L);", len - 1);
        else  // reflect (pads < len, checked by the importer)
          s += fmt::format(" if (p < 0) p = -p; if (p >= {}) p = 2 * {} - p;", len, len - 1);
        s += fmt::format(" s += p * {}; }}", xst[d]);
      }
      double pad = n.attrs.Float("value");
      std::string value = x->type.dtype == DType::kFloat16
                              ? std::to_string(FloatToHalf(static_cast<float>(pad)))
                          : IsFloat(x->type.dtype) ? FloatLiteral(pad)
                                                   : std::to_string(static_cast<int64_t>(pad));
      return s +
             fmt::format(" v = inside ? in0[s] : ({}){};", ValueType(x->type.dtype, true), value);
    }
    case OpKind::kConcat: {
      int64_t axis = n.attrs.Int("axis"), start = 0;
      std::string s;
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Shape& ks = n.inputs[k]->type.shape;
        std::vector<int64_t> kst = Strides(ks);
        int64_t end = start + ks[axis];
        bool last = k + 1 == n.inputs.size();
        // Coordinates along the axis are shifted by the input's start.
        std::string off = OffsetExpr(kst);
        if (start != 0) off = fmt::format("({} - {})", off, start * kst[axis]);
        s += last ? fmt::format("{{ v = in{}[{}]; }}", k, off)
                  : fmt::format("if (c{} < {}) {{ v = in{}[{}]; }} else ", axis, end, k, off);
        start = end;
      }
      return s;
    }
    default: break;
  }
  Fail(ErrorCode::kInternal, "no movement kernel for {}", OpName(n.op));
}

}  // namespace

KernelSpec GeneratePointwise(const ir::Node& n, const std::string& kernel_name) {
  const ir::Value* out = n.outputs[0];
  KernelSource src(kernel_name, "pointwise");
  std::string params;
  KernelSpec spec;
  bool movement = n.info().cls == ir::OpClass::kMovement;
  bool computes = n.op == OpKind::kResize || n.op == OpKind::kCumSum ||
                  n.op == OpKind::kTopKIndices || n.op == OpKind::kGridSample ||
                  n.op == OpKind::kRoiAlign;
  for (const ir::Value* v : n.inputs)
    if (v->type.dtype == DType::kFloat16 && movement && computes)
      Fail(ErrorCode::kUnsupported, "{} on f16 is not supported on the device", OpName(n.op));
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    params +=
        fmt::format("__global const {}* in{}, ", PointerType(n.inputs[k]->type.dtype, movement), k);
    spec.args.push_back(n.inputs[k]->id);
  }
  params += fmt::format("__global {}* out", PointerType(out->type.dtype, movement));
  spec.args.push_back(out->id);
  int64_t count = NumElements(out->type.shape);
  std::string body = movement ? MovementBody(n) : ElementwiseBody(n, src);
  bool store_half = out->type.dtype == DType::kFloat16 && !movement;
  src.Define("PARAMS", params)
      .Define("T_OUT", ValueType(out->type.dtype, movement))
      .Define("STORE(i, v)", store_half ? "vstore_half_rte(v, i, out)" : "out[i] = v")
      .Define("N", fmt::format("{}L", count))
      .Define("COORDS", CoordsCode(out->type.shape))
      .Define("BODY", body);
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.global = {RoundUp(static_cast<size_t>(std::max<int64_t>(count, 1)), 64)};
  spec.local = {64};
  spec.flops = movement ? 0 : static_cast<double>(count);
  return spec;
}

}  // namespace texel::codegen
