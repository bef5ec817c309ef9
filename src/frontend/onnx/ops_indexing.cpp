// Importers for ONNX ops that move elements to or from computed positions: the scatters
// (ScatterElements, the deprecated Scatter, ScatterND), and compositions over them or over
// GatherElements / Gather (ReverseSequence, MaxUnpool, Compress).
#include <algorithm>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

std::string Reduction(NodeImporter& n) {
  std::string r = n.AttrString("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    n.Invalid(fmt::format("unknown reduction '{}' (expected none, add, mul, max or min)", r));
  return r;
}

// Rejects constant indices outside [-dim, dim): dim_of(j) is the axis length that the j-th
// index (row-major) addresses. Run-time indices out of range are skipped by the kernel.
template <typename DimOf>
void CheckConstIndices(NodeImporter& n, const ir::Value* idx, DimOf dim_of) {
  if (!idx->is_constant()) return;
  std::vector<int64_t> v = idx->constant->ToInts();
  for (size_t j = 0; j < v.size(); ++j) {
    int64_t dim = dim_of(j);
    if (v[j] < -dim || v[j] >= dim)
      n.Invalid(fmt::format("input 'indices' ({}): index {} is out of range [{}, {})", idx->name,
                            v[j], -dim, dim));
  }
}

void CheckIndexType(NodeImporter& n, const ir::Value* idx) {
  if (idx->type.dtype != DType::kInt64 && idx->type.dtype != DType::kInt32)
    n.Invalid(fmt::format("indices must be int32 or int64, got {}", DTypeName(idx->type.dtype)));
}

// ScatterElements (opsets 11-18) and Scatter (opsets 9-10, no reduction).
void ScatterElements(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* idx = n.RequiredInput(1);
  ir::Value* upd = n.RequiredInput(2);
  const Shape& xs = x->type.shape;
  const Shape& is = idx->type.shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  int64_t axis = n.Axis("axis", n.AttrInt("axis", 0), rank);
  std::string reduction = n.proto().op_type() == "Scatter" ? "none" : Reduction(n);
  CheckIndexType(n, idx);
  if (upd->type.shape != is) n.Invalid("indices and updates shapes differ");
  if (upd->type.dtype != x->type.dtype) n.Invalid("updates and data types differ");
  if (static_cast<int64_t>(is.size()) != rank) n.Invalid("indices rank differs from data rank");
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && is[d] > xs[d])
      n.Invalid(fmt::format("indices {} do not fit in data {} on axis {}", ShapeStr(is),
                            ShapeStr(xs), d));
  CheckConstIndices(n, idx, [&](size_t) { return xs[axis]; });
  n.SetOutput(0, n.Emit(OpKind::kScatterElements, {x, idx, upd},
                        {{"axis", axis}, {"reduction", reduction}}));
}

void ScatterND(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* idx = n.RequiredInput(1);
  ir::Value* upd = n.RequiredInput(2);
  const Shape& xs = x->type.shape;
  const Shape& is = idx->type.shape;
  std::string reduction = Reduction(n);
  CheckIndexType(n, idx);
  if (is.empty() || is.back() > static_cast<int64_t>(xs.size()))
    n.Invalid("the indices' last dim must be at most the data's rank");
  int64_t k = is.back();
  Shape us(is.begin(), is.end() - 1);
  us.insert(us.end(), xs.begin() + k, xs.end());
  if (upd->type.shape != us)
    n.Invalid(fmt::format("updates shape {} expected {}", ShapeStr(upd->type.shape), ShapeStr(us)));
  if (upd->type.dtype != x->type.dtype) n.Invalid("updates and data types differ");
  CheckConstIndices(n, idx, [&](size_t j) { return xs[j % k]; });
  n.SetOutput(0, n.Emit(OpKind::kScatterND, {x, idx, upd}, {{"reduction", reduction}}));
}

// ReverseSequence: y[.., t, .., b, ..] = x[.., src, .., b, ..] along time_axis with
// src = t < len[b] ? len[b] - 1 - t : t, built from core ops so that sequence_lens may be a
// run-time input (constant lens fold to constant indices).
void ReverseSequence(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* lens = n.RequiredInput(1);
  const Shape& xs = x->type.shape;
  int64_t rank = static_cast<int64_t>(xs.size());
  if (rank < 2) n.Invalid("input must have rank >= 2");
  int64_t b = n.Axis("batch_axis", n.AttrInt("batch_axis", 1), rank);
  int64_t t = n.Axis("time_axis", n.AttrInt("time_axis", 0), rank);
  if (b == t) n.Invalid("batch_axis and time_axis must differ");
  int64_t batch = xs[b], steps = xs[t];
  if (lens->type.shape != Shape{batch})
    n.Invalid(fmt::format("sequence_lens must have shape [{}]", batch));
  if (lens->type.dtype != DType::kInt64 && lens->type.dtype != DType::kInt32)
    n.Invalid("sequence_lens must be int64");
  if (lens->is_constant())
    for (int64_t l : lens->constant->ToInts())
      if (l < 0 || l > steps)
        n.Invalid(fmt::format("sequence_lens value {} is out of range [0, {}]", l, steps));
  if (lens->type.dtype != DType::kInt64)
    lens = n.Emit(OpKind::kCast, {lens}, {{"to", int64_t(DType::kInt64)}});
  Shape bshape(rank, 1), tshape(rank, 1);
  bshape[b] = batch;
  tshape[t] = steps;
  HostTensor iota(DType::kInt64, tshape);
  for (int64_t i = 0; i < steps; ++i) iota.data<int64_t>()[i] = i;
  ir::Value* pos = n.Const(std::move(iota));
  ir::Value* len = n.Reshape(lens, bshape);
  ir::Value* last = n.Emit(OpKind::kSub, {len, n.ConstScalar(DType::kInt64, 1)});
  ir::Value* src = n.Emit(
      OpKind::kWhere, {n.Emit(OpKind::kLess, {pos, len}), n.Emit(OpKind::kSub, {last, pos}), pos});
  if (src->type.shape != xs) src = n.Emit(OpKind::kExpand, {src}, {{"shape", xs}});
  n.SetOutput(0, n.Emit(OpKind::kGatherElements, {x, src}, {{"axis", t}}));
}

// MaxUnpool: X scattered into zeros of the inferred shape at the flat indices I (which count
// N and C too): a ScatterElements over the flattened tensors. An explicit output_shape pads
// that result with zeros at the end of each dim (as the ONNX reference does).
void MaxUnpool(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* idx = n.RequiredInput(1);
  const Shape& xs = x->type.shape;
  if (xs.size() < 3) n.Invalid("input must have rank >= 3 (N, C, spatial...)");
  size_t rank = xs.size(), nsp = rank - 2;
  Shape kernel = n.AttrInts("kernel_shape");
  Shape strides = n.AttrInts("strides", Shape(nsp, 1));
  Shape pads = n.AttrInts("pads", Shape(2 * nsp, 0));
  if (kernel.size() != nsp || strides.size() != nsp || pads.size() != 2 * nsp)
    n.Invalid("kernel_shape, strides or pads do not match the input rank");
  if (idx->type.shape != xs) n.Invalid("indices shape differs from the input shape");
  if (idx->type.dtype != DType::kInt64) n.Invalid("indices must be int64");
  Shape inferred = {xs[0], xs[1]};
  for (size_t i = 0; i < nsp; ++i) {
    int64_t o = (xs[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[nsp + i];
    if (o <= 0) n.Invalid("the output would be empty");
    inferred.push_back(o);
  }
  Shape out = inferred;
  if (n.Input(2)) {
    out = n.ConstInts(2, "output_shape");
    if (out.size() != rank) n.Invalid("output_shape does not match the input rank");
    for (size_t d = 0; d < rank; ++d)
      if (out[d] < inferred[d])
        n.Invalid(fmt::format("output_shape {} is smaller than the unpooled shape {}",
                              ShapeStr(out), ShapeStr(inferred)));
  }
  int64_t total = NumElements(inferred), count = NumElements(xs);
  if (idx->is_constant())
    for (int64_t v : idx->constant->ToInts())
      if (v < 0 || v >= total)
        n.Invalid(fmt::format("input 'indices' ({}): index {} is out of range [0, {})", idx->name,
                              v, total));
  ir::Value* zeros = n.Const(HostTensor(x->type.dtype, {1, total}));
  ir::Value* y = n.Emit(OpKind::kScatterElements,
                        {zeros, n.Reshape(idx, {1, count}), n.Reshape(x, {1, count})},
                        {{"axis", int64_t{1}}, {"reduction", std::string("none")}});
  y = n.Reshape(y, inferred);
  if (out != inferred) {
    std::vector<int64_t> end_pads(2 * rank, 0);
    for (size_t d = 0; d < rank; ++d) end_pads[rank + d] = out[d] - inferred[d];
    y = n.Emit(OpKind::kPad, {y},
               {{"pads", end_pads}, {"value", 0.0}, {"mode", std::string("constant")}});
  }
  n.SetOutput(0, y);
}

// Compress with a compile-time condition: a Gather of the selected positions (an input
// computed at run time is kNotConstant, like every shape-deciding input).
void Compress(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const HostTensor& cond = n.ConstInput(1, "condition");
  if (cond.shape.size() != 1) n.Invalid("condition must be 1-D");
  int64_t axis = 0;
  if (n.HasAttr("axis")) {
    axis = n.Axis("axis", n.AttrInt("axis"), static_cast<int64_t>(x->type.shape.size()));
  } else {
    x = n.Reshape(x, {NumElements(x->type.shape)});  // no axis: the flattened input
  }
  int64_t dim = x->type.shape[axis];
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.size(); ++i) {
    if (!cond.GetInt(i)) continue;
    if (i >= dim)
      n.Invalid(fmt::format("condition selects position {} past the axis length {}", i, dim));
    keep.push_back(i);
  }
  Shape out = x->type.shape;
  out[axis] = static_cast<int64_t>(keep.size());
  if (keep.empty()) {
    n.SetOutput(0, n.Const(HostTensor(x->type.dtype, out)));
    return;
  }
  HostTensor idx(DType::kInt64, {static_cast<int64_t>(keep.size())});
  std::copy(keep.begin(), keep.end(), idx.data<int64_t>());
  n.SetOutput(0, n.Emit(OpKind::kGather, {x, n.Const(std::move(idx))}, {{"axis", axis}}));
}

}  // namespace

void RegisterIndexingOps(Registry& r) {
  r["ScatterElements"] = ScatterElements;
  r["Scatter"] = ScatterElements;
  r["ScatterND"] = ScatterND;
  r["ReverseSequence"] = ReverseSequence;
  r["MaxUnpool"] = MaxUnpool;
  r["Compress"] = Compress;
}

}  // namespace texel::onnx_frontend
