// Elementwise ops as OpenCL C expressions, and chains of them (fusion): the body of a fused
// pointwise kernel, or the epilogue an anchor kernel (conv, pooling, reduction, matmul) applies
// to each result before storing it.
#include "codegen/opencl/elementwise_chain.h"

#include <cctype>
#include <map>
#include <optional>
#include <string_view>

#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "ir/host_eval.h"
#include "ir/index_map.h"

namespace texel::codegen {
namespace {

using ir::OpKind;

// One rule per line: the expression of an elementwise op over x0, x1, x2, for float and for
// integer/bool inputs (an empty string: no kernel for that type), and for f32 vectors of results
// (VectorChain; empty: no vector form, "=": the float expression holds for vectors too; the
// float rules' ternaries become select() with the same NaN results, a NaN comparing false).
// Upper-case names are the node's attributes (AttrNames); TV is the vector type.
struct ExprRule {
  OpKind op;
  const char* float_expr;
  const char* int_expr;
  const char* vector_expr = "";
};

constexpr ExprRule kExprRules[] = {
    {OpKind::kRelu, "(x0 < 0 ? 0.0f : x0)", "(x0 < 0 ? 0 : x0)", "select(x0, (TV)(0.0f), x0 < 0)"},
    {OpKind::kSigmoid, "(1.0f / (1.0f + exp(-x0)))", "", "="},
    {OpKind::kTanh, "tanh(x0)", "", "="},
    {OpKind::kExp, "exp(x0)", "", "="},
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
    {OpKind::kClip, "(x0 < MINV ? MINV : (x0 > MAXV ? MAXV : x0))", "",
     "select(select(x0, (TV)(MAXV), x0 > MAXV), (TV)(MINV), x0 < MINV)"},
    {OpKind::kLeakyRelu, "(x0 >= 0 ? x0 : x0 * ALPHA)", ""},
    {OpKind::kElu, "(x0 >= 0 ? x0 : ALPHA * expm1(x0))", ""},
    {OpKind::kHardSigmoid, "clamp(ALPHA * x0 + BETA, (T_IN)0, (T_IN)1)", "", "="},
    {OpKind::kCopy, "x0", "x0", "="},
    {OpKind::kAdd, "(x0 + x1)", "(x0 + x1)", "="},
    {OpKind::kSub, "(x0 - x1)", "(x0 - x1)", "="},
    {OpKind::kMul, "(x0 * x1)", "(x0 * x1)", "="},
    {OpKind::kDiv, "(x0 / x1)", "(x0 / x1)", "="},
    {OpKind::kPow, "pow(x0, x1)", ""},  // integers: a loop (ElementwiseBody)
    {OpKind::kBitShift, "", "(LEFT ? x0 << x1 : x0 >> x1)"},
    {OpKind::kMax, "(isnan(x0) || x0 > x1 ? x0 : x1)", "(x0 > x1 ? x0 : x1)"},  // NaN wins
    {OpKind::kMin, "(isnan(x0) || x0 < x1 ? x0 : x1)", "(x0 < x1 ? x0 : x1)"},
    {OpKind::kEqual, "(x0 == x1)", "(x0 == x1)"},
    {OpKind::kLess, "(x0 < x1)", "(x0 < x1)"},
    {OpKind::kGreater, "(x0 > x1)", "(x0 > x1)"},
    {OpKind::kAnd, "", "(x0 && x1)"},
    {OpKind::kOr, "", "(x0 || x1)"},
    // fmod=0 takes the divisor's sign (Python %); fmod=1 the dividend's (C fmod).
    {OpKind::kMod,
     "(FMOD ? fmod(x0, x1) : (fmod(x0, x1) != 0 && ((fmod(x0, x1) < 0) != (x1 < 0)) "
     "? fmod(x0, x1) + x1 : fmod(x0, x1)))",
     "(FMOD ? x0 % x1 : ((x0 % x1) != 0 && (((x0 % x1) < 0) != (x1 < 0)) ? (x0 % x1) + x1 "
     ": (x0 % x1)))"},
    {OpKind::kWhere, "", "(x0 ? x1 : x2)"},  // typed by the condition
};

// The rule of op, or nullptr.
const ExprRule* FindRule(OpKind op) {
  for (const auto& r : kExprRules)
    if (r.op == op) return &r;
  return nullptr;
}

// The substitutions of a rule's upper-case names by node n's attributes.
std::map<std::string, std::string> AttrNames(const ir::Node& n) {
  std::map<std::string, std::string> names;
  const ir::Attrs& a = n.attrs;
  if (a.Has("alpha")) names["ALPHA"] = FloatLiteral(a.Float("alpha"));
  if (a.Has("beta")) names["BETA"] = FloatLiteral(a.Float("beta"));
  if (a.Has("min")) names["MINV"] = FloatLiteral(a.Float("min"));
  if (a.Has("max")) names["MAXV"] = FloatLiteral(a.Float("max"));
  if (a.Has("detect_positive")) names["POS"] = std::to_string(a.Int("detect_positive"));
  if (a.Has("detect_negative")) names["NEG"] = std::to_string(a.Int("detect_negative"));
  if (a.Has("left")) names["LEFT"] = std::to_string(a.Int("left"));
  if (a.Has("fmod")) names["FMOD"] = std::to_string(a.Int("fmod"));
  return names;
}

// Replaces whole identifiers of `text` found in `names`.
std::string Substitute(const std::string& text, const std::map<std::string, std::string>& names) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_') {
      size_t j = i;
      while (j < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
        ++j;
      std::string id = text.substr(i, j - i);
      auto it = names.find(id);
      out += it != names.end() ? it->second : id;
      i = j;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Where input k of node n is read at the output coordinates c0.. of a tensor of shape `out`:
// broadcast, through the view the views pass stored (in<k>_*) when there is one.
std::string LoadOffset(const ir::Node& n, size_t k, const Shape& out) {
  ir::IndexMap m = ir::IndexMap::Load(n.attrs, fmt::format("in{}", k), n.inputs[k]->type.shape);
  std::vector<int64_t> st(out.size(), 0);
  for (size_t e = 0; e < m.shape.size(); ++e) {
    size_t d = out.size() - m.shape.size() + e;  // right-aligned, as broadcasting
    if (m.shape[e] != 1) st[d] = m.strides[e];
  }
  // An operand laid out as the output (a residual) is read at i itself: the coordinates' divisions
  // then go unused, and the compiler drops them.
  std::vector<int64_t> dense = Strides(out);
  bool same = m.offset == 0;
  for (size_t d = 0; d < out.size(); ++d) same = same && (out[d] == 1 || st[d] == dense[d]);
  std::string off = same ? "i" : OffsetExpr(st);
  if (m.offset != 0) off = fmt::format("({} + {})", off, m.offset);
  return off;
}

// How input k of node n is read at the output coordinates c0.. (LoadOffset) from parameter param.
std::string LoadExpr(const ir::Node& n, size_t k, const Shape& out, const std::string& param) {
  std::string off = LoadOffset(n, k, out);
  if (n.inputs[k]->type.dtype == DType::kFloat16)
    return fmt::format("vload_half({}, {})", off, param);
  return fmt::format("{}[{}]", param, off);
}

// How input k of node n is read as vw consecutive elements along the innermost axis of the
// output (shape out) from coordinates c0.. on: one vector load where it runs along that axis,
// its element broadcast where it is constant along it; nullopt otherwise (f16 storage, other
// strides).
std::optional<std::string> VectorLoadExpr(const ir::Node& n, size_t k, const Shape& out,
                                          const std::string& param, int vw) {
  const ir::Value* v = n.inputs[k];
  if (v->type.dtype != DType::kFloat32 || out.empty()) return std::nullopt;
  ir::IndexMap m = ir::IndexMap::Load(n.attrs, fmt::format("in{}", k), v->type.shape);
  int64_t along = 0;  // the operand's stride along the output's innermost axis
  if (!m.shape.empty() && m.shape.back() != 1) along = m.strides.back();
  if (along != 0 && along != 1) return std::nullopt;
  std::string off = LoadOffset(n, k, out);
  if (along == 0) return fmt::format("((float{})({}[{}]))", vw, param, off);
  return fmt::format("vload{}(0, {} + {})", vw, param, off);
}

}  // namespace

std::string ValueTypeName(DType t) {
  return t == DType::kFloat16 ? "float" : std::string(CLTypeName(t));
}
std::string StorageTypeName(DType t) { return std::string(CLTypeName(t)); }

namespace {

// The expression template of elementwise node n (not a Cast) for its operand type.
const char* ExprTemplate(const ir::Node& n) {
  const ExprRule* rule = FindRule(n.op);
  TEXEL_CHECK(rule != nullptr, "no expression for {}", OpName(n.op));
  DType t = n.op == OpKind::kWhere ? DType::kBool : n.inputs[0]->type.dtype;
  const char* expr = IsFloat(t) ? rule->float_expr : rule->int_expr;
  if (!*expr)
    Fail(ErrorCode::kUnsupported, "{} on {} is not supported on the device", OpName(n.op),
         DTypeName(n.inputs[0]->type.dtype));
  return expr;
}

}  // namespace

void CheckElementwise(const ir::Node& n) {
  // Casts have no template; integer Pow alone is a loop (GenerateElementwise), never fused.
  bool int_pow = n.op == OpKind::kPow && !IsFloat(n.inputs[0]->type.dtype);
  if (n.op != OpKind::kCast && !int_pow) ExprTemplate(n);
}

std::string ElementwiseExpr(const ir::Node& n, const std::vector<std::string>& x) {
  const ir::Value* out = n.outputs[0];
  if (n.op == OpKind::kCast) {
    // OpenCL's C-style conversion truncates float -> int toward zero, as ONNX Cast.
    if (out->type.dtype == DType::kBool) return fmt::format("(uchar)({} != 0)", x[0]);
    return fmt::format("(({}){})", ValueTypeName(out->type.dtype), x[0]);
  }
  const char* expr = ExprTemplate(n);
  // A division a Round reads (passes/precision.cpp, MarkExactDivisions): exact 1 divides as
  // written, in a program built with -cl-fp32-correctly-rounded-divide-sqrt; exact 2 through
  // double (cl_khr_fp64's division is exact to 0 ulp, and rounding its quotient to float is
  // correctly rounded). The operands are scaled by 2 (exactly) so that they are no longer
  // widened floats: LLVM folds (float)((double)a / (double)b) into a float division, which the
  // device then does inexactly (NVIDIA's OpenCL: 1 ulp off on a third of the elements).
  if (n.op == OpKind::kDiv && n.attrs.Int("exact", 0) == 2)
    expr = "(float)((double)x0 * 2.0 / ((double)x1 * 2.0))";
  std::map<std::string, std::string> names = AttrNames(n);
  names["T_IN"] = ValueTypeName(n.inputs[0]->type.dtype);
  for (size_t k = 0; k < x.size(); ++k) names[fmt::format("x{}", k)] = x[k];
  return fmt::format("(({}){})", ValueTypeName(out->type.dtype), Substitute(expr, names));
}

ChainCode ElementwiseChain(const std::vector<const ir::Node*>& ops, const ir::Value* seed_value,
                           const std::string& seed_var,
                           const std::function<std::string(const ir::Value*)>& param,
                           const std::function<std::string(const ir::Value*)>& direct) {
  const Shape& shape = ops.back()->outputs[0]->type.shape;
  ChainCode c;
  // Values computed so far (the seed, then each op's result): an op may read any of them.
  std::map<const ir::Value*, std::string> var_of;
  if (seed_value) var_of[seed_value] = seed_var;
  for (size_t k = 0; k < ops.size(); ++k) {
    const ir::Node& n = *ops[k];
    std::vector<std::string> x;
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const ir::Value* in = n.inputs[k];
      bool view = n.attrs.Has(fmt::format("in{}_shape", k));
      auto it = var_of.find(in);
      TEXEL_CHECK(!view || it == var_of.end(), "a fused value read through a view");
      std::string d = it == var_of.end() && direct && !view ? direct(in) : "";
      x.push_back(it != var_of.end() ? it->second
                  : !d.empty()       ? d
                                     : LoadExpr(n, k, shape, param(in)));
    }
    std::string var = fmt::format("y{}", k);
    c.code += fmt::format("const {} {} = {}; ", ValueTypeName(n.outputs[0]->type.dtype), var,
                          ElementwiseExpr(n, x));
    var_of[n.outputs[0]] = var;
    c.result = var;
  }
  return c;
}

namespace {

// ElementwiseChain on vectors of vw results along the output's innermost axis, or nullopt where
// an op has no vector form or an operand no vector read (VectorLoadExpr).
std::optional<ChainCode> VectorChain(const std::vector<const ir::Node*>& ops,
                                     const ir::Value* seed_value, const std::string& seed_var,
                                     const std::function<std::string(const ir::Value*)>& param,
                                     int vw) {
  const Shape& shape = ops.back()->outputs[0]->type.shape;
  ChainCode c;
  std::map<const ir::Value*, std::string> var_of = {{seed_value, seed_var}};
  for (size_t k = 0; k < ops.size(); ++k) {
    const ir::Node& n = *ops[k];
    const ExprRule* rule = FindRule(n.op);
    if (!rule || !*rule->vector_expr || n.outputs[0]->type.dtype != DType::kFloat32 ||
        n.attrs.Int("exact", 0) == 2)
      return std::nullopt;
    std::map<std::string, std::string> names = AttrNames(n);
    names["TV"] = names["T_IN"] = fmt::format("float{}", vw);  // HardSigmoid's clamp bounds
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      auto it = var_of.find(n.inputs[k]);
      std::optional<std::string> x =
          it != var_of.end() ? it->second : VectorLoadExpr(n, k, shape, param(n.inputs[k]), vw);
      if (!x || n.inputs[k]->type.dtype != DType::kFloat32) return std::nullopt;
      names[fmt::format("x{}", k)] = *x;
    }
    const char* expr =
        std::string_view(rule->vector_expr) == "=" ? rule->float_expr : rule->vector_expr;
    std::string var = fmt::format("y{}", k);
    c.code += fmt::format("const float{} {} = {}; ", vw, var, Substitute(expr, names));
    var_of[n.outputs[0]] = var;
    c.result = var;
  }
  return c;
}

}  // namespace

DType ChainResultType(const ir::Value* anchor_out, const std::vector<const ir::Node*>& ops) {
  return ops.empty() ? anchor_out->type.dtype : ops.back()->outputs[0]->type.dtype;
}

void ApplyEpilogue(KernelSource& src, const std::string& kernel_name, const ir::Value* anchor_out,
                   const std::vector<const ir::Node*>& ops, KernelSpec& spec,
                   bool stores_any_float) {
  DType out = ChainResultType(anchor_out, ops);
  TEXEL_CHECK(out == anchor_out->type.dtype || stores_any_float,
              "an epilogue of this kernel must keep the type");
  src.Define("EPILOGUE_T", StorageTypeName(out));
  src.Define("EPILOGUE_STORE(p, i, v)",
             out == DType::kFloat16 ? "vstore_half_rte((v), (i), (p))" : "(p)[i] = (v)");
  ApplyChain(src, kernel_name, anchor_out, ops, spec, "EPILOGUE", "e");
}

void ApplyVectorEpilogue(KernelSource& src, const std::string& kernel_name,
                         const ir::Value* anchor_out, const std::vector<const ir::Node*>& ops,
                         int vw) {
  if (ops.empty()) {
    src.Define("VEPILOGUE(v, i)", "(v)");
    return;
  }
  // The parameters ApplyChain gives EPILOGUE: e<k> in first-use order.
  std::vector<const ir::Value*> ext = ir::ExternalInputs(ops);
  std::erase(ext, anchor_out);
  auto param = [&](const ir::Value* v) {
    return fmt::format("e{}", std::find(ext.begin(), ext.end(), v) - ext.begin());
  };
  std::optional<ChainCode> c = VectorChain(ops, anchor_out, "v", param, vw);
  if (!c || anchor_out->type.dtype != DType::kFloat32) return;
  std::string params, args;
  for (size_t k = 0; k < ext.size(); ++k) {
    params += fmt::format(", __global const float* e{}", k);
    args += fmt::format(", e{}", k);
  }
  std::vector<const ir::Value*> operands = ext;
  operands.push_back(ops.back()->outputs[0]);
  std::string fn = kernel_name + "_vchain";
  src.Prelude(fmt::format(
      "float{} {}(float{} v, long i{}) {{ {} {} return {}; }}\n", vw, fn, vw, params,
      CoordsCode(ops.back()->outputs[0]->type.shape, WideIndex(operands)), c->code, c->result));
  src.Define("VEPILOGUE(v, i)", fmt::format("{}(v, i{})", fn, args));
}

void ApplyChain(KernelSource& src, const std::string& kernel_name, const ir::Value* anchor_out,
                const std::vector<const ir::Node*>& ops, KernelSpec& spec, const std::string& macro,
                const std::string& prefix) {
  if (ops.empty()) {
    src.Define(macro + "(v, i)", "(v)").Define(macro + "_PARAMS", "");
    return;
  }
  const ir::Value* result = ops.back()->outputs[0];
  // External operands, each one parameter e<k> in first-use order.
  std::vector<const ir::Value*> ext = ir::ExternalInputs(ops);
  std::erase(ext, anchor_out);
  auto param = [&](const ir::Value* v) {
    return fmt::format("{}{}", prefix, std::find(ext.begin(), ext.end(), v) - ext.begin());
  };
  ChainCode c = ElementwiseChain(ops, anchor_out, "v", param);
  std::string params, args;
  for (size_t k = 0; k < ext.size(); ++k) {
    params +=
        fmt::format(", __global const {}* {}{}", StorageTypeName(ext[k]->type.dtype), prefix, k);
    args += fmt::format(", {}{}", prefix, k);
    spec.args.push_back(ext[k]->id);
  }
  std::string fn = kernel_name + "_" + prefix + "chain";
  std::vector<const ir::Value*> operands = ext;
  operands.push_back(result);
  src.Prelude(fmt::format("{} {}({} v, long i{}) {{ {} {} return {}; }}\n",
                          ValueTypeName(result->type.dtype), fn,
                          ValueTypeName(anchor_out->type.dtype), params,
                          CoordsCode(result->type.shape, WideIndex(operands)), c.code, c.result));
  src.Define(macro + "(v, i)", fmt::format("{}(v, i{})", fn, args));
  src.Define(macro + "_PARAMS", params);
  // The kernel now writes the chain's result instead of the anchor's.
  std::replace(spec.args.begin(), spec.args.end(), anchor_out->id, result->id);
}

ChainFunction ChainAsFunction(const std::string& name, const ir::Value* seed,
                              const std::vector<const ir::Node*>& ops,
                              const std::function<bool(const ir::Value*)>& by_lane) {
  ChainFunction f;
  for (const ir::Node* n : ops)
    TEXEL_CHECK(ValueTypeName(n->outputs[0]->type.dtype) == "float",
                "a chain function computes float (f32 or f16 values)");
  for (const ir::Value* in : ir::ExternalInputs(ops))
    if (in != seed) (by_lane(in) ? f.lane_operands : f.buffer_operands).push_back(in);
  std::vector<const ir::Value*> operands = ir::ExternalInputs(ops);
  if (!ops.empty()) operands.push_back(ops.back()->outputs[0]);
  auto index_in = [](const auto& list, const ir::Value* v) {
    return std::find(list.begin(), list.end(), v) - list.begin();
  };
  std::string params;
  for (size_t k = 0; k < f.lane_operands.size(); ++k) params += fmt::format(", float l{}", k);
  for (size_t k = 0; k < f.buffer_operands.size(); ++k)
    params += fmt::format(", __global const {}* b{}",
                          StorageTypeName(f.buffer_operands[k]->type.dtype), k);
  if (ops.empty()) {
    f.code = fmt::format("float {}(float v, long i) {{ return v; }}\n", name);
    return f;
  }
  ChainCode c = ElementwiseChain(
      ops, seed, "v",
      [&](const ir::Value* v) { return fmt::format("b{}", index_in(f.buffer_operands, v)); },
      [&](const ir::Value* v) {
        auto k = index_in(f.lane_operands, v);
        return k < static_cast<long>(f.lane_operands.size()) ? fmt::format("l{}", k) : "";
      });
  f.code = fmt::format("float {}(float v, long i{}) {{ {} {} return {}; }}\n", name, params,
                       CoordsCode(ops.back()->outputs[0]->type.shape, WideIndex(operands)), c.code,
                       c.result);
  return f;
}

}  // namespace texel::codegen
