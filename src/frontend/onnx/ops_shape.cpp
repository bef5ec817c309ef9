// Importers for shape and data-movement ONNX ops. Shapes are static: shape operands must be
// compile-time constants, which the importer's eager folding makes of Shape -> ... chains.
#include <algorithm>
#include <limits>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"
#include "frontend/onnx/tensor_proto.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

HostTensor Ints1D(const std::vector<int64_t>& v) {
  HostTensor t(DType::kInt64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

void Reshape(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  std::vector<int64_t> shape =
      n.opset() < 5 ? n.AttrInts("shape") : n.ConstInts(1, "the target shape");
  bool allow_zero = n.AttrInt("allowzero", 0) != 0;
  const Shape& xs = x->type.shape;
  int64_t infer = -1;
  Shape known_dims;  // every dim but the one to infer
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (i >= xs.size()) n.Invalid("a 0 in the target shape has no input dim to copy");
      shape[i] = xs[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) n.Invalid("the target shape has more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      n.Invalid(fmt::format("bad target dim {}", shape[i]));
    } else {
      known_dims.push_back(shape[i]);
    }
  }
  // Zeros first, then overflow (an error naming the node): as NumElements counts.
  const int64_t known = NumElements(known_dims);
  if (infer >= 0) {
    if (known == 0 || NumElements(xs) % known != 0)
      n.Invalid(fmt::format("cannot reshape {} to {}", ShapeStr(xs), ShapeStr(shape)));
    shape[infer] = NumElements(xs) / known;
  }
  if (NumElements(shape) != NumElements(xs))
    n.Invalid(fmt::format("cannot reshape {} to {}", ShapeStr(xs), ShapeStr(shape)));
  n.SetOutput(0, n.Emit(OpKind::kReshape, {x}, {{"shape", shape}}));
}

void Flatten(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  int64_t axis = n.AttrInt("axis", 1);
  if (axis < -rank || axis > rank) n.Invalid(fmt::format("axis {} out of range", axis));
  if (axis < 0) axis += rank;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer = CheckedMul(outer, x->type.shape[d], "Flatten");
  Shape s = {outer, outer == 0 ? 0 : NumElements(x->type.shape) / std::max<int64_t>(outer, 1)};
  n.SetOutput(0, n.Emit(OpKind::kReshape, {x}, {{"shape", s}}));
}

std::vector<int64_t> AxesOf(NodeImporter& n, size_t input, bool attr_form) {
  if (attr_form) return n.AttrInts("axes", std::vector<int64_t>{});
  if (!n.Input(input)) return {};
  return n.ConstInts(input, "axes");
}

void Squeeze(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& xs = x->type.shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<int64_t> axes = AxesOf(n, 1, n.opset() < 13);
  std::vector<bool> drop(xs.size(), false);
  if (axes.empty()) {
    for (size_t d = 0; d < xs.size(); ++d) drop[d] = xs[d] == 1;
  }
  for (int64_t a : axes) {
    int64_t d = n.Axis("axis", a, rank);
    if (xs[d] != 1) n.Invalid(fmt::format("cannot squeeze axis {} of size {}", a, xs[d]));
    drop[d] = true;
  }
  Shape s;
  for (size_t d = 0; d < xs.size(); ++d)
    if (!drop[d]) s.push_back(xs[d]);
  n.SetOutput(0, n.Emit(OpKind::kReshape, {x}, {{"shape", s}}));
}

void Unsqueeze(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  std::vector<int64_t> axes = AxesOf(n, 1, n.opset() < 13);
  int64_t out_rank = static_cast<int64_t>(x->type.shape.size() + axes.size());
  std::vector<bool> is_new(out_rank, false);
  for (int64_t a : axes) {
    int64_t d = n.Axis("axis", a, out_rank);
    if (is_new[d]) n.Invalid("repeated axis");
    is_new[d] = true;
  }
  Shape s;
  size_t k = 0;
  for (int64_t d = 0; d < out_rank; ++d) s.push_back(is_new[d] ? 1 : x->type.shape[k++]);
  n.SetOutput(0, n.Emit(OpKind::kReshape, {x}, {{"shape", s}}));
}

void Transpose(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  std::vector<int64_t> perm;
  for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  perm = n.AttrInts("perm", perm);
  for (int64_t& p : perm) p = n.Axis("axis", p, rank);
  n.SetOutput(0, n.Emit(OpKind::kTranspose, {x}, {{"perm", perm}}));
}

void Concat(NodeImporter& n) {
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < n.num_inputs(); ++i) ins.push_back(n.RequiredInput(i));
  if (ins.empty()) n.Invalid("needs inputs");
  int64_t rank = static_cast<int64_t>(ins[0]->type.shape.size());
  int64_t axis = n.Axis("axis", n.opset() < 4 ? n.AttrInt("axis", 1) : n.AttrInt("axis"), rank);
  // Empty inputs contribute nothing and would make zero-sized kernels.
  std::vector<ir::Value*> kept;
  for (ir::Value* v : ins)
    if (NumElements(v->type.shape) > 0) kept.push_back(v);
  if (kept.empty()) kept.push_back(ins[0]);
  if (kept.size() == 1 && kept[0]->type.shape[axis] > 0) {
    n.SetOutput(0, n.Emit(OpKind::kCopy, {kept[0]}));
    return;
  }
  n.SetOutput(0, n.Emit(OpKind::kConcat, kept, {{"axis", axis}}));
}

// A slice of x along axis [start, start + size) with the given step; other axes whole.
ir::Value* SliceAxis(NodeImporter& n, ir::Value* x, int64_t axis, int64_t start, int64_t size,
                     int64_t step) {
  size_t rank = x->type.shape.size();
  Shape starts(rank, 0), steps(rank, 1), sizes = x->type.shape;
  starts[axis] = start;
  steps[axis] = step;
  sizes[axis] = size;
  return n.Emit(OpKind::kSlice, {x}, {{"starts", starts}, {"steps", steps}, {"sizes", sizes}});
}

void Split(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  int64_t axis = n.Axis("axis", n.AttrInt("axis", 0), rank);
  std::vector<int64_t> split;
  if (n.opset() < 13)
    split = n.AttrInts("split", std::vector<int64_t>{});
  else if (n.Input(1))
    split = n.ConstInts(1, "split");
  int64_t dim = x->type.shape[axis];
  size_t outs = n.num_outputs();
  if (split.empty()) {
    if (outs == 0 || dim % static_cast<int64_t>(outs) != 0)
      n.Invalid(fmt::format("cannot split {} into {} equal parts", dim, outs));
    split.assign(outs, dim / static_cast<int64_t>(outs));
  }
  if (split.size() != outs) n.Invalid("split has a different count than the outputs");
  int64_t start = 0;
  for (size_t i = 0; i < outs; ++i) {
    if (split[i] < 0 || start + split[i] > dim) n.Invalid("split sizes exceed the axis");
    n.SetOutput(i, SliceAxis(n, x, axis, start, split[i], 1));
    start += split[i];
  }
  if (start != dim) n.Invalid("split sizes do not add up to the axis");
}

// ONNX Slice with numpy clamping rules, normalised to start/step/size per axis.
void Slice(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& xs = x->type.shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.AttrInts("starts");
    ends = n.AttrInts("ends");
    axes = n.AttrInts("axes", std::vector<int64_t>{});
  } else {
    starts = n.ConstInts(1, "starts");
    ends = n.ConstInts(2, "ends");
    if (n.Input(3)) axes = n.ConstInts(3, "axes");
    if (n.Input(4)) steps = n.ConstInts(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.Invalid("starts, ends, axes and steps differ in length");
  Shape st(rank, 0), sp(rank, 1), sz = xs;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = n.Axis("axis", axes[i], rank), dim = xs[a], step = steps[i];
    if (step == 0) n.Invalid("step 0");
    auto clampi = [](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); };
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e =
        ends[i] < 0 && ends[i] > std::numeric_limits<int64_t>::min() / 2 ? ends[i] + dim : ends[i];
    if (step > 0) {
      s = clampi(s, 0, dim);
      e = clampi(e, 0, dim);
    } else {
      s = clampi(s, 0, dim - 1);
      e = clampi(e, -1, dim - 1);
    }
    int64_t size = step > 0 ? std::max<int64_t>(0, (e - s + step - 1) / step)
                            : std::max<int64_t>(0, (s - e + (-step) - 1) / (-step));
    st[a] = size > 0 ? s : 0;
    sp[a] = step;
    sz[a] = size;
  }
  n.SetOutput(0, n.Emit(OpKind::kSlice, {x}, {{"starts", st}, {"steps", sp}, {"sizes", sz}}));
}

void Gather(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* idx = n.RequiredInput(1);
  int64_t axis = n.Axis("axis", n.AttrInt("axis", 0), static_cast<int64_t>(x->type.shape.size()));
  if (idx->is_constant()) {  // reject out-of-range constant indices at compile time
    int64_t dim = x->type.shape[axis];
    for (int64_t v : idx->constant->ToInts())
      if (v < -dim || v >= dim)
        n.Invalid(fmt::format("index {} is out of range [{}, {})", v, -dim, dim));
  }
  n.SetOutput(0, n.Emit(OpKind::kGather, {x, idx}, {{"axis", axis}}));
}

void Pad(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  std::string mode = n.AttrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    n.Invalid(fmt::format("unknown pad mode '{}'", mode));
  std::vector<int64_t> pads;
  double value = 0;
  if (n.opset() < 11) {
    pads = n.AttrInts(n.opset() < 2 ? "paddings" : "pads");
    value = n.AttrFloat("value", 0.0);
  } else {
    pads = n.ConstInts(1, "pads");
    if (n.Input(2)) value = n.ConstInput(2, "constant_value").GetDouble(0);
  }
  size_t rank = x->type.shape.size();
  if (pads.size() != 2 * rank) n.Invalid("pads must have twice the input's rank");
  for (size_t d = 0; d < rank; ++d) {
    if (mode == "reflect" && (pads[d] >= x->type.shape[d] || pads[d + rank] >= x->type.shape[d]))
      n.Unsupported("reflect padding wider than the input");
    if (mode != "constant" && x->type.shape[d] == 0) n.Invalid("cannot pad an empty axis");
  }
  n.SetOutput(0, n.Emit(OpKind::kPad, {x}, {{"pads", pads}, {"value", value}, {"mode", mode}}));
}

void ShapeOp(NodeImporter& n) {
  const Shape& s = n.RequiredInput(0)->type.shape;
  int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = n.AttrInt("start", 0), end = n.AttrInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  n.SetOutput(
      0,
      n.Const(Ints1D(std::vector<int64_t>(s.begin() + start, s.begin() + std::max(start, end)))));
}

void Size(NodeImporter& n) {
  HostTensor t(DType::kInt64, {});
  t.data<int64_t>()[0] = NumElements(n.RequiredInput(0)->type.shape);
  n.SetOutput(0, n.Const(std::move(t)));
}

void Constant(NodeImporter& n) {
  const auto& attrs = n.proto().attribute();
  if (attrs.size() != 1) n.Invalid("Constant needs exactly one value attribute");
  const std::string& key = attrs[0].name();
  HostTensor t;
  if (key == "value") {
    t = TensorFromProto(n.AttrTensor("value"), ".");
  } else if (key == "value_float") {
    t = HostTensor(DType::kFloat32, {});
    t.data<float>()[0] = static_cast<float>(n.AttrFloat(key));
  } else if (key == "value_int") {
    t = Ints1D({n.AttrInt(key)});
    t.shape = {};
  } else if (key == "value_ints") {
    t = Ints1D(n.AttrInts(key));
  } else if (key == "value_floats") {
    std::vector<double> v = n.AttrFloats(key);
    t = HostTensor(DType::kFloat32, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = static_cast<float>(v[i]);
  } else {
    n.Unsupported(fmt::format("Constant with '{}' is not supported", key));
  }
  n.SetOutput(0, n.Const(std::move(t)));
}

void ConstantOfShape(NodeImporter& n) {
  Shape s = n.ConstInts(0, "shape");
  HostTensor v(DType::kFloat32, {1});
  if (n.HasAttr("value")) v = TensorFromProto(n.AttrTensor("value"), ".");
  HostTensor t(v.dtype, s);
  size_t es = DTypeSize(v.dtype);
  for (int64_t i = 0; i < t.size(); ++i) std::memcpy(&t.bytes[i * es], v.bytes.data(), es);
  n.SetOutput(0, n.Const(std::move(t)));
}

void Expand(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  Shape target = n.ConstInts(1, "shape");
  Shape s = BroadcastShapes(x->type.shape, target);  // ONNX Expand broadcasts both ways
  if (s == x->type.shape) {
    n.SetOutput(0, n.Emit(OpKind::kCopy, {x}));
    return;
  }
  n.SetOutput(0, n.Emit(OpKind::kExpand, {x}, {{"shape", s}}));
}

void Range(NodeImporter& n) {
  const HostTensor& start = n.ConstInput(0, "start");
  const HostTensor& limit = n.ConstInput(1, "limit");
  const HostTensor& delta = n.ConstInput(2, "delta");
  double s = start.GetDouble(0), l = limit.GetDouble(0), d = delta.GetDouble(0);
  if (d == 0) n.Invalid("delta is 0");
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
  HostTensor t(start.dtype, {count});
  for (int64_t i = 0; i < count; ++i) {
    if (IsFloat(t.dtype)) {
      VisitDType(t.dtype, [&](auto z) {
        t.data<decltype(z)>()[i] = static_cast<decltype(z)>(s + static_cast<double>(i) * d);
      });
    } else {
      int64_t v = start.GetInt(0) + i * delta.GetInt(0);
      VisitDType(t.dtype, [&](auto z) { t.data<decltype(z)>()[i] = static_cast<decltype(z)>(v); });
    }
  }
  n.SetOutput(0, n.Const(std::move(t)));
}

void GatherElements(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* idx = n.RequiredInput(1);
  int64_t axis = n.Axis("axis", n.AttrInt("axis", 0), static_cast<int64_t>(x->type.shape.size()));
  if (idx->is_constant()) {
    int64_t dim = x->type.shape[axis];
    for (int64_t v : idx->constant->ToInts())
      if (v < -dim || v >= dim)
        n.Invalid(fmt::format("index {} is out of range [{}, {})", v, -dim, dim));
  }
  n.SetOutput(0, n.Emit(OpKind::kGatherElements, {x, idx}, {{"axis", axis}}));
}

// Tile(x, reps) = Reshape(Expand(Reshape(x, [1, d0, 1, d1, ...]), [r0, d0, r1, d1, ...]),
//                         [r0 * d0, r1 * d1, ...]).
void Tile(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  std::vector<int64_t> reps = n.ConstInts(1, "repeats");
  const Shape& xs = x->type.shape;
  if (reps.size() != xs.size()) n.Invalid("repeats must have one entry per input dim");
  Shape split, expanded, out;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (reps[d] < 0) n.Invalid("negative repeat");
    split.insert(split.end(), {1, xs[d]});
    expanded.insert(expanded.end(), {reps[d], xs[d]});
    out.push_back(CheckedMul(reps[d], xs[d], "Tile's output"));
  }
  if (NumElements(out) == 0 || out == xs) {
    n.SetOutput(0, NumElements(out) == 0 ? n.Const(HostTensor(x->type.dtype, out))
                                         : n.Emit(OpKind::kCopy, {x}));
    return;
  }
  ir::Value* e = n.Emit(OpKind::kExpand, {n.Reshape(x, split)}, {{"shape", expanded}});
  n.SetOutput(0, n.Reshape(e, out));
}

// Trilu: keeps the lower (upper=0) or upper triangle of the last two dims, shifted by k; the
// mask is a compile-time constant, applied with Where.
void Trilu(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& xs = x->type.shape;
  if (xs.size() < 2) n.Invalid("input must have rank >= 2");
  int64_t k = n.Input(1) ? n.ConstInput(1, "k").GetInt(0) : 0;
  bool upper = n.AttrInt("upper", 1) != 0;
  int64_t rows = xs[xs.size() - 2], cols = xs.back();
  HostTensor mask(DType::kBool, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.data<uint8_t>()[i * cols + j] = upper ? (j - i >= k) : (j - i <= k);
  ir::Value* zero = n.ConstScalar(x->type.dtype, 0.0);
  if (NumElements(xs) == 0) {
    n.SetOutput(0, n.Emit(OpKind::kCopy, {x}));
    return;
  }
  n.SetOutput(0, n.Emit(OpKind::kWhere, {n.Const(std::move(mask)), x, zero}));
}

// OneHot(indices, depth, values): values[1] where the index (negative wraps) equals the
// position along the new axis, values[0] elsewhere.
void OneHot(NodeImporter& n) {
  ir::Value* idx = n.RequiredInput(0);
  int64_t depth = static_cast<int64_t>(n.ConstInput(1, "depth").GetDouble(0));
  ir::Value* values = n.RequiredInput(2);
  if (NumElements(values->type.shape) != 2) n.Invalid("values must hold two elements");
  int64_t rank = static_cast<int64_t>(idx->type.shape.size()) + 1;
  int64_t axis = n.Axis("axis", n.AttrInt("axis", -1), rank);
  // Indices as int64 with negatives wrapped: i + depth * (i < 0).
  ir::Value* i = idx->type.dtype == DType::kInt64
                     ? idx
                     : n.Emit(OpKind::kCast, {idx}, {{"to", int64_t(DType::kInt64)}});
  ir::Value* d = n.ConstScalar(DType::kInt64, static_cast<double>(depth));
  ir::Value* neg = n.Emit(OpKind::kLess, {i, n.ConstScalar(DType::kInt64, 0)});
  i = n.Emit(OpKind::kWhere, {neg, n.Emit(OpKind::kAdd, {i, d}), i});
  Shape ishape = idx->type.shape;
  ishape.insert(ishape.begin() + axis, 1);
  Shape iota_shape(rank, 1);
  iota_shape[axis] = depth;
  HostTensor iota(DType::kInt64, iota_shape);
  for (int64_t k = 0; k < depth; ++k) iota.data<int64_t>()[k] = k;
  ir::Value* hit = n.Emit(OpKind::kEqual, {n.Reshape(i, ishape), n.Const(std::move(iota))});
  ir::Value* off = n.Emit(OpKind::kSlice, {values},
                          {{"starts", Shape{0}}, {"steps", Shape{1}}, {"sizes", Shape{1}}});
  ir::Value* on = n.Emit(OpKind::kSlice, {values},
                         {{"starts", Shape{1}}, {"steps", Shape{1}}, {"sizes", Shape{1}}});
  n.SetOutput(0, n.Emit(OpKind::kWhere, {hit, on, off}));
}

// EyeLike: ones on the k-th diagonal of a 2-D tensor shaped like the input: a constant.
void EyeLike(NodeImporter& n) {
  const ir::Value* x = n.RequiredInput(0);
  if (x->type.shape.size() != 2) n.Invalid("input must be 2-D");
  DType dt = x->type.dtype;
  if (n.HasAttr("dtype") && !DTypeFromOnnx(static_cast<int>(n.AttrInt("dtype")), &dt))
    n.Unsupported("this dtype is not supported");
  int64_t k = n.AttrInt("k", 0), rows = x->type.shape[0], cols = x->type.shape[1];
  HostTensor eye(DType::kFloat64, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) eye.data<double>()[i * cols + j] = j - i == k ? 1.0 : 0.0;
  n.SetOutput(0, n.Emit(OpKind::kCast, {n.Const(std::move(eye))}, {{"to", int64_t(dt)}}));
}

void GatherND(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* idx = n.RequiredInput(1);
  int64_t b = n.AttrInt("batch_dims", 0);
  const Shape& xs = x->type.shape;
  const Shape& is = idx->type.shape;
  if (is.empty() || b < 0 || b >= static_cast<int64_t>(is.size()) ||
      b + is.back() > static_cast<int64_t>(xs.size()))
    n.Invalid("indices do not fit the data's rank and batch_dims");
  for (int64_t d = 0; d < b; ++d)
    if (xs[d] != is[d]) n.Invalid("batch dims of data and indices differ");
  n.SetOutput(0, n.Emit(OpKind::kGatherND, {x, idx}, {{"batch_dims", b}}));
}

// TopK: the indices of the k best elements along axis (a rank-selection kernel), then the
// values with GatherElements.
void TopK(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  int64_t axis = n.Axis("axis", n.AttrInt("axis", -1), rank);
  int64_t k = n.opset() < 10 ? n.AttrInt("k") : n.ConstInput(1, "k").GetInt(0);
  if (k < 0 || k > x->type.shape[axis]) n.Invalid(fmt::format("k = {} is out of range", k));
  n.AttrInt("sorted", 1);  // the kernel always returns sorted results, which is allowed
  ir::Value* idx = n.Emit(OpKind::kTopKIndices, {x},
                          {{"axis", axis}, {"k", k}, {"largest", n.AttrInt("largest", 1)}});
  n.SetOutput(0, n.Emit(OpKind::kGatherElements, {x, idx}, {{"axis", axis}}));
  n.SetOutput(1, idx);
}

}  // namespace

void RegisterShapeOps(Registry& r) {
  r["EyeLike"] = EyeLike;
  r["GatherND"] = GatherND;
  r["TopK"] = TopK;
  r["GatherElements"] = GatherElements;
  r["Tile"] = Tile;
  r["Trilu"] = Trilu;
  r["OneHot"] = OneHot;
  r["Reshape"] = Reshape;
  r["Flatten"] = Flatten;
  r["Squeeze"] = Squeeze;
  r["Unsqueeze"] = Unsqueeze;
  r["Transpose"] = Transpose;
  r["Concat"] = Concat;
  r["Split"] = Split;
  r["Slice"] = Slice;
  r["Gather"] = Gather;
  r["Pad"] = Pad;
  r["Shape"] = ShapeOp;
  r["Size"] = Size;
  r["Constant"] = Constant;
  r["ConstantOfShape"] = ConstantOfShape;
  r["Expand"] = Expand;
  r["Range"] = Range;
}

}  // namespace texel::onnx_frontend
