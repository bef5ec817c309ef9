#include "ir/infer.h"

#include <algorithm>

#include "core/error.h"
#include "core/limits.h"
#include "ir/attention_layout.h"
#include "ir/index_map.h"

namespace texel::ir {
namespace {

void Expect(bool cond, std::string_view what) {
  if (!cond) Fail(ErrorCode::kInvalidModel, "{}", what);
}

bool IsBoolResult(OpKind op) {
  return op == OpKind::kEqual || op == OpKind::kLess || op == OpKind::kGreater ||
         op == OpKind::kAnd || op == OpKind::kOr;
}

TensorType InferWindow(const OpInfo& info, const std::vector<TensorType>& in, const Attrs& a) {
  const Shape& x = in[0].shape;
  Expect(x.size() >= 3, "expects an input of rank >= 3 (N, C, spatial...)");
  size_t nsp = x.size() - 2;
  const auto& strides = a.Ints("strides");
  const auto& pads = a.Ints("pads");
  const auto& dil = a.Ints("dilations");
  Expect(strides.size() == nsp && pads.size() == 2 * nsp && dil.size() == nsp,
         "window attributes do not match the input rank");
  Shape kernel;
  Shape out = {x[0], x[1]};
  if (info.cls == OpClass::kConv) {
    const Shape& w = in[1].shape;
    int64_t group = a.Int("group");
    Expect(w.size() == x.size(), "weight rank differs from input rank");
    Expect(group > 0 && x[1] % group == 0 && w[0] % group == 0 && w[1] * group == x[1],
           fmt::format("input channels {} and weight {} do not match group {}", x[1], ShapeStr(w),
                       group));
    if (in.size() > 2) Expect(in[2].shape == Shape{w[0]}, "bias shape must be [M]");
    out[1] = w[0];
    kernel.assign(w.begin() + 2, w.end());
  } else {
    kernel = a.Ints("kernel");
    Expect(kernel.size() == nsp, "kernel_shape does not match the input rank");
  }
  bool ceil_mode = a.Int("ceil_mode", 0) != 0;
  for (size_t i = 0; i < nsp; ++i) {
    Expect(strides[i] > 0 && dil[i] > 0 && kernel[i] > 0,
           "strides, dilations and kernel must be > 0");
    int64_t span = x[2 + i] + pads[i] + pads[nsp + i] - dil[i] * (kernel[i] - 1) - 1;
    Expect(span >= 0, "the window is larger than the padded input");
    int64_t o = span / strides[i] + 1;
    if (ceil_mode) {
      o = (span + strides[i] - 1) / strides[i] + 1;
      // The last window must start inside the input or its begin padding (ONNX / PyTorch).
      if ((o - 1) * strides[i] >= x[2 + i] + pads[i]) --o;
    }
    out.push_back(o);
  }
  return {in[0].dtype, out};
}

// ConvTranspose: x [N, C, in...], w [C, M / group, k...][, b [M]];
// out = (in - 1) * stride + (k - 1) * dilation + 1 - pad_begin - pad_end + output_padding.
TensorType InferConvTranspose(const std::vector<TensorType>& in, const Attrs& a) {
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  Expect(x.size() >= 3, "expects an input of rank >= 3 (N, C, spatial...)");
  Expect(w.size() == x.size(), "weight rank differs from input rank");
  size_t nsp = x.size() - 2;
  const auto& strides = a.Ints("strides");
  const auto& pads = a.Ints("pads");
  const auto& dil = a.Ints("dilations");
  const auto& out_pad = a.Ints("output_padding");
  Expect(
      strides.size() == nsp && pads.size() == 2 * nsp && dil.size() == nsp && out_pad.size() == nsp,
      "window attributes do not match the input rank");
  int64_t group = a.Int("group");
  Expect(group > 0 && x[1] % group == 0 && w[0] == x[1],
         fmt::format("input channels {} and weight {} do not match group {}", x[1], ShapeStr(w),
                     group));
  Shape out = {x[0], w[1] * group};
  if (in.size() > 2) Expect(in[2].shape == Shape{out[1]}, "bias shape must be [M]");
  for (size_t i = 0; i < nsp; ++i) {
    Expect(strides[i] > 0 && dil[i] > 0 && w[2 + i] > 0,
           "strides, dilations and kernel must be > 0");
    int64_t o = (x[2 + i] - 1) * strides[i] + (w[2 + i] - 1) * dil[i] + 1 - pads[i] -
                pads[nsp + i] + out_pad[i];
    Expect(o > 0, "the output would be empty");
    out.push_back(o);
  }
  return {in[0].dtype, out};
}

void ExpectScatter(const std::vector<TensorType>& in, const Attrs& a) {
  static const char* const kReductions[] = {"none", "add", "mul", "max", "min"};
  const std::string& r = a.Str("reduction");
  Expect(std::find(std::begin(kReductions), std::end(kReductions), r) != std::end(kReductions),
         fmt::format("unknown reduction '{}'", r));
  Expect(in[1].dtype == DType::kInt64 || in[1].dtype == DType::kInt32,
         "indices must be int32 or int64");
  Expect(in[2].dtype == in[0].dtype, "updates and data types differ");
}

// ScatterElements: indices and updates share a shape of the data's rank that fits in the data
// on every axis but `axis`.
TensorType InferScatterElements(const std::vector<TensorType>& in, const Attrs& a) {
  ExpectScatter(in, a);
  const Shape& x = in[0].shape;
  const Shape& is = in[1].shape;
  int64_t axis = a.Int("axis");
  Expect(axis >= 0 && axis < static_cast<int64_t>(x.size()), "bad axis");
  Expect(is == in[2].shape, "indices and updates shapes differ");
  Expect(is.size() == x.size(), "indices rank differs from data rank");
  for (size_t d = 0; d < x.size(); ++d)
    Expect(static_cast<int64_t>(d) == axis || is[d] <= x[d],
           fmt::format("indices {} do not fit in data {}", ShapeStr(is), ShapeStr(x)));
  return in[0];
}

// ScatterND: indices [..., k] address slices data[i0, ..., ik-1, :, ...];
// updates = indices.shape[:-1] + data.shape[k:].
TensorType InferScatterND(const std::vector<TensorType>& in, const Attrs& a) {
  ExpectScatter(in, a);
  const Shape& x = in[0].shape;
  const Shape& is = in[1].shape;
  Expect(!is.empty() && is.back() <= static_cast<int64_t>(x.size()),
         "indices' last dim must be at most the data's rank");
  Shape u(is.begin(), is.end() - 1);
  u.insert(u.end(), x.begin() + is.back(), x.end());
  Expect(in[2].shape == u,
         fmt::format("updates shape {} expected {}", ShapeStr(in[2].shape), ShapeStr(u)));
  return in[0];
}

// Attention: q, k, v are read through views (ir/index_map.h) of logical shapes [..., Sq, D],
// [..., Sk, D], [..., Sk, Dv] of one rank whose batch dims broadcast; biases broadcast to the
// scores [..., Sq, Sk]. The result [..., Sq, Dv] is written through view "o" into a value of
// shape out_shape when one is stored, else it is the value.
TensorType InferAttention(const std::vector<TensorType>& in, const Attrs& a) {
  Expect(in.size() >= 3, "Attention takes q, k, v and optional biases");
  for (const auto& t : in) Expect(t.dtype == in[0].dtype, "Attention's inputs must share a type");
  Expect(IsFloat(in[0].dtype), "Attention expects float inputs");
  AttentionLayout l = AttentionLayoutOf(a, in[0].shape, in[1].shape, in[2].shape);
  Shape scores = l.Scores();
  for (size_t b = 3; b < in.size(); ++b)
    Expect(BroadcastShapes(scores, in[b].shape) == scores,
           fmt::format("Attention bias {} does not broadcast to the scores {}",
                       ShapeStr(in[b].shape), ShapeStr(scores)));
  return {in[0].dtype, AttentionOutputShape(a, l)};
}

}  // namespace

int64_t WindowOutSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  return (in + pb + pe - d * (k - 1) - 1) / s + 1;
}

namespace {
std::vector<TensorType> InferUnchecked(OpKind op, const std::vector<TensorType>& in_values,
                                       const Attrs& a);
}  // namespace

// Every result within the tensor limit (core/limits.h): no shape arithmetic overflows, and no
// absurd size reaches the planner.
std::vector<TensorType> InferTypes(OpKind op, const std::vector<TensorType>& in_values,
                                   const Attrs& a) {
  std::vector<TensorType> out = InferUnchecked(op, in_values, a);
  for (size_t k = 0; k < out.size(); ++k)
    RequireWithinLimits(out[k].shape, out[k].dtype, /*host=*/false,
                        fmt::format("output {} of {}", k, OpName(op)));
  return out;
}

namespace {

// Transpose: the input's dims in perm's order.
TensorType InferTranspose(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& perm = a.Ints("perm");
  Expect(perm.size() == in[0].shape.size(), "perm length differs from rank");
  Shape s;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    Expect(p >= 0 && p < static_cast<int64_t>(perm.size()) && !seen[p], "bad perm");
    seen[p] = true;
    s.push_back(in[0].shape[p]);
  }
  return {in[0].dtype, s};
}

// Slice: sizes per dim, each start and last index within the input.
TensorType InferSlice(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& starts = a.Ints("starts");
  const auto& steps = a.Ints("steps");
  const auto& sizes = a.Ints("sizes");
  const Shape& x = in[0].shape;
  Expect(starts.size() == x.size() && steps.size() == x.size() && sizes.size() == x.size(),
         "slice attributes do not match the rank");
  for (size_t i = 0; i < x.size(); ++i) {
    if (sizes[i] == 0) continue;
    int64_t last = starts[i] + (sizes[i] - 1) * steps[i];
    Expect(steps[i] != 0 && starts[i] >= 0 && starts[i] < x[i] && last >= 0 && last < x[i],
           "slice is out of bounds");
  }
  return {in[0].dtype, sizes};
}

// Concat along axis; an operand may be read through a view of its value (passes/views.cpp).
TensorType InferConcat(const std::vector<TensorType>& in, const Attrs& a) {
  Expect(!in.empty(), "Concat needs inputs");
  // An operand may be read through a view of its value (passes/views.cpp).
  std::vector<Shape> shapes;
  for (size_t k = 0; k < in.size(); ++k) {
    IndexMap m = IndexMap::Load(a, fmt::format("in{}", k), in[k].shape);
    Expect(m.InBounds(NumElements(in[k].shape)),
           fmt::format("Concat's view of input {} is not within it", k));
    shapes.push_back(m.shape);
  }
  int64_t axis = a.Int("axis");
  Shape s = shapes[0];
  Expect(axis >= 0 && axis < static_cast<int64_t>(s.size()), "bad concat axis");
  s[axis] = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    Expect(in[k].dtype == in[0].dtype && shapes[k].size() == s.size(), "Concat inputs differ");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis)
        Expect(shapes[k][d] == s[d], fmt::format("Concat inputs differ in dim {}", d));
    s[axis] += shapes[k][axis];
  }
  return {in[0].dtype, s};
}

// Gather: the indices' dims in place of the data's axis.
TensorType InferGather(const std::vector<TensorType>& in, const Attrs& a) {
  int64_t axis = a.Int("axis");
  const Shape& x = in[0].shape;
  Expect(axis >= 0 && axis < static_cast<int64_t>(x.size()), "bad gather axis");
  Expect(in[1].dtype == DType::kInt64 || in[1].dtype == DType::kInt32,
         "Gather indices must be int32 or int64");
  Shape s(x.begin(), x.begin() + axis);
  s.insert(s.end(), in[1].shape.begin(), in[1].shape.end());
  s.insert(s.end(), x.begin() + axis + 1, x.end());
  return {in[0].dtype, s};
}

// RoiAlign: [R, C, output_height, output_width].
TensorType InferRoiAlign(const std::vector<TensorType>& in, const Attrs& a) {
  const Shape& x = in[0].shape;
  const Shape& rois = in[1].shape;
  Expect(x.size() == 4 && rois.size() == 2 && rois[1] == 4 && in[2].shape == Shape{rois[0]},
         fmt::format("RoiAlign expects x [N,C,H,W], rois [R,4], batch_indices [R], got "
                     "{}, {}, {}",
                     ShapeStr(x), ShapeStr(rois), ShapeStr(in[2].shape)));
  Expect(in[1].dtype == in[0].dtype, "RoiAlign rois must have the type of x");
  Expect(in[2].dtype == DType::kInt64, "RoiAlign batch_indices must be int64");
  return {in[0].dtype, {rois[0], x[1], a.Int("output_height"), a.Int("output_width")}};
}

// Pad: each dim grown by its pads at both ends.
TensorType InferPad(const std::vector<TensorType>& in, const Attrs& a) {
  const auto& pads = a.Ints("pads");
  const Shape& x = in[0].shape;
  Expect(pads.size() == 2 * x.size(), "pads length must be twice the rank");
  Shape s = x;
  for (size_t i = 0; i < x.size(); ++i) {
    s[i] += pads[i] + pads[i + x.size()];
    Expect(s[i] >= 0, "negative padded size");
  }
  return {in[0].dtype, s};
}

// Movement ops: views, copies and gathers.
std::vector<TensorType> InferMovement(OpKind op, const std::vector<TensorType>& in,
                                      const Attrs& a) {
  switch (op) {
    case OpKind::kConvertStorage: return {in[0]};
    case OpKind::kReshape: {
      Shape s = a.Ints("shape");
      Expect(NumElements(s) == NumElements(in[0].shape),
             fmt::format("cannot reshape {} to {}", ShapeStr(in[0].shape), ShapeStr(s)));
      return {{in[0].dtype, s}};
    }
    case OpKind::kExpand: {
      Shape s = a.Ints("shape");
      Expect(BroadcastShapes(in[0].shape, s) == s,
             fmt::format("cannot expand {} to {}", ShapeStr(in[0].shape), ShapeStr(s)));
      return {{in[0].dtype, s}};
    }
    case OpKind::kTranspose: return {InferTranspose(in, a)};
    case OpKind::kSlice: return {InferSlice(in, a)};
    case OpKind::kConcat: return {InferConcat(in, a)};
    case OpKind::kGather: return {InferGather(in, a)};
    case OpKind::kGatherElements: {
      int64_t axis = a.Int("axis");
      Expect(axis >= 0 && axis < static_cast<int64_t>(in[0].shape.size()), "bad axis");
      Expect(in[1].shape.size() == in[0].shape.size(), "indices rank differs from data rank");
      Expect(in[1].dtype == DType::kInt64 || in[1].dtype == DType::kInt32,
             "indices must be int32 or int64");
      return {{in[0].dtype, in[1].shape}};
    }
    case OpKind::kResize: {
      const auto& sizes = a.Ints("sizes");
      Expect(sizes.size() == in[0].shape.size() && a.Floats("scales").size() == sizes.size(),
             "Resize sizes/scales do not match the rank");
      return {{in[0].dtype, sizes}};
    }
    case OpKind::kGridSample: {
      const Shape& x = in[0].shape;
      const Shape& g = in[1].shape;
      Expect(x.size() == 4 && g.size() == 4 && g[3] == 2 && g[0] == x[0],
             fmt::format("GridSample expects x [N,C,H,W] and grid [N,Ho,Wo,2], got {} and {}",
                         ShapeStr(x), ShapeStr(g)));
      Expect(in[1].dtype == in[0].dtype, "GridSample grid must have the type of x");
      return {{in[0].dtype, {x[0], x[1], g[1], g[2]}}};
    }
    case OpKind::kRoiAlign: return {InferRoiAlign(in, a)};
    case OpKind::kGatherND: {
      int64_t b = a.Int("batch_dims");
      const Shape& is = in[1].shape;
      Expect(!is.empty() && in[1].dtype == DType::kInt64, "GatherND indices must be i64");
      Shape s(is.begin(), is.end() - 1);
      s.insert(s.end(), in[0].shape.begin() + b + is.back(), in[0].shape.end());
      return {{in[0].dtype, s}};
    }
    case OpKind::kTopKIndices: {
      Shape s = in[0].shape;
      s[a.Int("axis")] = a.Int("k");
      return {{DType::kInt64, s}};
    }
    case OpKind::kCumSum: {
      int64_t axis = a.Int("axis");
      Expect(axis >= 0 && axis < static_cast<int64_t>(in[0].shape.size()), "bad axis");
      return {in[0]};
    }
    case OpKind::kScatterElements: return {InferScatterElements(in, a)};
    case OpKind::kScatterND: return {InferScatterND(in, a)};
    case OpKind::kPad: return {InferPad(in, a)};
    default: break;
  }
  Fail(ErrorCode::kInternal, "no type inference for {}", OpName(op));
}

// Conv and ConvTranspose, with the fuse pass's convert_input and the channels-last pass's
// layout.
TensorType InferConv(OpKind op, const OpInfo& info, const std::vector<TensorType>& in,
                     const Attrs& a) {
  Expect(in.size() == 2 || in.size() == 3, "Conv takes 2 or 3 inputs");
  if (op == OpKind::kConv && a.Int("convert_input", 0)) {
    // x stored f32, converted to the filters' type as it is read (passes/fuse.cpp).
    Expect(in[0].dtype == DType::kFloat32, "Conv with convert_input reads an f32 image");
    for (const auto& t : in)
      Expect(&t == &in[0] || t.dtype == in[1].dtype, "Conv inputs must share a type");
    TensorType t = InferWindow(info, in, a);
    t.dtype = in[1].dtype;
    return t;
  }
  for (const auto& t : in) Expect(t.dtype == in[0].dtype, "Conv inputs must share a type");
  if (op == OpKind::kConvTranspose) return InferConvTranspose(in, a);
  if (op == OpKind::kConv && a.Int("channels_last", 0)) {
    // x [N, H, W, C], w [M, KH, KW, C/group] -> y [N, OH, OW, M] (passes/channels_last.cpp).
    Expect(in[0].shape.size() == 4 && in[1].shape.size() == 4,
           "a channels-last Conv is 2-D: x [N, H, W, C], w [M, KH, KW, C]");
    std::vector<TensorType> nchw = in;
    for (int i = 0; i < 2; ++i) nchw[i].shape = Permuted(in[i].shape, {0, 3, 1, 2});
    TensorType t = InferWindow(info, nchw, a);
    t.shape = Permuted(t.shape, {0, 2, 3, 1});
    return t;
  }
  return InferWindow(info, in, a);
}

std::vector<TensorType> InferUnchecked(OpKind op, const std::vector<TensorType>& in_values,
                                       const Attrs& a) {
  const OpInfo& info = GetOpInfo(op);
  // Elementwise ops may read an input through a view (passes/views.cpp): their types are the
  // views' shapes.
  std::vector<TensorType> in = in_values;
  bool elementwise = IsElementwiseClass(info.cls);
  for (size_t k = 0; elementwise && k < in.size(); ++k) {
    IndexMap m = IndexMap::Load(a, fmt::format("in{}", k), in[k].shape);
    Expect(m.InBounds(NumElements(in[k].shape)),
           fmt::format("the view of input {} is not within it", k));
    in[k].shape = m.shape;
  }
  if (info.num_inputs >= 0)
    Expect(static_cast<int>(in.size()) == info.num_inputs,
           fmt::format("expects {} inputs, got {}", info.num_inputs, in.size()));
  switch (info.cls) {
    case OpClass::kUnary: {
      if (op == OpKind::kCast) return {{static_cast<DType>(a.Int("to")), in[0].shape}};
      if (op == OpKind::kNot) Expect(in[0].dtype == DType::kBool, "Not expects bool");
      if (op == OpKind::kIsNaN || op == OpKind::kIsInf) return {{DType::kBool, in[0].shape}};
      return {in[0]};
    }
    case OpClass::kBinary: {
      Expect(in[0].dtype == in[1].dtype,
             fmt::format("input types differ: {} vs {}", TypeStr(in[0]), TypeStr(in[1])));
      Shape s = BroadcastShapes(in[0].shape, in[1].shape);
      return {{IsBoolResult(op) ? DType::kBool : in[0].dtype, s}};
    }
    case OpClass::kTernary: {
      Expect(in[0].dtype == DType::kBool, "Where condition must be bool");
      Expect(in[1].dtype == in[2].dtype, "Where branches must have one type");
      return {
          {in[1].dtype, BroadcastShapes(in[0].shape, BroadcastShapes(in[1].shape, in[2].shape))}};
    }
    case OpClass::kMovement: return InferMovement(op, in, a);
    case OpClass::kConv: return {InferConv(op, info, in, a)};
    case OpClass::kPool: {
      TensorType t = InferWindow(info, in, a);
      if (op == OpKind::kMaxPoolIndices) t.dtype = DType::kInt64;
      return {t};
    }
    case OpClass::kMatMul: {
      // trans_a / trans_b: the operand is stored with its last two axes swapped.
      Shape x = in[0].shape, y = in[1].shape;
      Expect(x.size() >= 2 && y.size() >= 2, "MatMul operands must have rank >= 2");
      if (a.Int("trans_a", 0)) std::swap(x[x.size() - 2], x.back());
      if (a.Int("trans_b", 0)) std::swap(y[y.size() - 2], y.back());
      Expect(in[0].dtype == in[1].dtype, "MatMul operands must share a type");
      Expect(x.back() == y[y.size() - 2],
             fmt::format("MatMul inner dims differ: {} vs {}", ShapeStr(x), ShapeStr(y)));
      Shape bx(x.begin(), x.end() - 2), by(y.begin(), y.end() - 2);
      Shape s = BroadcastShapes(bx, by);
      s.push_back(x[x.size() - 2]);
      s.push_back(y.back());
      return {{in[0].dtype, s}};
    }
    case OpClass::kReduce: {
      const auto& axes = a.Ints("axes");
      bool keep = a.Int("keepdims") != 0;
      const Shape& x = in[0].shape;
      Shape s;
      for (size_t d = 0; d < x.size(); ++d) {
        bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
        if (!reduced)
          s.push_back(x[d]);
        else if (keep)
          s.push_back(1);
      }
      for (int64_t ax : axes) Expect(ax >= 0 && ax < static_cast<int64_t>(x.size()), "bad axis");
      bool arg = op == OpKind::kArgMax || op == OpKind::kArgMin;
      if (arg) Expect(axes.size() == 1, "ArgMax/ArgMin reduce one axis");
      return {{arg ? DType::kInt64 : in[0].dtype, s}};
    }
    case OpClass::kNormalize: {
      int64_t axis = a.Int("axis");
      Expect(in.size() == 1, "expects 1 input");
      // LayerNorm may read its input through a view (passes/match_norm.cpp).
      IndexMap m = IndexMap::Load(a, "x", in[0].shape);
      Expect(m.InBounds(NumElements(in[0].shape)), "the input view is not within the input");
      Expect(axis >= 0 && axis < static_cast<int64_t>(m.shape.size()), "bad axis");
      if (op == OpKind::kLayerNorm) Expect(IsFloat(in[0].dtype), "LayerNorm expects a float input");
      return {{in[0].dtype, m.shape}};
    }
    case OpClass::kAttention: return {InferAttention(in, a)};
    case OpClass::kSelect: {  // NonMaxSuppression
      const Shape& b = in[0].shape;
      const Shape& sc = in[1].shape;
      Expect(b.size() == 3 && b[2] == 4, "boxes must be [batches, boxes, 4]");
      Expect(sc.size() == 3 && sc[0] == b[0] && sc[2] == b[1],
             "scores must be [batches, classes, boxes]");
      Expect(IsFloat(in[0].dtype) && in[1].dtype == in[0].dtype, "boxes and scores must be float");
      int64_t rows = b[0] * sc[1] * std::min(a.Int("max_per_class"), b[1]);
      return {{DType::kInt64, {rows, 3}}, {DType::kInt64, {}}};
    }
  }
  Fail(ErrorCode::kInternal, "no type inference for {}", info.name);
}

}  // namespace

}  // namespace texel::ir
