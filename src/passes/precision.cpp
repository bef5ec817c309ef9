// precision: the storage type of every float value under --precision, and which divisions are
// exact (below; every mode) (docs/precision.md).
//
// fp16: every node whose float values are f32 runs on f16 storage (its kernels load and store
// half and compute in float: reductions, softmax, normalisation statistics and GEMM sums
// accumulate in fp32 inside the kernel), except the nodes of the keep-in-fp32 rule below, which
// stay f32. Constants read by f16 nodes are converted once here (finite values saturated to
// ±65504, never to ±inf); a value crossing between an f16
// and an f32 node gets a Cast (one per value and direction). Graph inputs and outputs keep their
// types: a Cast converts after the input / before the output.
//
// Keep in fp32 (KeepF32):
//   Softmax, LogSoftmax   their input: logits rounded to f16 move exp(x) by |x| * 2^-11
//   Exp, Pow              their result: overflows half's 65504 early
//   ReduceSum, ReduceProd sums and products of many terms overflow half (the importer spells
//                         ReduceSumSquare, L2 and LogSumExp with them)
//   computing movement    Resize, CumSum, TopK, GridSample, RoiAlign, NMS, and ScatterND and
//                         ScatterElements with a reduction: no f16 kernels
//   Round                 its input: half's spacing is 1/8 from 128 to 255, where quantisation
//                         rounds, so a code would move by one
//   what makes the input  of Exp and Round, back through elementwise ops and ReduceMax /
//                         ReduceMin (SensitiveCone): a softmax written out shifts by x - max x,
//                         a quantisation divides by a scale from the range of x, and x rounded to
//                         half moves exp(x - max x) by |x| 2^-11 (x = 10^4: by a factor e^5) and
//                         a code x / scale by up to 0.12; from an f32 x (a graph input) they are
//                         then exact, from an f16 one as exact as x
//
// Matrix products (MatMul, with Gemm and the merged projections) get the mode as their
// "compute_mode": tf32 and tf32x3 keep f32 storage and run those products on the matrix engine;
// fp16 marks its f16 products (which compute so anyway). On a device without a matrix engine the
// generators keep the scalar kernels (fp32 arithmetic on the mode's storage): the stat
// "no-matrix-engine", and a notice (PassContext::notice). On f16 storage convolutions compute in
// fp16 anyway (ComputeModeOf), as implicit GEMMs on the matrix engine where the generator takes
// them there. In tf32 and tf32x3 every 2-D convolution is marked too, and the channels-last pass
// keeps the marks of those it puts on the engine (its regions) and removes the rest, which keep
// the scalar fp32 kernels (the engine gathers an NCHW image only in the mode's operand type).
// Attention keeps the scalar kernels (fp32 arithmetic on the mode's storage).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "backends/native/native_backend.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/matmul.h"
#include "core/error.h"
#include "ir/host_eval.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

using ir::OpKind;

// The keep-in-fp32 rule (above), and Cast, which converts by itself.
bool KeepF32(const ir::Node& n) {
  switch (n.op) {
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kExp:
    case OpKind::kPow:
    case OpKind::kReduceSum:
    case OpKind::kReduceProd:
    case OpKind::kResize:
    case OpKind::kCumSum:
    case OpKind::kTopKIndices:
    case OpKind::kGridSample:
    case OpKind::kRoiAlign:
    case OpKind::kNonMaxSuppression:
    case OpKind::kRound:
    case OpKind::kCast: return true;
    case OpKind::kScatterND:
    case OpKind::kScatterElements: return n.attrs.Str("reduction") != "none";
    default: return false;
  }
}

// The nodes that make the input of a Round (and with `exp` of an Exp), back through elementwise
// ops and ReduceMax / ReduceMin (the keep-in-fp32 rule above, and exact division below).
std::set<ir::Node*> SensitiveCone(const ir::Graph& g, bool exp) {
  std::set<ir::Node*> cone;
  std::vector<ir::Node*> todo;
  for (const auto& n : g.nodes())
    if ((exp && n->op == OpKind::kExp) || n->op == OpKind::kRound) todo.push_back(n.get());
  while (!todo.empty()) {
    ir::Node* n = todo.back();
    todo.pop_back();
    for (const ir::Value* in : n->inputs) {
      ir::Node* p = in->producer;
      if (!p || cone.count(p)) continue;
      if (!ir::IsElementwiseClass(ir::GetOpInfo(p->op).cls) && p->op != OpKind::kReduceMax &&
          p->op != OpKind::kReduceMin)
        continue;
      cone.insert(p);
      todo.push_back(p);
    }
  }
  return cone;
}

// Exact division, in every mode: OpenCL C's single-precision `/` may be 2.5 ulp off (NVIDIA's is
// unless built with -cl-fp32-correctly-rounded-divide-sqrt), and a quotient a Round reads then
// crosses a rounding boundary: DynamicQuantizeLinear's codes came out one off on the H200. The
// f32 divisions that make a Round's input (SensitiveCone: x / scale, and the scale's own
// division) are marked "exact": 1 where the device builds programs with
// -cl-fp32-correctly-rounded-divide-sqrt (the plan then asks for it: backends/lower.cpp), else 2
// where it has cl_khr_fp64, whose division is correctly rounded (OpenCL C: 0 ulp): the kernel
// divides in double and rounds once to float, which is the correctly rounded f32 quotient (53 >=
// 2 x 24 + 2 bits: rounding twice cannot differ). The double division alone is not enough where
// the compiler turns it back into an f32 one (an equivalence under IEEE division that NVIDIA's
// compiler applies, and then divides 2.5 ulp off: the H200's codes stayed one off with it).
// Nearest-mode Resize nodes are marked 1 as well (where the option exists) when a scale is no
// power of two: they round the source coordinate (c + 0.5) / scale - 0.5 at its .5 ties (7 rows
// from 2: (3 + 0.5) / 3.5 - 0.5 is 0.5), and the H200's division put row 3 of
// test_resize_upsample_sizes_nearest on the wrong source row. Linear and cubic weights move by
// an ulp at most, and a power-of-two scale divides exactly anyway, so the option (which slows
// every division and sqrt of the program) stays off for a network's 2x upsampling.
bool NearestResizeDivides(const ir::Node& n) {
  if (n.op != OpKind::kResize || n.attrs.Str("mode") != "nearest") return false;
  for (double s : n.attrs.Floats("scales")) {
    int e = 0;
    if (std::frexp(s, &e) != 0.5) return true;
  }
  return false;
}

Stats MarkExactDivisions(ir::Graph& g, const PassContext& ctx) {
  if (!ctx.device || !(ctx.device->fp32_correct_divide || ctx.device->fp64)) return {};
  int64_t how = ctx.device->fp32_correct_divide ? 1 : 2;
  int64_t marked = 0;
  for (ir::Node* c : SensitiveCone(g, false))
    if (c->op == OpKind::kDiv && c->outputs[0]->type.dtype == DType::kFloat32) {
      c->attrs.Set("exact", how);
      ++marked;
    }
  if (how == 1)
    for (const auto& n : g.nodes())
      if (NearestResizeDivides(*n)) {
        n->attrs.Set("exact", how);
        ++marked;
      }
  return marked ? Stats{{"exact-divisions", marked}} : Stats{};
}

// Whether n runs on f16 storage: it has float values, all f32, and the rule lets it.
bool RunsF16(const ir::Node& n) {
  if (KeepF32(n)) return false;
  bool any = false;
  for (const auto* values : {&n.inputs, &n.outputs})
    for (const ir::Value* v : *values) {
      if (!IsFloat(v->type.dtype)) continue;
      if (v->type.dtype != DType::kFloat32) return false;
      any = true;
    }
  return any;
}

// The constant as f16: the host evaluator's Cast, of finite values saturated to half's range
// first. A finite constant must stay finite: attention masks are written (1 - m) * FLT_MIN, and
// FLT_MIN as -inf would make the kept positions 0 * -inf = NaN; -65504 masks as well.
ConstTensorPtr ToHalf(const HostTensor& t) {
  HostTensor finite = t;
  if (finite.dtype == DType::kFloat32)
    for (int64_t i = 0; i < finite.size(); ++i) {
      float& x = finite.data<float>()[i];
      if (std::isfinite(x)) x = std::clamp(x, -65504.0f, 65504.0f);
    }
  auto h = ir::EvaluateOnHost(OpKind::kCast, {{"to", int64_t(DType::kFloat16)}}, {&finite},
                              {DType::kFloat16, t.shape});
  TEXEL_CHECK(h.has_value(), "the host evaluator casts f32 to f16");
  return std::make_shared<HostTensor>(std::move(*h));
}

// What MarkProducts marked: products, in tf32x3 the products it left to fp32, and in tf32 and
// tf32x3 the convolutions (every 2-D one; the next pass puts its channels-last regions on the
// engine and unmarks the rest).
struct Marked {
  int64_t products = 0, small = 0, convs = 0;
};

// Marks g's matrix products on `storage` with `mode`, in tf32x3 only products of at least
// kTf32x3MinMacs multiply-adds; in tf32 and tf32x3 also every 2-D convolution.
Marked MarkProducts(ir::Graph& g, ComputeMode mode, DType storage) {
  Marked m;
  bool x3 = mode == ComputeMode::kTf32x3;
  bool convs = x3 || mode == ComputeMode::kTf32;
  int64_t min_macs = x3 ? kTf32x3MinMacs : 0;
  for (const auto& n : g.nodes()) {
    bool conv = convs && n->op == OpKind::kConv && n->inputs[1]->type.shape.size() == 4;
    if ((n->op != OpKind::kMatMul && !conv) || n->outputs[0]->type.dtype != storage) continue;
    if (!conv && ProductMacs(*n) < min_macs) {
      ++m.small;
      continue;
    }
    n->attrs.Set("compute_mode", static_cast<int64_t>(mode));
    ++(conv ? m.convs : m.products);
  }
  return m;
}

// The stats every mode reports: products marked, and whether ctx's device runs them as marked
// (only asked when there are any); where it does not, a notice says so.
Stats ProductStats(int64_t marked, const PassContext& ctx) {
  Stats st{{"matrix-products", marked}};
  if (ctx.device && marked > 0) {
    codegen::Target t = backends::NativeBackend::TargetOf(*ctx.device);
    if (!t.mma_sync && !t.mma_emulated) {
      st["no-matrix-engine"] = 1;
      if (ctx.notice)
        ctx.notice(fmt::format(
            "--precision {}: this device has no matrix engine; matrix products compute in fp32{}",
            ComputeModeName(ctx.precision),
            ctx.precision == ComputeMode::kFp16 ? " on f16 storage" : ""));
    }
  }
  return st;
}

}  // namespace

Stats ApplyPrecision(ir::Graph& g, const PassContext& ctx) {
  Stats exact = MarkExactDivisions(g, ctx);
  if (ctx.precision == ComputeMode::kFp32) return exact;
  if (ctx.precision != ComputeMode::kFp16) {
    Marked m = MarkProducts(g, ctx.precision, DType::kFloat32);
    Stats st = ProductStats(m.products, ctx);
    if (m.small) st["small-products-fp32"] = m.small;
    if (m.convs) st["convolutions-for-channels-last"] = m.convs;
    st.merge(exact);
    return st;
  }
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  std::map<const ir::Node*, bool> f16;
  std::set<ir::Node*> sensitive = SensitiveCone(g, true);
  for (ir::Node* n : order) f16[n] = RunsF16(*n) && !sensitive.count(n);
  // Outputs of f16 nodes become f16, except graph outputs, which a Cast then writes.
  std::set<const ir::Value*> graph_outputs(g.outputs().begin(), g.outputs().end());
  std::set<const ir::Value*> made_f16;  // the values this pass turned from f32 into f16
  int64_t values = 0, casts = 0, constants = 0;
  for (ir::Node* n : order) {
    if (!f16[n]) continue;
    for (ir::Value* v : n->outputs) {
      if (v->type.dtype != DType::kFloat32) continue;
      v->type.dtype = DType::kFloat16;
      made_f16.insert(v);
      ++values;
      if (!graph_outputs.count(v)) continue;
      // The graph output keeps its name and type: a Cast after n produces it.
      std::string name = v->name;
      v->name = g.UniqueName(name + "_f16");
      ir::Node* c = g.InsertNodeAfter(n, OpKind::kCast, {v}, {{"to", int64_t(DType::kFloat32)}},
                                      name + "_to_f32");
      c->outputs[0]->name = name;
      std::replace(g.outputs().begin(), g.outputs().end(), v, c->outputs[0]);
      ++casts;
    }
  }
  // Inputs of another storage type than their node's: converted constants, or Casts. A node left
  // as it is reads f32 again only where this pass made f16 of its input; the model's own f16
  // values stay as they are (a Max of two f16 inputs keeps them, and its f16 output).
  std::map<std::pair<const ir::Value*, DType>, ir::Value*> converted;
  for (ir::Node* n : order) {
    DType want = f16[n] ? DType::kFloat16 : DType::kFloat32;
    for (ir::Value*& in : n->inputs) {
      // A Cast converts by itself; f64 stays as the model has it.
      if (n->op == OpKind::kCast || !IsFloat(in->type.dtype) || in->type.dtype == want ||
          in->type.dtype == DType::kFloat64 || (!f16[n] && !made_f16.count(in)))
        continue;
      ir::Value*& to = converted[{in, want}];
      if (!to) {
        if (in->is_constant() && want == DType::kFloat16) {
          to = g.AddConstant(g.UniqueName(in->name + "_f16"), ToHalf(*in->constant));
          ++constants;
        } else {
          to = g.InsertNodeAfter(in->producer, OpKind::kCast, {in}, {{"to", int64_t(want)}},
                                 g.UniqueName(in->name + (f16[n] ? "_to_f16" : "_to_f32")))
                   ->outputs[0];
          ++casts;
        }
      }
      in = to;
    }
  }
  g.RemoveDeadNodes();
  Stats st = ProductStats(MarkProducts(g, ComputeMode::kFp16, DType::kFloat16).products, ctx);
  st.merge(Stats{{"f16-values", values}, {"casts", casts}, {"constants-converted", constants}});
  st.merge(exact);
  return st;
}

int64_t ProductMacs(const ir::Node& n) {
  if (n.op == OpKind::kConv) return static_cast<int64_t>(codegen::ConvFlops(n) / 2);
  codegen::GemmShape s = codegen::GemmShapeOf(n);
  return s.batch * s.m * s.n * s.k;
}

}  // namespace texel::passes
