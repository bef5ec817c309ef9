#include "ir/host_eval.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/error.h"
#include "core/saturate.h"

namespace texel::ir {

std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> in_st = Strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[off + i] = in[i] == 1 ? 0 : in_st[i];
  return st;
}

namespace {

// Element access through double (floats) or int64 (integers and bool).
double LoadF(const HostTensor& t, int64_t i) { return t.GetDouble(i); }
int64_t LoadI(const HostTensor& t, int64_t i) { return t.GetInt(i); }

void StoreF(HostTensor& t, int64_t i, double v) {
  if (t.dtype == DType::kFloat16) {
    t.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v));
    return;
  }
  if (t.dtype == DType::kBool) {
    t.data<uint8_t>()[i] = v != 0;
    return;
  }
  VisitDType(t.dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>)
      t.data<T>()[i] = SaturatingCast<T>(v);
    else
      t.data<T>()[i] = static_cast<T>(v);
  });
}

void StoreI(HostTensor& t, int64_t i, int64_t v) {
  if (IsFloat(t.dtype)) return StoreF(t, i, static_cast<double>(v));
  if (t.dtype == DType::kBool) v = v != 0;
  VisitDType(t.dtype, [&](auto z) { t.data<decltype(z)>()[i] = static_cast<decltype(z)>(v); });
}

// Visits every output index with the matching flat offset of each input.
void ForEachBroadcast(const Shape& out, const std::vector<std::vector<int64_t>>& in_strides,
                      const std::function<void(int64_t, const std::vector<int64_t>&)>& f) {
  int64_t n = NumElements(out);
  std::vector<int64_t> idx(out.size(), 0), off(in_strides.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < off.size(); ++k) off[k] += in_strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < off.size(); ++k) off[k] -= in_strides[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

std::optional<double> UnaryF(OpKind op, const Attrs& a, double x) {
  switch (op) {
    case OpKind::kRelu: return std::max(x, 0.0);
    case OpKind::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case OpKind::kTanh: return std::tanh(x);
    case OpKind::kExp: return std::exp(x);
    case OpKind::kLog: return std::log(x);
    case OpKind::kSqrt: return std::sqrt(x);
    case OpKind::kNeg: return -x;
    case OpKind::kAbs: return std::fabs(x);
    case OpKind::kReciprocal: return 1.0 / x;
    case OpKind::kErf: return std::erf(x);
    case OpKind::kSoftplus: return std::log1p(std::exp(x));
    case OpKind::kFloor: return std::floor(x);
    case OpKind::kCeil: return std::ceil(x);
    case OpKind::kRound: return std::nearbyint(x);
    case OpKind::kSign: return static_cast<double>((x > 0) - (x < 0));
    case OpKind::kSin: return std::sin(x);
    case OpKind::kCos: return std::cos(x);
    case OpKind::kTan: return std::tan(x);
    case OpKind::kAsin: return std::asin(x);
    case OpKind::kAcos: return std::acos(x);
    case OpKind::kAtan: return std::atan(x);
    case OpKind::kSinh: return std::sinh(x);
    case OpKind::kCosh: return std::cosh(x);
    case OpKind::kAsinh: return std::asinh(x);
    case OpKind::kAcosh: return std::acosh(x);
    case OpKind::kAtanh: return std::atanh(x);
    case OpKind::kIsNaN: return std::isnan(x) ? 1.0 : 0.0;
    case OpKind::kIsInf:
      return std::isinf(x) &&
                     ((x > 0 && a.Int("detect_positive")) || (x < 0 && a.Int("detect_negative")))
                 ? 1.0
                 : 0.0;
    case OpKind::kClip: return std::min(std::max(x, a.Float("min")), a.Float("max"));
    case OpKind::kLeakyRelu: return x >= 0 ? x : x * a.Float("alpha");
    case OpKind::kElu: return x >= 0 ? x : a.Float("alpha") * (std::exp(x) - 1);
    case OpKind::kHardSigmoid: return std::clamp(a.Float("alpha") * x + a.Float("beta"), 0.0, 1.0);
    case OpKind::kCast:
    case OpKind::kCopy: return x;
    default: return std::nullopt;
  }
}

std::optional<int64_t> UnaryI(OpKind op, int64_t x) {
  switch (op) {
    case OpKind::kRelu: return std::max<int64_t>(x, 0);
    case OpKind::kNeg: return -x;
    case OpKind::kAbs: return x < 0 ? -x : x;
    case OpKind::kSign: return (x > 0) - (x < 0);
    case OpKind::kNot: return !x;
    case OpKind::kCast:
    case OpKind::kCopy: return x;
    default: return std::nullopt;
  }
}

std::optional<double> BinaryF(OpKind op, const Attrs& a, double x, double y) {
  switch (op) {
    case OpKind::kMod: {
      double r = std::fmod(x, y);
      if (!a.Int("fmod") && r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    case OpKind::kAdd: return x + y;
    case OpKind::kSub: return x - y;
    case OpKind::kMul: return x * y;
    case OpKind::kDiv: return x / y;
    case OpKind::kPow: return std::pow(x, y);
    case OpKind::kMax: return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
    case OpKind::kMin: return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
    case OpKind::kEqual: return x == y;
    case OpKind::kLess: return x < y;
    case OpKind::kGreater: return x > y;
    default: return std::nullopt;
  }
}

std::optional<int64_t> BinaryI(OpKind op, const Attrs& a, int64_t x, int64_t y) {
  switch (op) {
    case OpKind::kBitShift: {
      uint64_t ux = static_cast<uint64_t>(x), s = static_cast<uint64_t>(y);
      if (s >= 64) return 0;
      return static_cast<int64_t>(a.Int("left") ? ux << s : ux >> s);
    }
    case OpKind::kMod: {
      if (y == 0) Fail(ErrorCode::kInvalidModel, "integer modulo by zero in a constant");
      int64_t r = x % y;
      if (!a.Int("fmod") && r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    case OpKind::kAdd: return x + y;
    case OpKind::kSub: return x - y;
    case OpKind::kMul: return x * y;
    case OpKind::kDiv:
      if (y == 0) Fail(ErrorCode::kInvalidModel, "integer division by zero in a constant");
      return x / y;
    case OpKind::kMax: return std::max(x, y);
    case OpKind::kMin: return std::min(x, y);
    case OpKind::kEqual: return x == y;
    case OpKind::kLess: return x < y;
    case OpKind::kGreater: return x > y;
    case OpKind::kAnd: return x && y;
    case OpKind::kOr: return x || y;
    case OpKind::kPow: {
      int64_t r = 1;
      for (int64_t k = 0; k < y; ++k) r *= x;
      return r;
    }
    default: return std::nullopt;
  }
}

std::optional<HostTensor> Elementwise(OpKind op, const Attrs& a,
                                      const std::vector<const HostTensor*>& in,
                                      const TensorType& out_type) {
  for (size_t k = 0; k < in.size(); ++k)  // inputs read through views: the device's job
    if (a.Has(fmt::format("in{}_shape", k))) return std::nullopt;
  HostTensor out(out_type.dtype, out_type.shape);
  std::vector<std::vector<int64_t>> st;
  for (const HostTensor* t : in) st.push_back(BroadcastStrides(t->shape, out.shape));
  // Integer math when the operation's input type is integral (ints keep exact values).
  DType compute = in.size() == 3 ? in[1]->dtype : in[0]->dtype;
  bool as_int = !IsFloat(compute);
  bool ok = true;
  ForEachBroadcast(out.shape, st, [&](int64_t i, const std::vector<int64_t>& off) {
    if (!ok) return;
    if (in.size() == 3) {  // Where
      bool c = LoadI(*in[0], off[0]) != 0;
      const HostTensor& src = c ? *in[1] : *in[2];
      int64_t o = c ? off[1] : off[2];
      if (as_int)
        StoreI(out, i, LoadI(src, o));
      else
        StoreF(out, i, LoadF(src, o));
      return;
    }
    if (as_int && !(op == OpKind::kCast && IsFloat(out.dtype))) {
      auto r = in.size() == 1 ? UnaryI(op, LoadI(*in[0], off[0]))
                              : BinaryI(op, a, LoadI(*in[0], off[0]), LoadI(*in[1], off[1]));
      if (!r)
        ok = false;
      else
        StoreI(out, i, *r);
    } else {
      auto r = in.size() == 1 ? UnaryF(op, a, LoadF(*in[0], off[0]))
                              : BinaryF(op, a, LoadF(*in[0], off[0]), LoadF(*in[1], off[1]));
      if (!r)
        ok = false;
      else
        StoreF(out, i, *r);
    }
  });
  if (!ok) return std::nullopt;
  return out;
}

// ScatterND: each index tuple (the last axis of indices: the first k coordinates of data)
// replaces, or reduces into, one slice of data by one slice of updates (Swin's window masks are
// built so, from constants).
std::optional<HostTensor> ScatterND(const Attrs& a, const std::vector<const HostTensor*>& in,
                                    const TensorType& out_type) {
  HostTensor out(out_type.dtype, out_type.shape);
  size_t es = DTypeSize(out.dtype);
  const HostTensor& x = *in[0];
  const HostTensor& idx = *in[1];
  const HostTensor& upd = *in[2];
  const std::string& red = a.Str("reduction");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return std::nullopt;
  out.bytes = x.bytes;
  std::vector<int64_t> xst = Strides(x.shape);
  size_t k = static_cast<size_t>(idx.shape.back());
  int64_t tuples = k ? idx.size() / static_cast<int64_t>(k) : 0;
  int64_t slice = NumElements(Shape(x.shape.begin() + k, x.shape.end()));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t base = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t c = idx.GetInt(t * static_cast<int64_t>(k) + d);
      if (c < 0) c += x.shape[d];
      if (c < 0 || c >= x.shape[d]) return std::nullopt;  // the device kernel reports it
      base += c * xst[d];
    }
    for (int64_t j = 0; j < slice; ++j) {
      int64_t o = base + j, u = t * slice + j;
      if (red == "none") {
        std::memcpy(&out.bytes[o * es], &upd.bytes[u * es], es);
        continue;
      }
      double cur = out.GetDouble(o), v = upd.GetDouble(u);
      out.SetDouble(o, red == "add"   ? cur + v
                       : red == "mul" ? cur * v
                       : red == "max" ? std::max(cur, v)
                                      : std::min(cur, v));
    }
  }
  return out;
}

std::optional<HostTensor> Concat(const Attrs& a, const std::vector<const HostTensor*>& in,
                                 const TensorType& out_type) {
  for (size_t k = 0; k < in.size(); ++k)  // operands read through views: the device's job
    if (a.Has(fmt::format("in{}_shape", k))) return std::nullopt;
  HostTensor out(out_type.dtype, out_type.shape);
  size_t es = DTypeSize(out.dtype);
  std::vector<int64_t> ost = Strides(out.shape);
  int64_t axis = a.Int("axis"), base = 0;
  for (const HostTensor* t : in) {
    std::vector<int64_t> tst = Strides(t->shape);
    for (int64_t j = 0; j < t->size(); ++j) {
      int64_t o = 0;
      for (size_t d = 0; d < out.shape.size(); ++d) {
        int64_t c = (j / tst[d]) % t->shape[d];
        o += (static_cast<int64_t>(d) == axis ? c + base : c) * ost[d];
      }
      std::memcpy(&out.bytes[o * es], &t->bytes[j * es], es);
    }
    base += t->shape[axis];
  }
  return out;
}

// The flat index in x (in[0], strides xst; with Expand, bst: as broadcast to the output) that
// output coordinates c read, -1 for Pad's value, or nullopt for what stays on the device (an op
// without a host form, reflect padding).
std::optional<int64_t> MovementSource(OpKind op, const Attrs& a,
                                      const std::vector<const HostTensor*>& in, const Shape& os,
                                      const std::vector<int64_t>& xst,
                                      const std::vector<int64_t>& bst,
                                      const std::vector<int64_t>& c) {
  const HostTensor& x = *in[0];
  int64_t src = 0;
  switch (op) {
    case OpKind::kExpand: {
      for (size_t d = 0; d < os.size(); ++d) src += c[d] * bst[d];
      return src;
    }
    case OpKind::kTranspose: {
      const auto& perm = a.Ints("perm");
      for (size_t d = 0; d < os.size(); ++d) src += c[d] * xst[perm[d]];
      return src;
    }
    case OpKind::kSlice: {
      const auto& starts = a.Ints("starts");
      const auto& steps = a.Ints("steps");
      for (size_t d = 0; d < os.size(); ++d) src += (starts[d] + c[d] * steps[d]) * xst[d];
      return src;
    }
    case OpKind::kGather: {
      int64_t axis = a.Int("axis");
      const HostTensor& idx = *in[1];
      int64_t r = static_cast<int64_t>(idx.shape.size());
      int64_t flat = 0;
      std::vector<int64_t> ist = Strides(idx.shape);
      for (int64_t k = 0; k < r; ++k) flat += c[axis + k] * ist[k];
      int64_t g = idx.GetInt(flat);
      if (g < 0) g += x.shape[axis];
      if (g < 0 || g >= x.shape[axis])
        Fail(ErrorCode::kInvalidModel, "Gather index {} is out of range", idx.GetInt(flat));
      for (int64_t d = 0; d < axis; ++d) src += c[d] * xst[d];
      src += g * xst[axis];
      for (size_t d = axis + 1; d < x.shape.size(); ++d) src += c[d + r - 1] * xst[d];
      return src;
    }
    case OpKind::kPad: {
      const auto& pads = a.Ints("pads");
      std::string mode = a.Has("mode") ? a.Str("mode") : "constant";
      for (size_t d = 0; d < os.size(); ++d) {
        int64_t p = c[d] - pads[d], len = x.shape[d];
        if (p < 0 || p >= len) {
          if (mode == "constant") return -1;
          if (mode != "edge") return std::nullopt;  // reflect stays on the device
          p = std::clamp<int64_t>(p, 0, len - 1);
        }
        src += p * xst[d];
      }
      return src;
    }
    default: return std::nullopt;
  }
}

// Data movement: each output element copied from the input element MovementSource names.
std::optional<HostTensor> Movement(OpKind op, const Attrs& a,
                                   const std::vector<const HostTensor*>& in,
                                   const TensorType& out_type) {
  if (op == OpKind::kScatterND) return ScatterND(a, in, out_type);
  if (op == OpKind::kConcat) return Concat(a, in, out_type);
  HostTensor out(out_type.dtype, out_type.shape);
  size_t es = DTypeSize(out.dtype);
  const Shape& os = out.shape;
  const HostTensor& x = *in[0];
  if (op == OpKind::kReshape) {
    out.bytes = x.bytes;
    return out;
  }
  std::vector<int64_t> ost = Strides(os), xst = Strides(x.shape), c(os.size());
  std::vector<int64_t> bst = op == OpKind::kExpand ? BroadcastStrides(x.shape, os) : xst;
  for (int64_t i = 0; i < NumElements(os); ++i) {
    for (size_t d = 0; d < os.size(); ++d) c[d] = (i / ost[d]) % os[d];
    std::optional<int64_t> src = MovementSource(op, a, in, os, xst, bst, c);
    if (!src) return std::nullopt;
    if (*src < 0)
      StoreF(out, i, a.Float("value", 0.0));
    else
      std::memcpy(&out.bytes[i * es], &x.bytes[*src * es], es);
  }
  return out;
}

// Acc is double for floats and int64 for integers, so integer reductions are exact.
template <typename Acc>
HostTensor Reduce(OpKind op, const Attrs& a, const HostTensor& x, const TensorType& out_type) {
  HostTensor out(out_type.dtype, out_type.shape);
  const auto& axes = a.Ints("axes");
  // Out coordinates with the reduced dims kept as size 1.
  Shape kept = x.shape;
  for (int64_t ax : axes) kept[ax] = 1;
  int64_t n = NumElements(kept);
  constexpr Acc kLowest = std::numeric_limits<Acc>::has_infinity
                              ? -std::numeric_limits<Acc>::infinity()
                              : std::numeric_limits<Acc>::lowest();
  constexpr Acc kHighest = std::numeric_limits<Acc>::has_infinity
                               ? std::numeric_limits<Acc>::infinity()
                               : std::numeric_limits<Acc>::max();
  std::vector<Acc> acc(n, op == OpKind::kReduceMax    ? kLowest
                          : op == OpKind::kReduceMin  ? kHighest
                          : op == OpKind::kReduceProd ? Acc{1}
                                                      : Acc{0});
  std::vector<int64_t> kst = BroadcastStrides(kept, x.shape);
  ForEachBroadcast(x.shape, {kst}, [&](int64_t i, const std::vector<int64_t>& off) {
    Acc v;
    if constexpr (std::is_floating_point_v<Acc>)
      v = LoadF(x, i);
    else
      v = LoadI(x, i);
    Acc& r = acc[off[0]];
    switch (op) {
      case OpKind::kReduceMax: r = std::max(r, v); break;
      case OpKind::kReduceMin: r = std::min(r, v); break;
      case OpKind::kReduceProd: r *= v; break;
      default: r += v;
    }
  });
  int64_t count = NumElements(x.shape) / std::max<int64_t>(n, 1);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<Acc>)
      StoreF(out, i, op == OpKind::kReduceMean ? acc[i] / static_cast<double>(count) : acc[i]);
    else
      StoreI(out, i, op == OpKind::kReduceMean ? acc[i] / count : acc[i]);
  }
  return out;
}

}  // namespace

std::optional<HostTensor> EvaluateOnHost(OpKind op, const Attrs& attrs,
                                         const std::vector<const HostTensor*>& inputs,
                                         const TensorType& out_type) {
  switch (GetOpInfo(op).cls) {
    case OpClass::kUnary:
    case OpClass::kBinary:
    case OpClass::kTernary: return Elementwise(op, attrs, inputs, out_type);
    case OpClass::kMovement: return Movement(op, attrs, inputs, out_type);
    case OpClass::kReduce:
      if (op == OpKind::kArgMax || op == OpKind::kArgMin) return std::nullopt;
      if (IsFloat(inputs[0]->dtype)) return Reduce<double>(op, attrs, *inputs[0], out_type);
      return Reduce<int64_t>(op, attrs, *inputs[0], out_type);
    default: return std::nullopt;
  }
}

}  // namespace texel::ir
