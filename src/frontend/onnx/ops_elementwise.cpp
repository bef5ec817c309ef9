// Importers for elementwise ONNX ops: one function per op, registered at the bottom.
#include <cmath>
#include <limits>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"
#include "frontend/onnx/tensor_proto.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

template <OpKind kOp>
void Unary(NodeImporter& n) {
  n.SetOutput(0, n.Emit(kOp, {n.RequiredInput(0)}));
}

// Before opset 7, binary ops broadcast only with broadcast=1, and then B's dims line up with
// A's starting at `axis` (default: the trailing dims, as numpy).
ir::Value* LegacyBroadcast(NodeImporter& n, ir::Value* a, ir::Value* b) {
  if (n.opset() >= 7) return b;
  bool broadcast = n.AttrInt("broadcast", 0) != 0;
  const Shape& as = a->type.shape;
  const Shape& bs = b->type.shape;
  if (!broadcast) {
    if (as != bs) n.Invalid("shapes differ and broadcast=0");
    return b;
  }
  if (!n.HasAttr("axis")) return b;
  int64_t axis = n.AttrInt("axis");
  int64_t rank = static_cast<int64_t>(as.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis + static_cast<int64_t>(bs.size()) > rank) n.Invalid("bad broadcast axis");
  Shape s(rank - axis, 1);
  std::copy(bs.begin(), bs.end(), s.begin());
  return n.Reshape(b, s);
}

template <OpKind kOp>
void Binary(NodeImporter& n) {
  ir::Value* a = n.RequiredInput(0);
  n.SetOutput(0, n.Emit(kOp, {a, LegacyBroadcast(n, a, n.RequiredInput(1))}));
}

void BitShift(NodeImporter& n) {
  std::string dir = n.AttrString("direction");
  if (dir != "LEFT" && dir != "RIGHT") n.Invalid(fmt::format("unknown direction '{}'", dir));
  n.SetOutput(0, n.Emit(OpKind::kBitShift, {n.RequiredInput(0), n.RequiredInput(1)},
                        {{"left", int64_t{dir == "LEFT"}}}));
}

// Sum / Max / Min / Mean of any number of inputs: a chain of binary ops.
template <OpKind kOp>
void Variadic(NodeImporter& n) {
  if (n.num_inputs() == 0) n.Invalid("needs at least one input");
  ir::Value* acc = n.RequiredInput(0);
  for (size_t i = 1; i < n.num_inputs(); ++i) acc = n.Emit(kOp, {acc, n.RequiredInput(i)});
  if (n.num_inputs() == 1) acc = n.Emit(OpKind::kCopy, {acc});
  n.SetOutput(0, acc);
}

void Mean(NodeImporter& n) {
  ir::Value* acc = n.RequiredInput(0);
  for (size_t i = 1; i < n.num_inputs(); ++i) acc = n.Emit(OpKind::kAdd, {acc, n.RequiredInput(i)});
  ir::Value* count = n.ConstScalar(acc->type.dtype, static_cast<double>(n.num_inputs()));
  n.SetOutput(0, n.Emit(OpKind::kDiv, {acc, count}));
}

void Identity(NodeImporter& n) { n.SetOutput(0, n.RequiredInput(0)); }

void Pow(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* y = LegacyBroadcast(n, x, n.RequiredInput(1));
  if (y->type.dtype != x->type.dtype)  // opset 12+ allows another exponent type
    y = n.Emit(OpKind::kCast, {y}, {{"to", int64_t(x->type.dtype)}});
  n.SetOutput(0, n.Emit(OpKind::kPow, {x, y}));
}

void LeakyRelu(NodeImporter& n) {
  n.SetOutput(
      0, n.Emit(OpKind::kLeakyRelu, {n.RequiredInput(0)}, {{"alpha", n.AttrFloat("alpha", 0.01)}}));
}

void Elu(NodeImporter& n) {
  n.SetOutput(0,
              n.Emit(OpKind::kElu, {n.RequiredInput(0)}, {{"alpha", n.AttrFloat("alpha", 1.0)}}));
}

void HardSigmoid(NodeImporter& n) {
  n.SetOutput(0,
              n.Emit(OpKind::kHardSigmoid, {n.RequiredInput(0)},
                     {{"alpha", n.AttrFloat("alpha", 0.2)}, {"beta", n.AttrFloat("beta", 0.5)}}));
}

// HardSwish(x) = x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
void HardSwish(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* hs = n.Emit(OpKind::kHardSigmoid, {x}, {{"alpha", 1.0 / 6.0}, {"beta", 0.5}});
  n.SetOutput(0, n.Emit(OpKind::kMul, {x, hs}));
}

// Clip: bounds are attributes before opset 11, optional inputs after. Constant bounds become
// one Clip; bounds computed at run time become Max / Min.
void Clip(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  double inf = std::numeric_limits<double>::infinity();
  if (n.opset() < 11) {
    n.SetOutput(0, n.Emit(OpKind::kClip, {x},
                          {{"min", n.AttrFloat("min", -inf)}, {"max", n.AttrFloat("max", inf)}}));
    return;
  }
  ir::Value* lo = n.Input(1);
  ir::Value* hi = n.Input(2);
  if ((!lo || lo->is_constant()) && (!hi || hi->is_constant()) && IsFloat(x->type.dtype)) {
    double l = lo ? lo->constant->GetDouble(0) : -inf;
    double h = hi ? hi->constant->GetDouble(0) : inf;
    n.SetOutput(0, n.Emit(OpKind::kClip, {x}, {{"min", l}, {"max", h}}));
    return;
  }
  ir::Value* y = x;
  if (lo) y = n.Emit(OpKind::kMax, {y, lo});
  if (hi) y = n.Emit(OpKind::kMin, {y, hi});
  if (y == x) y = n.Emit(OpKind::kCopy, {x});
  n.SetOutput(0, y);
}

void Cast(NodeImporter& n) {
  int64_t to = n.AttrInt("to");
  DType dt;
  if (!DTypeFromOnnx(static_cast<int>(to), &dt))
    n.Unsupported(fmt::format("Cast to {} is not supported", OnnxTypeName(static_cast<int>(to))));
  n.IgnoreAttr("saturate");
  n.SetOutput(0, n.Emit(OpKind::kCast, {n.RequiredInput(0)}, {{"to", int64_t(dt)}}));
}

// Dropout: the identity in inference mode, and in training mode with ratio 0 (no random draws);
// the optional mask is all true. Training mode with ratio > 0 draws random numbers: unsupported.
void Dropout(NodeImporter& n) {
  n.IgnoreAttr("seed");
  if (n.AttrInt("is_test", 1) == 0)  // opset < 7
    n.Unsupported("training-mode Dropout (is_test=0) is not supported");
  if (n.Input(2) && n.ConstInput(2, "Dropout training_mode").GetInt(0) != 0) {
    double ratio =
        n.Input(1) ? n.ConstInput(1, "Dropout ratio").GetDouble(0) : n.AttrFloat("ratio", 0.5);
    if (ratio != 0) n.Unsupported("training-mode Dropout with ratio > 0 (random) is not supported");
  }
  n.IgnoreAttr("ratio");
  ir::Value* x = n.RequiredInput(0);
  n.SetOutput(0, x);
  if (n.num_outputs() > 1 && !n.proto().output(1).empty()) {
    HostTensor mask(DType::kBool, x->type.shape);
    std::fill(mask.bytes.begin(), mask.bytes.end(), 1);
    n.SetOutput(1, n.Const(std::move(mask)));
  }
}

void Mod(NodeImporter& n) {
  int64_t fmod = n.AttrInt("fmod", 0);
  ir::Value* a = n.RequiredInput(0);
  if (IsFloat(a->type.dtype) && fmod == 0) n.Invalid("fmod must be 1 for floating-point inputs");
  n.SetOutput(0, n.Emit(OpKind::kMod, {a, n.RequiredInput(1)}, {{"fmod", fmod}}));
}

void IsInf(NodeImporter& n) {
  n.SetOutput(0, n.Emit(OpKind::kIsInf, {n.RequiredInput(0)},
                        {{"detect_positive", n.AttrInt("detect_positive", 1)},
                         {"detect_negative", n.AttrInt("detect_negative", 1)}}));
}

// Comparisons with equality: (a > b) or (a == b), exact for NaN too (both false).
template <OpKind kStrict>
void CompareOrEqual(NodeImporter& n) {
  ir::Value* a = n.RequiredInput(0);
  ir::Value* b = n.RequiredInput(1);
  n.SetOutput(0, n.Emit(OpKind::kOr, {n.Emit(kStrict, {a, b}), n.Emit(OpKind::kEqual, {a, b})}));
}

// Xor(a, b) = Not(Equal(a, b)) on bools.
void Xor(NodeImporter& n) {
  n.SetOutput(
      0, n.Emit(OpKind::kNot, {n.Emit(OpKind::kEqual, {n.RequiredInput(0), n.RequiredInput(1)})}));
}

ir::Value* Zero(NodeImporter& n, ir::Value* like) { return n.ConstScalar(like->type.dtype, 0.0); }

// PRelu(x) = x < 0 ? slope * x : x, slope broadcast to x.
void PRelu(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* slope = n.RequiredInput(1);
  const Shape& xs = x->type.shape;
  // Before opset 7 a 1-D slope of size C applies per channel (axis 1).
  if (n.opset() < 7 && slope->type.shape.size() == 1 && xs.size() >= 2 &&
      slope->type.shape[0] == xs[1] && slope->type.shape[0] != 1) {
    Shape s(xs.size() - 1, 1);
    s[0] = xs[1];
    slope = n.Reshape(slope, s);
  }
  ir::Value* neg = n.Emit(OpKind::kLess, {x, Zero(n, x)});
  n.SetOutput(0, n.Emit(OpKind::kWhere, {neg, n.Emit(OpKind::kMul, {x, slope}), x}));
}

// Selu(x) = gamma * (x > 0 ? x : alpha * (exp(x) - 1)) = gamma * Elu_alpha(x).
void Selu(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  double alpha = n.AttrFloat("alpha", 1.67326319217681884765625);
  double gamma = n.AttrFloat("gamma", 1.05070102214813232421875);
  ir::Value* elu = n.Emit(OpKind::kElu, {x}, {{"alpha", alpha}});
  n.SetOutput(0, n.Emit(OpKind::kMul, {elu, n.ConstScalar(x->type.dtype, gamma)}));
}

// Celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) = alpha * Elu_1(x / alpha).
void Celu(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  double alpha = n.AttrFloat("alpha", 1.0);
  DType t = x->type.dtype;
  ir::Value* scaled = n.Emit(OpKind::kDiv, {x, n.ConstScalar(t, alpha)});
  ir::Value* elu = n.Emit(OpKind::kElu, {scaled}, {{"alpha", 1.0}});
  n.SetOutput(0, n.Emit(OpKind::kMul, {elu, n.ConstScalar(t, alpha)}));
}

// ThresholdedRelu(x) = x > alpha ? x : 0.
void ThresholdedRelu(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* above =
      n.Emit(OpKind::kGreater, {x, n.ConstScalar(x->type.dtype, n.AttrFloat("alpha", 1.0))});
  n.SetOutput(0, n.Emit(OpKind::kWhere, {above, x, Zero(n, x)}));
}

// Softsign(x) = x / (1 + |x|).
void Softsign(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* d =
      n.Emit(OpKind::kAdd, {n.Emit(OpKind::kAbs, {x}), n.ConstScalar(x->type.dtype, 1.0)});
  n.SetOutput(0, n.Emit(OpKind::kDiv, {x, d}));
}

// Mish(x) = x * tanh(softplus(x)).
void Mish(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  n.SetOutput(0,
              n.Emit(OpKind::kMul, {x, n.Emit(OpKind::kTanh, {n.Emit(OpKind::kSoftplus, {x})})}));
}

// Shrink(x) = x < -lambd ? x + bias : (x > lambd ? x - bias : 0).
void Shrink(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  DType t = x->type.dtype;
  double lambd = n.AttrFloat("lambd", 0.5), bias = n.AttrFloat("bias", 0.0);
  ir::Value* lo = n.Emit(OpKind::kLess, {x, n.ConstScalar(t, -lambd)});
  ir::Value* hi = n.Emit(OpKind::kGreater, {x, n.ConstScalar(t, lambd)});
  ir::Value* inner =
      n.Emit(OpKind::kWhere, {hi, n.Emit(OpKind::kSub, {x, n.ConstScalar(t, bias)}), Zero(n, x)});
  n.SetOutput(
      0, n.Emit(OpKind::kWhere, {lo, n.Emit(OpKind::kAdd, {x, n.ConstScalar(t, bias)}), inner}));
}

void CastLike(NodeImporter& n) {
  n.IgnoreAttr("saturate");
  DType to = n.RequiredInput(1)->type.dtype;
  n.SetOutput(0, n.Emit(OpKind::kCast, {n.RequiredInput(0)}, {{"to", int64_t(to)}}));
}

void Where(NodeImporter& n) {
  n.SetOutput(0,
              n.Emit(OpKind::kWhere, {n.RequiredInput(0), n.RequiredInput(1), n.RequiredInput(2)}));
}

}  // namespace

void RegisterElementwiseOps(Registry& r) {
  r["Relu"] = Unary<OpKind::kRelu>;
  r["Sigmoid"] = Unary<OpKind::kSigmoid>;
  r["Tanh"] = Unary<OpKind::kTanh>;
  r["Exp"] = Unary<OpKind::kExp>;
  r["Log"] = Unary<OpKind::kLog>;
  r["Sqrt"] = Unary<OpKind::kSqrt>;
  r["Neg"] = Unary<OpKind::kNeg>;
  r["Abs"] = Unary<OpKind::kAbs>;
  r["Reciprocal"] = Unary<OpKind::kReciprocal>;
  r["Erf"] = Unary<OpKind::kErf>;
  r["Softplus"] = Unary<OpKind::kSoftplus>;
  r["Floor"] = Unary<OpKind::kFloor>;
  r["Ceil"] = Unary<OpKind::kCeil>;
  r["Round"] = Unary<OpKind::kRound>;
  r["Sign"] = Unary<OpKind::kSign>;
  r["Sin"] = Unary<OpKind::kSin>;
  r["Cos"] = Unary<OpKind::kCos>;
  r["Not"] = Unary<OpKind::kNot>;
  r["Tan"] = Unary<OpKind::kTan>;
  r["Asin"] = Unary<OpKind::kAsin>;
  r["Acos"] = Unary<OpKind::kAcos>;
  r["Atan"] = Unary<OpKind::kAtan>;
  r["Sinh"] = Unary<OpKind::kSinh>;
  r["Cosh"] = Unary<OpKind::kCosh>;
  r["Asinh"] = Unary<OpKind::kAsinh>;
  r["Acosh"] = Unary<OpKind::kAcosh>;
  r["Atanh"] = Unary<OpKind::kAtanh>;
  r["IsNaN"] = Unary<OpKind::kIsNaN>;
  r["IsInf"] = IsInf;
  r["Mod"] = Mod;
  r["BitShift"] = BitShift;
  r["GreaterOrEqual"] = CompareOrEqual<OpKind::kGreater>;
  r["LessOrEqual"] = CompareOrEqual<OpKind::kLess>;
  r["Xor"] = Xor;
  r["PRelu"] = PRelu;
  r["Selu"] = Selu;
  r["Celu"] = Celu;
  r["ThresholdedRelu"] = ThresholdedRelu;
  r["Softsign"] = Softsign;
  r["Mish"] = Mish;
  r["Shrink"] = Shrink;
  r["CastLike"] = CastLike;
  r["Identity"] = Identity;
  r["LeakyRelu"] = LeakyRelu;
  r["Elu"] = Elu;
  r["HardSigmoid"] = HardSigmoid;
  r["HardSwish"] = HardSwish;
  r["Clip"] = Clip;
  r["Cast"] = Cast;
  r["Dropout"] = Dropout;
  r["Add"] = Binary<OpKind::kAdd>;
  r["Sub"] = Binary<OpKind::kSub>;
  r["Mul"] = Binary<OpKind::kMul>;
  r["Div"] = Binary<OpKind::kDiv>;
  r["Pow"] = Pow;
  r["Equal"] = Binary<OpKind::kEqual>;
  r["Less"] = Binary<OpKind::kLess>;
  r["Greater"] = Binary<OpKind::kGreater>;
  r["And"] = Binary<OpKind::kAnd>;
  r["Or"] = Binary<OpKind::kOr>;
  r["Where"] = Where;
  r["Sum"] = Variadic<OpKind::kAdd>;
  r["Max"] = Variadic<OpKind::kMax>;
  r["Min"] = Variadic<OpKind::kMin>;
  r["Mean"] = Mean;
}

}  // namespace texel::onnx_frontend
