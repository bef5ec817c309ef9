// Pointwise kernels (kernels/pointwise.cl): elementwise ops and chains of them (expressions from
// elementwise_chain.cpp), and data movement as a source-index computation.
#include <algorithm>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "ir/host_eval.h"
#include "ir/index_map.h"

namespace texel::codegen {
namespace {

using ir::OpKind;

std::string CL(DType t) { return std::string(CLTypeName(t)); }

// f16 tensors hold half bits: elementwise ops compute in float (elementwise_chain.h), data
// movement copies the bits as ushort.
std::string ValueType(DType t, bool movement) {
  return movement && t == DType::kFloat16 ? "ushort" : ValueTypeName(t);
}
std::string PointerType(DType t, bool movement) {
  return movement && t == DType::kFloat16 ? "ushort" : StorageTypeName(t);
}

// A Concat of whole, contiguous inputs from the flat index i alone: input k holds, for each of
// the `outer` leading blocks, a run of len_k * inner elements, so the output's element i is in
// block i / (total * inner). No coordinates: on PoCL the divisions of the general body, not the
// copy, bounded it (SqueezeNet's 128 x 55 x 55 Concat ran at 10 GB/s). Empty when an input is
// read through a view that reorders it.
std::string FlatConcatBody(const ir::Node& n) {
  const Shape& os = n.outputs[0]->type.shape;
  int64_t axis = n.attrs.Int("axis"), outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= os[d];
  for (size_t d = axis + 1; d < os.size(); ++d) inner *= os[d];
  const int64_t run = os[axis] * inner;  // output elements per leading block
  std::string block = outer == 1 ? "0" : fmt::format("(i / {})", run);
  std::string at = outer == 1 ? "i" : fmt::format("(i - {} * {})", block, run);
  std::string s = fmt::format("const long r = {};", at);
  int64_t start = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    // The input, or a view of it that reads it in order (a Reshape).
    ir::IndexMap m = ir::IndexMap::Load(n.attrs, fmt::format("in{}", k), n.inputs[k]->type.shape);
    if (!m.IsContiguous()) return "";
    int64_t len = m.shape[axis] * inner, end = start + len;
    std::string read = fmt::format("v = LOAD_X(in{}, {} * {} + r - {});", k, block, len, start);
    s += k + 1 == n.inputs.size() ? fmt::format(" {{ {} }}", read)
                                  : fmt::format(" if (r < {}) {{ {} }} else", end, read);
    start = end;
  }
  return s;
}

// A Gather: the data's element at the index, along axis.
std::string GatherBody(const ir::Node& n) {
  const ir::Value* x = n.inputs[0];
  const Shape& os = n.outputs[0]->type.shape;
  std::vector<int64_t> xst = Strides(n.inputs[0]->type.shape);
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
      "v = LOAD_X(in0, {} + g * {});",
      OffsetExpr(idx_st), dim, dim - 1, OffsetExpr(x_st), xst[axis]);
}

// A GatherND: output coords [batch..., index rows..., trailing data dims...].
std::string GatherNdBody(const ir::Node& n) {
  const ir::Value* x = n.inputs[0];
  const Shape& os = n.outputs[0]->type.shape;
  std::vector<int64_t> xst = Strides(n.inputs[0]->type.shape);
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

// TopK's indices: the element of rank c_axis, rank(e) = #{better elements} + #{equal ones
// before e}.
std::string TopKIndicesBody(const ir::Node& n) {
  const ir::Value* x = n.inputs[0];
  const Shape& os = n.outputs[0]->type.shape;
  std::vector<int64_t> xst = Strides(n.inputs[0]->type.shape);
  int64_t axis = n.attrs.Int("axis"), len = x->type.shape[axis];
  std::vector<int64_t> st(os.size(), 0);
  for (size_t d = 0; d < os.size(); ++d) st[d] = static_cast<int>(d) == axis ? 0 : xst[d];
  std::string better = n.attrs.Int("largest") ? ">" : "<";
  return fmt::format(
      "const long base = {}; v = 0; "
      "for (long e = 0; e < {}; ++e) {{ const {} xe = in0[base + e * {}]; long rank = 0; "
      "for (long f = 0; f < {}; ++f) {{ const {} xf = in0[base + f * {}]; "
      "rank += (xf {} xe) || (xf == xe && f < e); }} if (rank == c{}) {{ v = e; break; }} }}",
      OffsetExpr(st), len, CL(x->type.dtype), xst[axis], len, CL(x->type.dtype), xst[axis], better,
      axis);
}

// CumSum along axis, exclusive and reversed as the attributes say.
std::string CumSumBody(const ir::Node& n) {
  const ir::Value* x = n.inputs[0];
  std::vector<int64_t> xst = Strides(n.inputs[0]->type.shape);
  int64_t axis = n.attrs.Int("axis"), dim = x->type.shape[axis];
  bool excl = n.attrs.Int("exclusive") != 0, rev = n.attrs.Int("reverse") != 0;
  std::vector<int64_t> st = xst;
  st[axis] = 0;
  std::string lo = rev ? fmt::format("c{}{}", axis, excl ? " + 1" : "") : "0";
  std::string hi = rev ? std::to_string(dim) : fmt::format("c{}{}", axis, excl ? "" : " + 1");
  return fmt::format("v = 0; for (long k = {}; k < {}; ++k) v += in0[{} + k * {}];", lo, hi,
                     OffsetExpr(st), xst[axis]);
}

// Pad: constant, edge or reflect.
std::string PadBody(const ir::Node& n) {
  const ir::Value* x = n.inputs[0];
  const Shape& os = n.outputs[0]->type.shape;
  std::vector<int64_t> xst = Strides(n.inputs[0]->type.shape);
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
  return s + fmt::format(" v = inside ? in0[s] : ({}){};", ValueType(x->type.dtype, true), value);
}

// Concat: each input (or the view of it that the views pass stored) where the axis coordinate
// falls in its range.
std::string ConcatBody(const ir::Node& n) {
  int64_t axis = n.attrs.Int("axis"), start = 0;
  if (std::string flat = FlatConcatBody(n); !flat.empty()) return flat;
  std::string s;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    // The input, or the view of it that the views pass stored.
    ir::IndexMap m = ir::IndexMap::Load(n.attrs, fmt::format("in{}", k), n.inputs[k]->type.shape);
    const std::vector<int64_t>& kst = m.strides;
    int64_t end = start + m.shape[axis];
    bool last = k + 1 == n.inputs.size();
    // Coordinates along the axis are shifted by the input's start.
    std::string off = OffsetExpr(kst);
    if (start * kst[axis] != m.offset)
      off = fmt::format("({} + {})", off, m.offset - start * kst[axis]);
    s += last ? fmt::format("{{ v = LOAD_X(in{}, {}); }}", k, off)
              : fmt::format("if (c{} < {}) {{ v = LOAD_X(in{}, {}); }} else ", axis, end, k, off);
    start = end;
  }
  return s;
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
    case OpKind::kGather: return GatherBody(n);
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
    case OpKind::kGatherND: return GatherNdBody(n);
    case OpKind::kTopKIndices: return TopKIndicesBody(n);
    case OpKind::kCumSum: return CumSumBody(n);
    case OpKind::kPad: return PadBody(n);
    case OpKind::kConcat: return ConcatBody(n);
    default: break;
  }
  Fail(ErrorCode::kInternal, "no movement kernel for {}", OpName(n.op));
}

// LOAD_X(p, i): a Gather's element i of its data p, as stored, or with `half_as_float` f16 data
// read as float.
void DefineGatherLoad(KernelSource& src, bool half_as_float) {
  src.Define("LOAD_X(p, i)", half_as_float ? "vload_half((i), (p))" : "(p)[i]");
}

// The pointwise template over `params` and `body`, writing `out` (`wide`: 64-bit coordinates).
// With `epilogue` (ops consuming `seed`, the value BODY leaves in v), the kernel applies them
// (ApplyEpilogue: EPILOGUE(v, i), its operands after PARAMS) and writes their result.
// LOAD_X(p, i): element i of a Gather's data or a Concat's input p (f16 data with an epilogue is
// read as float).
KernelSpec PointwiseKernel(const std::string& kernel_name, const std::string& params,
                           const std::string& body, const ir::Value* out, bool movement, bool wide,
                           const Target& target, KernelSpec spec,
                           const std::vector<const ir::Node*>& epilogue = {},
                           const ir::Value* seed = nullptr, bool half_x = false) {
  KernelSource src(kernel_name, "pointwise");
  DefineGatherLoad(src, half_x);
  if (!epilogue.empty()) ApplyEpilogue(src, kernel_name, seed, epilogue, spec);
  int64_t count = NumElements(out->type.shape);
  bool store_half = out->type.dtype == DType::kFloat16 && !movement;
  src.Define("PARAMS", params)
      .Define("T_OUT", ValueType(out->type.dtype, movement))
      .Define("STORE(i, v)", store_half ? "vstore_half_rte(v, i, out)" : "out[i] = v")
      .Define("N", fmt::format("{}L", count))
      .Define("COORDS", CoordsCode(out->type.shape, wide))
      .Define("BODY", body);
  int items = PointwiseItems(count, target);
  src.Define("ITEMS", items);
  spec.name = kernel_name;
  spec.source = src.Render();
  int64_t work_items = (std::max<int64_t>(count, 1) + items - 1) / items;
  spec.global = {RoundUp(static_cast<size_t>(work_items), 64)};
  spec.local = {64};
  return spec;
}

}  // namespace

int PointwiseItems(int64_t count, const Target& target) {
  return target.gpu && count >= (int64_t{1} << 20) ? 4 : 1;
}

KernelSpec GenerateElementwise(const std::vector<const ir::Node*>& ops,
                               const std::string& kernel_name, const Target& target) {
  const ir::Value* out = ops.back()->outputs[0];
  // Operands from outside the chain, each one parameter in<k> in first-use order.
  std::vector<const ir::Value*> ext = ir::ExternalInputs(ops);
  KernelSpec spec;
  std::string params;
  for (size_t k = 0; k < ext.size(); ++k) {
    params += fmt::format("__global const {}* in{}, ", PointerType(ext[k]->type.dtype, false), k);
    spec.args.push_back(ext[k]->id);
  }
  params += fmt::format("__global {}* out", PointerType(out->type.dtype, false));
  spec.args.push_back(out->id);
  std::string body;
  const ir::Node& first = *ops[0];
  if (ops.size() == 1 && first.op == OpKind::kPow && !IsFloat(first.inputs[0]->type.dtype)) {
    // Exact integer power by repeated multiplication.
    auto st0 = ir::BroadcastStrides(first.inputs[0]->type.shape, out->type.shape);
    auto st1 = ir::BroadcastStrides(first.inputs[1]->type.shape, out->type.shape);
    body =
        fmt::format("long r = 1; for (long k = 0; k < (long)in1[{}]; ++k) r *= in0[{}]; v = ({})r;",
                    OffsetExpr(st1), OffsetExpr(st0), CL(out->type.dtype));
  } else {
    auto param = [&](const ir::Value* v) {
      return fmt::format("in{}", std::find(ext.begin(), ext.end(), v) - ext.begin());
    };
    ChainCode c = ElementwiseChain(ops, nullptr, "", param);
    body = c.code + "v = " + c.result + ";";
  }
  double flops = static_cast<double>(NumElements(out->type.shape) * ops.size());
  spec.flops = flops;
  std::vector<const ir::Value*> operands = ext;
  operands.push_back(out);
  return PointwiseKernel(kernel_name, params, body, out, false, WideIndex(operands), target,
                         std::move(spec));
}

GatherElement DefineGatherElement(KernelSource& src, const ir::Node& n, const std::string& name) {
  TEXEL_CHECK(n.op == OpKind::kGather, "DefineGatherElement of {}", OpName(n.op));
  DType table = n.inputs[0]->type.dtype;
  GatherElement e{PointerType(table, false), PointerType(n.inputs[1]->type.dtype, false)};
  DefineGatherLoad(src, table == DType::kFloat16);
  src.Prelude(
      fmt::format("inline float {}(__global const {}* in0, __global const {}* in1, long i) {{\n"
                  "  {} float v; {} return v;\n}}\n",
                  name, e.table_type, e.index_type, CoordsCode(n.outputs[0]->type.shape, true),
                  MovementBody(n)));
  return e;
}

void CheckMovement(const ir::Node& n) {
  bool computes = n.op == OpKind::kResize || n.op == OpKind::kCumSum ||
                  n.op == OpKind::kTopKIndices || n.op == OpKind::kGridSample ||
                  n.op == OpKind::kRoiAlign;
  for (const ir::Value* v : n.inputs)
    if (v->type.dtype == DType::kFloat16 && computes)
      Fail(ErrorCode::kUnsupported, "{} on f16 is not supported on the device", OpName(n.op));
  switch (n.op) {
    case OpKind::kResize: return CheckResize(n);
    case OpKind::kGridSample: return CheckGridSample(n);
    case OpKind::kRoiAlign: return CheckRoiAlign(n);
    case OpKind::kScatterElements:
    case OpKind::kScatterND: return CheckScatter(n);
    default: return;
  }
}

KernelSpec GeneratePointwise(const ir::Node& n, const std::string& kernel_name,
                             const Target& target, const std::vector<const ir::Node*>& epilogue) {
  if (n.info().cls != ir::OpClass::kMovement) return GenerateElementwise({&n}, kernel_name, target);
  CheckMovement(n);
  const ir::Value* out = epilogue.empty() ? n.outputs[0] : epilogue.back()->outputs[0];
  // An epilogue (fuse lets one follow an f32 or f16 Gather, an embedding lookup and the
  // position embedding added to it, or Concat) computes in float from the moved value (f16 data
  // read by vload_half), at the movement's own coordinates (fuse requires equal shapes).
  DType moved = n.outputs[0]->type.dtype;
  bool half_x = !epilogue.empty() && moved == DType::kFloat16;
  TEXEL_CHECK(
      epilogue.empty() || ((n.op == OpKind::kGather || n.op == OpKind::kConcat) &&
                           (moved == DType::kFloat32 || moved == DType::kFloat16) &&
                           out->type.dtype == moved && out->type.shape == n.outputs[0]->type.shape),
      "{} takes an epilogue only as an f32 or f16 Gather or Concat, of its own shape",
      OpName(n.op));
  std::string params;
  KernelSpec spec;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    // The data read through LOAD_X: a Gather's table, every input of a Concat.
    bool read_x = k == 0 || n.op == OpKind::kConcat;
    params += fmt::format("__global const {}* in{}, ",
                          PointerType(n.inputs[k]->type.dtype, !(half_x && read_x)), k);
    spec.args.push_back(n.inputs[k]->id);
  }
  std::string body = MovementBody(n);
  params += fmt::format("__global {}* out", PointerType(out->type.dtype, epilogue.empty()));
  spec.args.push_back(n.outputs[0]->id);
  if (!epilogue.empty()) {
    params += " EPILOGUE_PARAMS";
    body += " v = EPILOGUE(v, i);";
    spec.flops = static_cast<double>(NumElements(out->type.shape) * epilogue.size());
  }
  std::vector<const ir::Value*> operands(n.inputs.begin(), n.inputs.end());
  operands.push_back(out);
  return PointwiseKernel(kernel_name, params, body, out, epilogue.empty(), WideIndex(operands),
                         target, std::move(spec), epilogue, n.outputs[0], half_x);
}

}  // namespace texel::codegen
