// Reductions (kernels/reduce.cl) and the softmax family (kernels/softmax.cl).
#include <algorithm>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "ir/index_map.h"

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

// Work-items that share one row of `r` elements: 1 (a row each) on CPUs and for short rows;
// on GPUs a warp per row at least where a row's elements are adjacent (`contiguous`: one
// work-item walking such a row alone reads one element per 32-byte sector per step, 372 GB/s
// for EfficientNet-B0's 4608 rows of 3136 at batch 32 on an H200), and where rows are too few
// to give each compute unit 32 of them; then a power of two up to 256, about 4 elements each,
// while rows are few.
int RowWorkers(int64_t rows, int64_t r, bool contiguous, const Target& t) {
  bool many = rows >= 32 * static_cast<int64_t>(t.compute_units);
  if (!t.gpu || r < 64 || (many && !contiguous) || t.max_work_group_size < 32) return 1;
  int lw = 32;
  while (!many && lw < 256 && lw * 8 <= r && lw * 2 <= static_cast<int>(t.max_work_group_size))
    lw *= 2;
  return lw;
}

// The rows a reduction or softmax kernel walks: how many, their length, the distance between a
// row's consecutive elements (1: adjacent), and whether a row may be shared by several
// work-items (not by ArgMax / ArgMin, nor by a softmax along an axis that is not innermost).
struct RowShape {
  int64_t rows = 0, r = 0, step = 1;
  bool shared = true;
};

RowShape RowShapeOf(const ir::Node& n) {
  const Shape& xs = n.inputs[0]->type.shape;
  RowShape s;
  if (n.op == ir::OpKind::kSoftmax || n.op == ir::OpKind::kLogSoftmax) {
    int64_t axis = n.attrs.Int("axis");
    s.r = xs[axis];
    s.step = NumElements(Shape(xs.begin() + axis + 1, xs.end()));
    s.rows = NumElements(xs) / std::max<int64_t>(s.r, 1);
    s.shared = s.step == 1;
    return s;
  }
  const auto& axes = n.attrs.Ints("axes");
  std::vector<int64_t> st = Strides(xs);
  s.r = 1;
  for (int64_t a : axes) s.r *= xs[a];
  s.rows = NumElements(xs) / std::max<int64_t>(s.r, 1);
  s.step = axes.empty() ? 1 : st[axes.back()];
  s.shared = n.op != ir::OpKind::kArgMax && n.op != ir::OpKind::kArgMin;
  return s;
}

constexpr int kRowsVersion = 1;

// Defines ROW_MAX(v) and ROW_SUM(v) for templates that share a row among LW work-items: v over
// the work-group's __local `part`, the result returned to every work-item (v itself when
// LW == 1). The second barrier lets `part` be reused.
void DefineRowCombine(KernelSource& src, const std::string& kernel_name, int lw) {
  if (lw == 1) {
    src.Define("ROW_MAX(v)", "(v)").Define("ROW_SUM(v)", "(v)");
    return;
  }
  for (const char* op : {"max", "sum"}) {
    std::string fn = fmt::format("{}_row_{}", kernel_name, op);
    src.Define(fmt::format("ROW_{}(v)", op[0] == 'm' ? "MAX" : "SUM"), fn + "(v, part, l)");
    src.Prelude(
        fmt::format("inline T {}(T v, __local T* part, int l) {{\n"
                    "  part[l] = v;\n  barrier(CLK_LOCAL_MEM_FENCE);\n"
                    "  for (int h = LW / 2; h > 0; h /= 2) {{\n"
                    "    if (l < h) part[l] = {};\n    barrier(CLK_LOCAL_MEM_FENCE);\n  }}\n"
                    "  const T r = part[0];\n  barrier(CLK_LOCAL_MEM_FENCE);\n  return r;\n}}\n",
                    fn, op[0] == 'm' ? "fmax(part[l], part[l + h])" : "part[l] + part[l + h]"));
  }
}

// Launch geometry of a row kernel: a work-group of lw per row, or one work-item per row.
void SetRowLaunch(KernelSpec& spec, int64_t rows, int lw) {
  if (lw > 1) {
    spec.global = {static_cast<size_t>(rows) * lw};
    spec.local = {static_cast<size_t>(lw)};
  } else {
    spec.global = {RoundUp(static_cast<size_t>(std::max<int64_t>(rows, 1)), 64)};
    spec.local = {64};
  }
}

}  // namespace

std::optional<Tunable> RowsTunable(const ir::Node& n, const Target& t) {
  RowShape s = RowShapeOf(n);
  // An image's reduction is a texture kernel (generate_texture.cpp), which has no rows to share.
  if (!s.shared || s.rows == 0 || s.r == 0 || n.outputs[0]->is_image()) return std::nullopt;
  Tunable tn;
  tn.family = "rows";
  tn.version = kRowsVersion;
  tn.signature = fmt::format("op={},rows={},r={},step={},dtype={}", OpName(n.op), s.rows, s.r,
                             s.step, DTypeName(n.inputs[0]->type.dtype));
  int h = RowWorkers(s.rows, s.r, s.step == 1, t);
  tn.candidates.push_back({{"lw", h}});
  std::vector<int> lws =
      t.gpu ? std::vector<int>{1, 32, 64, 128, 256} : std::vector<int>{1, 4, 8, 16, 32};
  for (int lw : lws)
    if (lw != h && lw <= static_cast<int64_t>(t.max_work_group_size) && lw / 2 < s.r)
      tn.candidates.push_back({{"lw", lw}});
  return tn;
}

void CheckReduce(const ir::Node& n) {
  DType t = n.inputs[0]->type.dtype;
  bool is_float = IsFloat(t);
  if (!is_float && (t != DType::kInt32 && t != DType::kInt64))
    Fail(ErrorCode::kUnsupported, "{} on {} is not supported on the device", OpName(n.op),
         DTypeName(t));
  if (!is_float && (n.op == ir::OpKind::kReduceMean || n.op == ir::OpKind::kArgMax ||
                    n.op == ir::OpKind::kArgMin))
    Fail(ErrorCode::kUnsupported, "{} on integers is not supported on the device", OpName(n.op));
}

KernelSpec GenerateReduce(const ir::Node& n, const std::string& kernel_name, const Target& target,
                          const Chain& epilogue) {
  CheckReduce(n);
  const ir::Value* x = n.inputs[0];
  DType t = x->type.dtype;
  bool is_float = IsFloat(t);
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
  std::optional<Tunable> rows = RowsTunable(n, target);
  int lw = rows ? static_cast<int>(Choose(*rows, target).at("lw")) : 1;
  src.Define("LW", lw);
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
          .Define("ACC(a, i, v, r)", "a = (isnan((float)(v)) || v > a) ? v : a")
          .Define("COMBINE(a, b)", "((isnan((float)(b)) || (b) > (a)) ? (b) : (a))");
      break;
    case ir::OpKind::kReduceMin:
      src.Define("INIT", highest)
          .Define("ACC(a, i, v, r)", "a = (isnan((float)(v)) || v < a) ? v : a")
          .Define("COMBINE(a, b)", "((isnan((float)(b)) || (b) < (a)) ? (b) : (a))");
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
      src.Define("COMBINE(a, b)", "((a) * (b))");
      break;
    default:
      src.Define("INIT", "0").Define("ACC(a, i, v, r)", "a += v");
      src.Define("COMBINE(a, b)", "((a) + (b))");
      break;
  }
  src.Define("FINISH(a, i)", arg                               ? "i"
                             : n.op == ir::OpKind::kReduceMean ? fmt::format("(a / {}.0f)", r)
                                                               : "((T)(a))");
  KernelSpec spec;
  spec.name = kernel_name;
  spec.args = {x->id, n.outputs[0]->id};
  ApplyEpilogue(src, kernel_name, n.outputs[0], epilogue, spec);
  spec.source = src.Render();
  SetRowLaunch(spec, outputs, lw);
  spec.flops = static_cast<double>(NumElements(xs));
  return spec;
}

KernelSpec GenerateSoftmax(const ir::Node& n, const std::string& kernel_name,
                           const Target& target) {
  const Shape& xs = n.inputs[0]->type.shape;
  int64_t axis = n.attrs.Int("axis");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  for (size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
  KernelSource src(kernel_name, "softmax");
  DefineStorage(src, RequireOneFloatType(n));
  src.Define("OUTER", outer).Define("AXIS", xs[axis]).Define("INNER", inner);
  src.Define("LOG", n.op == ir::OpKind::kLogSoftmax ? 1 : 0);
  std::optional<Tunable> rows = RowsTunable(n, target);
  int lw = rows ? static_cast<int>(Choose(*rows, target).at("lw")) : 1;
  src.Define("LW", lw);
  DefineRowCombine(src, kernel_name, lw);
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.args = {n.inputs[0]->id, n.outputs[0]->id};
  SetRowLaunch(spec, outer * inner, lw);
  spec.flops = 4.0 * static_cast<double>(NumElements(xs));
  return spec;
}

const ir::Value* ElementwiseSeed(const ir::Node& n) {
  for (const ir::Value* v : n.inputs)
    if (v->type == n.outputs[0]->type) return v;
  return nullptr;
}

KernelSpec GenerateLayerNorm(const ir::Node& n, const std::string& kernel_name,
                             const Target& target, const Chain& epilogue,
                             const NormPrologue* prologue) {
  // The input as read: the value itself, or the view the normalize pass stored (x_*), as
  // [rows, r] (the pass checked that the strides allow it).
  ir::IndexMap view = ir::IndexMap::Load(n.attrs, "x", n.inputs[0]->type.shape);
  const Shape& xs = view.shape;
  int64_t axis = n.attrs.Int("axis");
  int64_t rows = NumElements(Shape(xs.begin(), xs.begin() + axis));
  int64_t r = NumElements(Shape(xs.begin() + axis, xs.end()));
  std::optional<ir::IndexMap> rr = view.Reshaped({rows, r});
  TEXEL_CHECK(rr.has_value(), "LayerNorm's input view has no [rows, r] form");
  KernelSource src(kernel_name, "layer_norm");
  DefineStorage(src, RequireOneFloatType(n));
  int lw = target.gpu ? RowWorkers(0, r, true, target) : 1;
  // Summing a product's slices makes each element several loads, and few rows leave the device
  // idle: more work-items per row.
  if (lw > 1 && ((prologue && prologue->slices > 1) ||
                 rows <= 4 * static_cast<int64_t>(target.compute_units)))
    while (lw < 256 && lw * 2 <= static_cast<int>(target.max_work_group_size) && lw * 3 <= r)
      lw *= 2;
  src.Define("ROWS", fmt::format("{}L", rows)).Define("R", r).Define("LW", lw);
  // A work-item's elements stay in registers when they are few (GPUs: a row per work-group).
  int64_t per_item = (r + lw - 1) / lw;
  src.Define("XN", per_item <= 16 ? per_item : 0);
  src.Define("EPS", FloatLiteral(n.attrs.Float("epsilon")));
  src.Define("RMS", n.attrs.Int("rms", 0));
  DefineRowCombine(src, kernel_name, lw);
  KernelSpec spec;
  spec.name = kernel_name;
  if (!(prologue && prologue->gather)) src.Define("X_PARAMS", "");  // else the Gather's ids
  if (prologue && prologue->gather) {
    // x is the Gather's table, gathered row by row (the LayerNorm reads its input whole, of the
    // Gather's shape: fuse's third rule), with the Gather's epilogue applied.
    const ir::Node& gather = *prologue->gather;
    GatherElement e = DefineGatherElement(src, gather, kernel_name + "_x");
    src.Define("X_TYPE", e.table_type);
    src.Define("X_PARAMS", fmt::format(", __global const {}* ids", e.index_type));
    src.Define("X_AT(x, r, k)",
               fmt::format("PROLOGUE({}_x(x, ids, (long)(r) * R + (k)), (long)(r) * R + (k))",
                           kernel_name));
    spec.args = {gather.inputs[0]->id, gather.inputs[1]->id};
    ApplyChain(src, kernel_name, gather.outputs[0], prologue->chain, spec, "PROLOGUE", "p");
    if (prologue->write_input) spec.args.push_back(prologue->write_input->id);
    spec.args.push_back(n.outputs[0]->id);
  } else if (prologue && prologue->seed) {
    // x is the seed, read whole and in order (of the LayerNorm's input shape), the elementwise
    // group that computes the input applied to it.
    src.Define("X_TYPE", "T_STORE");
    src.Define("X_AT(x, r, k)", "PROLOGUE(LOAD(x, (long)(r) * R + (k)), (long)(r) * R + (k))");
    // The chain's operands first: ApplyChain retargets its anchor's id, which the seed's is.
    ApplyChain(src, kernel_name, prologue->seed, prologue->chain, spec, "PROLOGUE", "p");
    spec.args.insert(spec.args.begin(), prologue->seed->id);
    if (prologue->write_input) spec.args.push_back(prologue->write_input->id);
    spec.args.push_back(n.outputs[0]->id);
  } else if (prologue) {
    // x is the product's slices (scratch 0), row-major [rows, r]: their sum, then its epilogue.
    TEXEL_CHECK(rr->offset == 0 && rr->strides[1] == 1 && (rows == 1 || rr->strides[0] == r),
                "a LayerNorm after a product reads it whole");
    src.Define("X_TYPE", "T");
    std::string sum = "(x)[(long)(r) * R + (k)]";
    for (int64_t s = 1; s < prologue->slices; ++s)
      sum += fmt::format(" + (x)[{}L + (long)(r) * R + (k)]", s * rows * r);
    src.Define("X_AT(x, r, k)", fmt::format("PROLOGUE({}, (long)(r) * R + (k))", sum));
    spec.args = {-1};
    ApplyChain(src, kernel_name, prologue->product, prologue->chain, spec, "PROLOGUE", "p");
    if (prologue->write_input) spec.args.push_back(prologue->write_input->id);
    spec.args.push_back(n.outputs[0]->id);
  } else {
    src.Define("X_TYPE", "T_STORE");
    src.Define("X_AT(x, r, k)",
               fmt::format("LOAD(x, {}L + (long)(r) * {}L + (long)(k) * {}L)", rr->offset,
                           rows == 1 ? r : rr->strides[0], r == 1 ? 1 : rr->strides[1]));
    src.Define("PROLOGUE_PARAMS", "");
    spec.args = {n.inputs[0]->id, n.outputs[0]->id};
  }
  bool write_x = prologue && prologue->write_input;
  src.Define("WRITE_X", write_x).Define("XOUT_PARAM", write_x ? ", __global T_STORE* xo" : "");
  ApplyEpilogue(src, kernel_name, n.outputs[0], epilogue, spec, true);
  spec.source = src.Render();
  SetRowLaunch(spec, rows, lw);
  spec.flops = 8.0 * static_cast<double>(NumElements(xs));
  return spec;
}

}  // namespace texel::codegen
