// channels-last: convolutions on the matrix engine read and write NHWC (docs/precision.md).
//
// An NCHW image can only reach the warp-tiled kernel's local memory through registers, a few
// elements at a time (its window's taps shift the pixel runs off every 16-byte grid). In NHWC a
// tap's channels are contiguous: the kernel copies them asynchronously, 16 bytes a chunk, as it
// copies a stored matrix (generate_conv.cpp ChannelsLastGemm). So every Conv the engine
// computes (codegen::ConvTakesChannelsLast) becomes
//   Transpose(to NCHW) <- Conv(channels_last = 1, filters OIHW -> OHWI) <- Transpose(to NHWC)
// and the transposes move down through elementwise nodes (whose operands are then all NHWC:
// transposed values, or constants transposed here) until they meet their inverse and cancel.
// What stays are the edges of each channels-last region, and only regions with several
// convolutions per edge are rewritten (ChosenNodes). A ResNet keeps one transpose, after its
// stem's pooling: its global pooling reduces the NHWC result (ReducesNhwc).
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "backends/native/native_backend.h"
#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "ir/host_eval.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

using ir::OpKind;

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1}, kToNchw = {0, 3, 1, 2};

bool IsTranspose(const ir::Node* n, const std::vector<int64_t>& perm) {
  return n && n->op == OpKind::kTranspose && n->attrs.Ints("perm") == perm;
}

ConstTensorPtr PermutedConstant(const HostTensor& t, const std::vector<int64_t>& perm) {
  auto r = ir::EvaluateOnHost(OpKind::kTranspose, {{"perm", perm}}, {&t},
                              {t.dtype, Permuted(t.shape, perm)});
  TEXEL_CHECK(r.has_value(), "the host evaluator transposes constants");
  return std::make_shared<HostTensor>(std::move(*r));
}

// Whether the transpose to NCHW of an NHWC value of shape s keeps its elements in order (it moves
// only dims of size 1: a pooled [N, 1, 1, C]), so that a Reshape, which is free, does it.
bool OnlyUnitDimsMove(const Shape& s) {
  int64_t last = -1;
  for (int64_t p : kToNchw) {
    if (s[p] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

// Puts a Transpose to NCHW (or the Reshape that does it) after n, whose output has just become
// NHWC (its type set here), and makes every reader of the output (and the graph, under the
// output's name) read it.
void TransposeBack(ir::Graph& g, ir::Node* n, std::set<const ir::Node*>& made) {
  ir::Value* y = n->outputs[0];
  Shape nchw = y->type.shape;
  y->type.shape = Permuted(nchw, kToNhwc);
  ir::Node* t =
      OnlyUnitDimsMove(y->type.shape)
          ? g.InsertNodeAfter(n, OpKind::kReshape, {y}, {{"shape", nchw}}, n->name + "_to_nchw")
          : g.InsertNodeAfter(n, OpKind::kTranspose, {y}, {{"perm", kToNchw}},
                              n->name + "_to_nchw");
  made.insert(t);
  ir::Value* back = t->outputs[0];
  g.ReplaceAllUses(y, back);
  t->inputs[0] = y;
  std::string name = y->name;
  y->name = g.UniqueName(name + "_nhwc");
  back->name = name;
}

// The transposes to NHWC made so far, by source: a value several nodes read is transposed once.
using NhwcOf = std::map<const ir::Value*, ir::Value*>;

// x (NCHW) as NHWC: the value under its transpose to NCHW, or a transpose made after x.
ir::Value* AsNhwc(ir::Graph& g, ir::Value* x, NhwcOf& nhwc) {
  if (IsTranspose(x->producer, kToNchw)) return x->producer->inputs[0];
  ir::Value*& xt = nhwc[x];
  if (!xt)
    xt = g.InsertNodeAfter(x->producer, OpKind::kTranspose, {x}, {{"perm", kToNhwc}},
                           x->name + "_to_nhwc")
             ->outputs[0];
  return xt;
}

// Rewrites Conv n to channels-last with transposes around it.
void ToChannelsLast(ir::Graph& g, ir::Node* n, NhwcOf& nhwc, std::set<const ir::Node*>& made) {
  n->inputs[0] = AsNhwc(g, n->inputs[0], nhwc);
  ir::Value* w = n->inputs[1];
  n->inputs[1] =
      g.AddConstant(g.UniqueName(w->name + "_ohwi"), PermutedConstant(*w->constant, kToNhwc));
  n->attrs.Set("channels_last", int64_t{1});
  TransposeBack(g, n, made);
}

// Whether elementwise node n could run on NHWC operands: a rank-4 result, its operands
// constants (transposed here) or rank-4 values, none read through a view (passes/views.cpp:
// its strides are NCHW's).
bool MayRunNhwc(const ir::Node& n) {
  if (!ir::IsElementwiseClass(n.info().cls) || n.outputs.size() != 1 ||
      n.outputs[0]->type.shape.size() != 4)
    return false;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ir::Value* v = n.inputs[k];
    if (n.attrs.Has(fmt::format("in{}_strides", k))) return false;
    if (v->type.shape.size() > 4 || (!v->is_constant() && v->type.shape.size() != 4)) return false;
  }
  return true;
}

// Whether elementwise node n, which may run NHWC, reads a transpose to NCHW: it then runs on
// the NHWC value under it, its other operands transposed to NHWC in turn (the region's edge
// moves up to them).
bool Sinkable(const ir::Node& n) {
  for (const ir::Value* v : n.inputs)
    if (IsTranspose(v->producer, kToNchw)) return true;
  return false;
}

// Whether reduction n (keeping its dims) reads a region's result through its transpose to NCHW
// (one of `made`): it then reduces the NHWC value over the same axes renamed (a ResNet's global
// pooling, whose [N, 1, 1, C] result is its NCHW shape as a Reshape).
bool ReducesNhwc(const ir::Node& n, const std::set<const ir::Node*>& made) {
  bool plain = n.op == OpKind::kReduceSum || n.op == OpKind::kReduceMean ||
               n.op == OpKind::kReduceMax || n.op == OpKind::kReduceMin;
  return plain && n.attrs.Int("keepdims") != 0 && !n.attrs.Has("in0_strides") &&
         made.count(n.inputs[0]->producer);
}

void SinkReduce(ir::Graph& g, ir::Node* n, std::set<const ir::Node*>& made) {
  n->inputs[0] = n->inputs[0]->producer->inputs[0];
  std::vector<int64_t> axes;
  for (int64_t a : n->attrs.Ints("axes"))
    axes.push_back(std::find(kToNhwc.begin(), kToNhwc.end(), a) - kToNhwc.begin());
  std::sort(axes.begin(), axes.end());
  n->attrs.Set("axes", axes);
  TransposeBack(g, n, made);
}

// A region: convolutions that may become channels-last and elementwise nodes that may run NHWC,
// connected by the values between them. Each value entering or leaving it is a transpose
// kernel; a region is rewritten where it has at least kConvsPerEdge convolutions per such
// value. ResNet-50 has one region of 52 convolutions (all but the stem) and 2 edges; GoogLeNet's
// branches, and MobileNetV2's 1x1 convolutions between depthwise ones, have 1-2 convolutions and 2
// edges each, and ran 1.4-1.7x slower in fp16 at batch 1 on the H200 all rewritten.
// Regions of f32 convolutions (tf32, tf32x3) alike: on the H200 at batch 1 ResNet-18, -34 and -50,
// Wide ResNet-50-2 and FCN-ResNet50 ran 1.3-2.4x faster with theirs on the engine than on the
// scalar fp32 kernels (docs/precision.md), as ResNet-50 did at batch 32.
constexpr int64_t kConvsPerEdge = 3;

// The nodes of the regions worth rewriting.
std::set<const ir::Node*> ChosenNodes(const ir::Graph& g, const codegen::Target& target,
                                      int64_t* kept, int64_t* left) {
  std::map<const ir::Node*, size_t> index;
  std::vector<const ir::Node*> cand;
  std::vector<bool> conv;
  for (const auto& n : g.nodes()) {
    bool c = n->op == OpKind::kConv && codegen::ConvTakesChannelsLast(*n, target);
    if (!c && !MayRunNhwc(*n)) continue;
    index[n.get()] = cand.size();
    cand.push_back(n.get());
    conv.push_back(c);
  }
  std::vector<size_t> parent(cand.size());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto root = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  auto region_of = [&](const ir::Node* n) -> std::optional<size_t> {
    auto it = n ? index.find(n) : index.end();
    if (it == index.end()) return std::nullopt;
    return root(it->second);
  };
  for (size_t i = 0; i < cand.size(); ++i)
    for (const ir::Value* v : cand[i]->inputs)
      if (auto r = region_of(v->producer)) parent[*r] = root(i);
  // Edges: values read from outside (once per region), values read outside or graph outputs.
  std::map<size_t, std::set<const ir::Value*>> edges;
  std::map<size_t, int64_t> convs;
  for (size_t i = 0; i < cand.size(); ++i) {
    size_t r = root(i);
    convs[r] += conv[i];
    for (const ir::Value* v : cand[i]->inputs)
      if (!v->is_constant() && region_of(v->producer) != r) edges[r].insert(v);
  }
  for (const auto& n : g.nodes())
    for (const ir::Value* v : n->inputs)
      if (auto r = region_of(v->producer); r && region_of(n.get()) != r) edges[*r].insert(v);
  for (const ir::Value* v : g.outputs())
    if (auto r = region_of(v->producer)) edges[*r].insert(v);
  auto worth = [&](size_t r) {
    return convs[r] > 0 && convs[r] >= kConvsPerEdge * static_cast<int64_t>(edges[r].size());
  };
  std::set<const ir::Node*> chosen;
  for (size_t i = 0; i < cand.size(); ++i)
    if (worth(root(i))) chosen.insert(cand[i]);
  for (const auto& [r, n] : convs)
    if (n > 0) ++(worth(r) ? *kept : *left);
  return chosen;
}

// n on the NHWC values under its operands' transposes (constants padded to rank 4 and
// transposed), with a transpose back after it.
void Sink(ir::Graph& g, ir::Node* n, NhwcOf& nhwc, std::set<const ir::Node*>& made) {
  for (ir::Value*& v : n->inputs) {
    if (!v->is_constant()) {
      v = AsNhwc(g, v, nhwc);
      continue;
    }
    HostTensor c = *v->constant;
    c.shape.insert(c.shape.begin(), 4 - c.shape.size(), 1);  // numpy aligns trailing dims
    v = g.AddConstant(g.UniqueName(v->name + "_nhwc"), PermutedConstant(c, kToNhwc));
  }
  TransposeBack(g, n, made);
}

}  // namespace

Stats ChannelsLast(ir::Graph& g, const PassContext& ctx) {
  if (!ctx.device || ctx.storage != StoragePolicy::kBuffer) return {};
  if (!BackendMayRun(ctx, backends::kNative, ir::OpKind::kConv)) return {};
  codegen::Target target = backends::NativeBackend::TargetOf(*ctx.device);
  std::vector<ir::Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  int64_t kept = 0, passed = 0;
  std::set<const ir::Node*> chosen = ChosenNodes(g, target, &kept, &passed);
  NhwcOf nhwc;
  std::set<const ir::Node*> made;  // the transposes to NCHW made here
  int64_t convs = 0, moved = 0;
  for (ir::Node* n : order) {
    if (ReducesNhwc(*n, made)) {
      SinkReduce(g, n, made);
      ++moved;
    }
    if (!chosen.count(n)) {
      // tf32 and tf32x3 marked every f32 convolution for this decision; those left NCHW compute
      // in fp32 (and are tuned and counted as such).
      if (n->op == OpKind::kConv && n->outputs[0]->type.dtype == DType::kFloat32)
        n->attrs.Erase("compute_mode");
      continue;
    }
    if (n->op == OpKind::kConv) {
      ToChannelsLast(g, n, nhwc, made);
      ++convs;
    } else if (Sinkable(*n)) {
      Sink(g, n, nhwc, made);
      ++moved;
    }
  }
  g.RemoveDeadNodes();
  if (kept + passed == 0) return {};
  int64_t left = 0;  // the rewritten regions' edges, and the model's own transposes so permuted
  for (const auto& n : g.nodes())
    left += convs > 0 && (IsTranspose(n.get(), kToNhwc) || IsTranspose(n.get(), kToNchw));
  return {{"regions-rewritten", kept},
          {"regions-left-nchw", passed},
          {"channels-last-convs", convs},
          {"nodes-moved", moved},
          {"transposes-left", left}};
}

}  // namespace texel::passes
