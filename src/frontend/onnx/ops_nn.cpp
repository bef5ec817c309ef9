// Importers for convolution, pooling and normalisation ONNX ops.
#include "frontend/onnx/ops_nn.h"

#include <algorithm>
#include <cmath>

#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/registry.h"

namespace texel::onnx_frontend {
namespace {

using ir::OpKind;

struct Window {
  Shape kernel, strides, dilations, pads;  // pads: [begins..., ends...]
};

// Reads kernel/strides/dilations/pads/auto_pad for a window op over spatial dims of x.
Window ReadWindow(NodeImporter& n, const Shape& x, Shape kernel) {
  size_t nsp = x.size() - 2;
  Window w;
  w.kernel = n.HasAttr("kernel_shape") ? n.AttrInts("kernel_shape") : kernel;
  if (w.kernel.size() != nsp) n.Invalid("kernel_shape does not match the input rank");
  w.strides = n.AttrInts("strides", Shape(nsp, 1));
  w.dilations = n.AttrInts("dilations", Shape(nsp, 1));
  w.pads = n.AttrInts("pads", Shape(2 * nsp, 0));
  if (w.strides.size() != nsp || w.dilations.size() != nsp || w.pads.size() != 2 * nsp)
    n.Invalid("strides, dilations or pads do not match the input rank");
  for (size_t i = 0; i < nsp; ++i)
    if (w.strides[i] < 1 || w.dilations[i] < 1)
      n.Invalid(fmt::format("strides and dilations must be positive, got {} and {}",
                            ShapeStr(w.strides), ShapeStr(w.dilations)));
  std::string auto_pad = n.AttrString("auto_pad", "NOTSET");
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (size_t i = 0; i < nsp; ++i) {
      int64_t out = (x[2 + i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(
          (out - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + 1 - x[2 + i], 0);
      int64_t small = total / 2;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pads[nsp + i] = total - w.pads[i];
    }
  } else if (auto_pad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (auto_pad != "NOTSET") {
    n.Invalid(fmt::format("unknown auto_pad '{}'", auto_pad));
  }
  return w;
}

// Window ops run over 1 to 3 spatial dims (the kernels pad them to 3).
void CheckSpatialRank(NodeImporter& n, const Shape& x) {
  if (x.size() < 3 || x.size() > 5)
    n.Unsupported(fmt::format("{} over a rank-{} input is not supported (1 to 3 spatial dims)",
                              n.proto().op_type(), x.size()));
}

}  // namespace

ir::Value* EmitConv(NodeImporter& n, ir::Value* x, ir::Value* w, ir::Value* b) {
  const Shape& xs = x->type.shape;
  CheckSpatialRank(n, xs);
  if (w->type.shape.size() != xs.size()) n.Invalid("weight rank differs from input rank");
  Window win = ReadWindow(n, xs, Shape(w->type.shape.begin() + 2, w->type.shape.end()));
  if (win.kernel != Shape(w->type.shape.begin() + 2, w->type.shape.end()))
    n.Invalid("kernel_shape differs from the weight's shape");
  int64_t group = n.AttrInt("group", 1);
  std::vector<ir::Value*> ins = {x, w};
  if (b) ins.push_back(b);
  return n.Emit(OpKind::kConv, ins,
                {{"strides", win.strides},
                 {"pads", win.pads},
                 {"dilations", win.dilations},
                 {"group", group}});
}

namespace {

void Conv(NodeImporter& n) {
  n.SetOutput(0, EmitConv(n, n.RequiredInput(0), n.RequiredInput(1), n.Input(2)));
}

// Floor division (the ONNX reference's Python semantics, for negative total padding).
int64_t FloorDiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// ConvTranspose (opsets 1-17). W is [C, M / group, k...]. Explicit output_shape, or
// auto_pad SAME_* (output_shape = input * stride), generate the pads per the spec:
// total = stride * (in - 1) + output_padding + ((k - 1) * dilation + 1) - output_shape;
// SAME_UPPER: begin = total / 2, end = total - begin; otherwise end = total / 2,
// begin = total - end. A negative total (a larger output) pads with zeros.
void ConvTranspose(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  ir::Value* w = n.RequiredInput(1);
  ir::Value* b = n.Input(2);
  const Shape& xs = x->type.shape;
  const Shape& ws = w->type.shape;
  CheckSpatialRank(n, xs);
  size_t nsp = xs.size() - 2;
  if (ws.size() != xs.size()) n.Invalid("weight rank differs from input rank");
  Shape kernel(ws.begin() + 2, ws.end());
  if (n.HasAttr("kernel_shape") && n.AttrInts("kernel_shape") != kernel)
    n.Invalid("kernel_shape differs from the weight's shape");
  Shape strides = n.AttrInts("strides", Shape(nsp, 1));
  Shape dilations = n.AttrInts("dilations", Shape(nsp, 1));
  Shape pads = n.AttrInts("pads", Shape(2 * nsp, 0));
  Shape out_pad = n.AttrInts("output_padding", Shape(nsp, 0));
  if (strides.size() != nsp || dilations.size() != nsp || pads.size() != 2 * nsp ||
      out_pad.size() != nsp)
    n.Invalid("strides, dilations, pads or output_padding do not match the input rank");
  int64_t group = n.AttrInt("group", 1);
  if (group <= 0 || ws[0] != xs[1] || xs[1] % group != 0)
    n.Invalid(fmt::format("input channels {} and weight {} do not match group {}", xs[1],
                          ShapeStr(ws), group));
  std::string auto_pad = n.AttrString("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" &&
      auto_pad != "VALID")
    n.Invalid(fmt::format("unknown auto_pad '{}'", auto_pad));
  Shape out_shape = n.AttrInts("output_shape", Shape{});
  if (out_shape.size() == nsp + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != nsp)
    n.Invalid("output_shape does not match the input rank");
  if (out_shape.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (size_t i = 0; i < nsp; ++i) out_shape.push_back(xs[2 + i] * strides[i]);
  if (!out_shape.empty()) {
    for (size_t i = 0; i < nsp; ++i) {
      int64_t total = strides[i] * (xs[2 + i] - 1) + out_pad[i] +
                      ((kernel[i] - 1) * dilations[i] + 1) - out_shape[i];
      int64_t half = FloorDiv2(total);
      pads[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      pads[nsp + i] = total - pads[i];
    }
  } else if (auto_pad == "VALID") {
    std::fill(pads.begin(), pads.end(), 0);
  }
  std::vector<ir::Value*> ins = {x, w};
  if (b) ins.push_back(b);
  n.SetOutput(0, n.Emit(OpKind::kConvTranspose, ins,
                        {{"strides", strides},
                         {"pads", pads},
                         {"dilations", dilations},
                         {"group", group},
                         {"output_padding", out_pad}}));
}

template <OpKind kOp>
void Pool(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& xs = x->type.shape;
  CheckSpatialRank(n, xs);
  // storage_order only orders MaxPool's Indices output.
  int64_t storage_order = n.AttrInt("storage_order", 0);
  if (storage_order != 0 && storage_order != 1)
    n.Invalid(fmt::format("storage_order must be 0 or 1, got {}", storage_order));
  Window win = ReadWindow(n, xs, {});
  int64_t ceil_mode = n.AttrInt("ceil_mode", 0);
  int64_t count_include_pad = n.AttrInt("count_include_pad", 0);
  ir::Attrs attrs = {{"kernel", win.kernel},
                     {"strides", win.strides},
                     {"pads", win.pads},
                     {"dilations", win.dilations},
                     {"ceil_mode", ceil_mode}};
  if (kOp == OpKind::kAveragePool) attrs.Set("count_include_pad", count_include_pad);
  n.SetOutput(0, n.Emit(kOp, {x}, attrs));
  if (kOp == OpKind::kMaxPool && n.num_outputs() > 1 && !n.proto().output(1).empty()) {
    attrs.Set("storage_order", storage_order);  // Indices: a second kernel over the windows
    n.SetOutput(1, n.Emit(OpKind::kMaxPoolIndices, {x}, attrs));
  }
}

// GlobalAveragePool / GlobalMaxPool: a reduction over all spatial dims, keeping them.
template <OpKind kReduce>
void GlobalPool(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  std::vector<int64_t> axes;
  for (size_t d = 2; d < x->type.shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  if (axes.empty()) n.Invalid("input must have spatial dims");
  n.SetOutput(0, n.Emit(kReduce, {x}, {{"axes", axes}, {"keepdims", int64_t{1}}}));
}

// Normalises x over `axes`: (x - mean) / sqrt(var + eps), with mean and var kept as [.., 1, ..].
// Returns the normalised value; mean, inv_std (1 / sqrt(var + eps)) and var through the pointers.
ir::Value* Standardize(NodeImporter& n, ir::Value* x, const std::vector<int64_t>& axes, double eps,
                       ir::Value** mean_out = nullptr, ir::Value** inv_std_out = nullptr,
                       ir::Value** var_out = nullptr) {
  ir::Attrs keep = {{"axes", axes}, {"keepdims", int64_t{1}}};
  DType t = x->type.dtype;
  ir::Value* mean = n.Emit(OpKind::kReduceMean, {x}, keep);
  ir::Value* d = n.Emit(OpKind::kSub, {x, mean});
  ir::Value* var = n.Emit(OpKind::kReduceMean, {n.Emit(OpKind::kMul, {d, d})}, keep);
  ir::Value* inv_std =
      n.Emit(OpKind::kReciprocal,
             {n.Emit(OpKind::kSqrt, {n.Emit(OpKind::kAdd, {var, n.ConstScalar(t, eps)})})});
  if (mean_out) *mean_out = mean;
  if (inv_std_out) *inv_std_out = inv_std;
  if (var_out) *var_out = var;
  return n.Emit(OpKind::kMul, {d, inv_std});
}

// BatchNormalization. Inference: y = x * s + t with s = scale / sqrt(var + eps) and
// t = bias - mean * s per channel (axis 1), folded on the host for constant statistics.
// Training mode (opset 14+): normalise with the batch statistics (population variance) and also
// return the running statistics updated with `momentum`, as the ONNX reference does.
void BatchNormalization(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  double eps = n.AttrFloat("epsilon", 1e-5);
  double momentum = n.AttrFloat("momentum", 0.9);
  if (n.AttrInt("spatial", 1) != 1) n.Unsupported("spatial=0 is not supported");
  bool training = n.AttrInt("training_mode", 0) != 0;
  n.AttrInt("is_test", 1);
  if (!training)
    for (size_t i = 1; i < n.num_outputs(); ++i)
      if (!n.proto().output(static_cast<int>(i)).empty())
        n.Unsupported("running mean / variance outputs exist only in training mode");
  const Shape& xs = x->type.shape;
  if (xs.size() < 2) n.Invalid("input must have rank >= 2");
  Shape pshape(xs.size() - 1, 1);
  pshape[0] = xs[1];
  auto param = [&](size_t i) {
    ir::Value* p = n.RequiredInput(i);
    if (p->type.shape != Shape{xs[1]}) n.Invalid(fmt::format("input {} must have shape [C]", i));
    return n.Reshape(p, pshape);
  };
  ir::Value* scale = param(1);
  ir::Value* bias = param(2);
  DType t = x->type.dtype;
  if (training) {
    std::vector<int64_t> axes = {0};
    for (size_t d = 2; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    ir::Value *batch_mean = nullptr, *batch_var = nullptr;
    ir::Value* y = Standardize(n, x, axes, eps, &batch_mean, nullptr, &batch_var);
    n.SetOutput(0, n.Emit(OpKind::kAdd, {n.Emit(OpKind::kMul, {y, scale}), bias}));
    // Running statistics, shaped [C]: running * momentum + batch * (1 - momentum).
    auto blend = [&](size_t input, ir::Value* batch) {
      ir::Value* a = n.Emit(OpKind::kMul, {n.RequiredInput(input), n.ConstScalar(t, momentum)});
      ir::Value* b =
          n.Emit(OpKind::kMul, {n.Reshape(batch, {xs[1]}), n.ConstScalar(t, 1 - momentum)});
      return n.Emit(OpKind::kAdd, {a, b});
    };
    n.SetOutput(1, blend(3, batch_mean));
    n.SetOutput(2, blend(4, batch_var));
    return;
  }
  ir::Value* mean = param(3);
  ir::Value* var = param(4);
  ir::Value* s =
      n.Emit(OpKind::kDiv,
             {scale, n.Emit(OpKind::kSqrt, {n.Emit(OpKind::kAdd, {var, n.ConstScalar(t, eps)})})});
  ir::Value* sh = n.Emit(OpKind::kSub, {bias, n.Emit(OpKind::kMul, {mean, s})});
  n.SetOutput(0, n.Emit(OpKind::kAdd, {n.Emit(OpKind::kMul, {x, s}), sh}));
}

// LayerNormalization (opset 17): normalise over dims >= axis, then scale and bias.
void LayerNormalization(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  int64_t axis = n.Axis("axis", n.AttrInt("axis", -1), rank);
  double eps = n.AttrFloat("epsilon", 1e-5);
  if (n.AttrInt("stash_type", 1) != 1)
    n.Unsupported("stash_type other than float is not supported");
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  ir::Value* mean = nullptr;
  ir::Value* inv_std = nullptr;
  ir::Value* y = Standardize(n, x, axes, eps, &mean, &inv_std);
  y = n.Emit(OpKind::kMul, {y, n.RequiredInput(1)});
  if (ir::Value* b = n.Input(2)) y = n.Emit(OpKind::kAdd, {y, b});
  n.SetOutput(0, y);
  n.SetOutput(1, mean);
  n.SetOutput(2, inv_std);
}

// InstanceNormalization: normalise each (n, c) plane over the spatial dims; scale/bias per c.
void InstanceNormalization(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  const Shape& xs = x->type.shape;
  if (xs.size() < 3) n.Invalid("input must have rank >= 3");
  std::vector<int64_t> axes;
  for (size_t d = 2; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  ir::Value* y = Standardize(n, x, axes, n.AttrFloat("epsilon", 1e-5));
  Shape pshape(xs.size() - 1, 1);
  pshape[0] = xs[1];
  y = n.Emit(OpKind::kMul, {y, n.Reshape(n.RequiredInput(1), pshape)});
  n.SetOutput(0, n.Emit(OpKind::kAdd, {y, n.Reshape(n.RequiredInput(2), pshape)}));
}

// MeanVarianceNormalization: (x - mean) / sqrt(var) over axes (default N, H, W); ONNX adds
// no epsilon beyond 1e-9.
void MeanVarianceNormalization(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  std::vector<int64_t> axes = n.AttrInts("axes", std::vector<int64_t>{0, 2, 3});
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) n.Invalid(fmt::format("axis {} out of range", a));
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  n.SetOutput(0, Standardize(n, x, axes, 1e-9));
}

// LpNormalization: x / norm_p(x) along axis (p = 1 or 2).
void LpNormalization(NodeImporter& n) {
  ir::Value* x = n.RequiredInput(0);
  int64_t rank = static_cast<int64_t>(x->type.shape.size());
  int64_t axis = n.Axis("axis", n.AttrInt("axis", -1), rank), p = n.AttrInt("p", 2);
  if (p != 1 && p != 2) n.Invalid("p must be 1 or 2");
  ir::Attrs keep = {{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{1}}};
  ir::Value* norm =
      p == 1 ? n.Emit(OpKind::kReduceSum, {n.Emit(OpKind::kAbs, {x})}, keep)
             : n.Emit(OpKind::kSqrt,
                      {n.Emit(OpKind::kReduceSum, {n.Emit(OpKind::kMul, {x, x})}, keep)});
  n.SetOutput(0, n.Emit(OpKind::kDiv, {x, norm}));
}

}  // namespace

void RegisterNnOps(Registry& r) {
  r["LayerNormalization"] = LayerNormalization;
  r["InstanceNormalization"] = InstanceNormalization;
  r["MeanVarianceNormalization"] = MeanVarianceNormalization;
  r["LpNormalization"] = LpNormalization;
  r["Conv"] = Conv;
  r["ConvTranspose"] = ConvTranspose;
  r["MaxPool"] = Pool<OpKind::kMaxPool>;
  r["AveragePool"] = Pool<OpKind::kAveragePool>;
  r["GlobalAveragePool"] = GlobalPool<OpKind::kReduceMean>;
  r["GlobalMaxPool"] = GlobalPool<OpKind::kReduceMax>;
  r["BatchNormalization"] = BatchNormalization;
}

}  // namespace texel::onnx_frontend
