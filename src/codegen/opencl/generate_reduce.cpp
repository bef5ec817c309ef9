// Reductions (kernels/reduce.cl) and the softmax family (kernels/softmax.cl).
#include <algorithm>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

// Statements that turn flat index `var` over `dims` into an offset added to `acc` using the
// input strides of those dims.
std::string FlatToOffset(const char* var, const char* acc, const std::vector<int64_t>& dims,
                         const std::vector<int64_t>& strides) {
  std::string s = fmt::format("long q = {};", var);
  for (size_t k = dims.size(); k-- > 0;)
    s += fmt::format(" {} += (q % {}) * {}; q /= {};", acc, dims[k], strides[k], dims[k]);
  return s;
}

}  // namespace

KernelSpec GenerateReduce(const ir::Node& n, const std::string& kernel_name,
                          const Chain& epilogue) {
  const ir::Value* x = n.inputs[0];
  DType t = x->type.dtype;
  bool is_float = IsFloat(t);
  if (!is_float && (t != DType::kInt32 && t != DType::kInt64))
    Fail(ErrorCode::kUnsupported, "{} on {} is not supported on the device", OpName(n.op),
         DTypeName(t));
  if (!is_float && (n.op == ir::OpKind::kReduceMean || n.op == ir::OpKind::kArgMax ||
                    n.op == ir::OpKind::kArgMin))
    Fail(ErrorCode::kUnsupported, "ReduceMean on integers is not supported on the device");
  const Shape& xs = x->type.shape;
  std::vector<int64_t> xst = Strides(xs);
  const auto& axes = n.attrs.Ints("axes");
  std::vector<int64_t> kept_dims, kept_st, red_dims, red_st;
  for (size_t d = 0; d < xs.size(); ++d) {
    bool red = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    (red ? red_dims : kept_dims).push_back(xs[d]);
    (red ? red_st : kept_st).push_back(xst[d]);
  }
  int64_t outputs = NumElements(kept_dims), r = NumElements(red_dims);
  std::string acc_t = t == DType::kFloat64 ? "double" : is_float ? "float" : "long";
  KernelSource src(kernel_name, "reduce");
  bool arg = n.op == ir::OpKind::kArgMax || n.op == ir::OpKind::kArgMin;
  DefineStorage(src, t);
  src.Define("T_ACC", acc_t).Define("N", fmt::format("{}L", outputs));
  src.Define("T_OUT", arg ? "long" : "T_STORE");
  src.Define("STORE_OUT(p, i, v)", arg ? "(p)[i] = (v)" : "STORE(p, i, v)");
  src.Define("R", fmt::format("{}L", r));
  src.Define("BASE_OFFSET", FlatToOffset("i", "base", kept_dims, kept_st));
  src.Define("RED_OFFSET", FlatToOffset("r", "roff", red_dims, red_st));
  std::string lowest = is_float ? "(-INFINITY)" : (t == DType::kInt32 ? "INT_MIN" : "LONG_MIN");
  std::string highest = is_float ? "INFINITY" : (t == DType::kInt32 ? "INT_MAX" : "LONG_MAX");
  // ArgMax/ArgMin keep the first extreme index, or the last with select_last_index.
  std::string tie = n.attrs.Int("select_last_index", 0) ? " || v == a" : "";
  switch (n.op) {
    case ir::OpKind::kReduceMax:
      src.Define("INIT", lowest)
          .Define("ACC(a, i, v, r)", "a = (isnan((float)(v)) || v > a) ? v : a");
      break;
    case ir::OpKind::kReduceMin:
      src.Define("INIT", highest)
          .Define("ACC(a, i, v, r)", "a = (isnan((float)(v)) || v < a) ? v : a");
      break;
    case ir::OpKind::kArgMax:
      src.Define("INIT", lowest)
          .Define("ACC(a, i, v, r)",
                  fmt::format("if (r == 0 || v > a{}) {{ a = v; i = r; }}", tie));
      break;
    case ir::OpKind::kArgMin:
      src.Define("INIT", highest)
          .Define("ACC(a, i, v, r)",
                  fmt::format("if (r == 0 || v < a{}) {{ a = v; i = r; }}", tie));
      break;
    case ir::OpKind::kReduceProd:
      src.Define("INIT", "1").Define("ACC(a, i, v, r)", "a *= v");
      break;
    default: src.Define("INIT", "0").Define("ACC(a, i, v, r)", "a += v"); break;
  }
  src.Define("FINISH(a, i)", arg                               ? "i"
                             : n.op == ir::OpKind::kReduceMean ? fmt::format("(a / {}.0f)", r)
                                                               : "((T)(a))");
  KernelSpec spec;
  spec.name = kernel_name;
  spec.args = {x->id, n.outputs[0]->id};
  ApplyEpilogue(src, kernel_name, n.outputs[0], epilogue, spec);
  spec.source = src.Render();
  spec.global = {RoundUp(static_cast<size_t>(std::max<int64_t>(outputs, 1)), 64)};
  spec.local = {64};
  spec.flops = static_cast<double>(NumElements(xs));
  return spec;
}

KernelSpec GenerateSoftmax(const ir::Node& n, const std::string& kernel_name) {
  const Shape& xs = n.inputs[0]->type.shape;
  int64_t axis = n.attrs.Int("axis");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
  KernelSource src(kernel_name, "softmax");
  DefineStorage(src, RequireOneFloatType(n));
  src.Define("OUTER", outer).Define("AXIS", xs[axis]).Define("INNER", inner);
  src.Define("LOG", n.op == ir::OpKind::kLogSoftmax ? 1 : 0);
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.args = {n.inputs[0]->id, n.outputs[0]->id};
  spec.global = {RoundUp(static_cast<size_t>(std::max<int64_t>(outer * inner, 1)), 64)};
  spec.local = {64};
  spec.flops = 4.0 * static_cast<double>(NumElements(xs));
  return spec;
}

}  // namespace texel::codegen
