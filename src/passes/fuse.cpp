// fuse: groups a node with the chain of elementwise nodes that consumes its result, so that the
// group runs as one kernel and the values in between never reach memory (bias, folded
// BatchNorm, activations, residual adds and scales after a conv; long elementwise chains).
// A node N joins the group of the producer P of one of its inputs when
//   - N is elementwise (unary, binary, ternary) with P's output shape (up to leading dims of
//     size 1; exactly after a Gather or Concat),
//   - P is an anchor (Conv, ConvTranspose, MatMul, pooling, reduction, LayerNorm, an f32 or
//     f16 Gather or, where activations stay in buffers, Concat: their kernels apply an
//     epilogue; the Gather's is an embedding's position term, the Concat's DenseNet's BatchNorm
//     and ReLU before each layer's convolution) or elementwise, and P's result is used once, by
//     N, and is not a graph output,
//   - both run on one backend that fuses epilogues (an unassigned node counts as native),
//   - for an anchor's group, every output keeps the anchor's float type, except that the
//     kernels of MatMul and LayerNorm store their group's result as f16 or f32 whatever they
//     compute on: under --precision fp16 the Cast that gives a graph output its f32 (passes/
//     precision.cpp) then runs in the kernel that computes the output.
// Then an elementwise group H joins the group G whose result X it reads when every use of X is
// in G or H (X was read twice, so the rule above stopped): GELU's x * (1 + erf(x / sqrt 2)) / 2,
// SiLU's x * sigmoid(x) and HardSwish after a MatMul or Conv then run in its epilogue. X's
// producer, if in no group yet (a Conv whose BatchNorm was folded into it), becomes one.
// Then a LayerNorm (with its group) joins the group of the MatMul whose result X it normalises
// over X's last dim: codegen computes the product as partial slices (split-K, or one) and the
// LayerNorm sums them and applies the product's epilogue (bias, residual) as it reads them, so
// a split product needs no sum kernel (a transformer layer's "Add & Norm"). Likewise after a
// Gather's group (an embedding lookup and its position term): the LayerNorm gathers the rows and
// applies the Gather's epilogue as it reads them, so the embedding needs no kernel of its own
// (one fewer per BERT- or GPT-style model); and after an elementwise group that reads one
// operand of X's shape and type as it is (ViT's position term): the LayerNorm applies the group
// to it as it reads it. When X is read
// elsewhere too (a pre-norm layer's residual stream), every such reader must come after the
// merged group or belong to the LayerNorm's epilogue, and the LayerNorm also writes X
// (attribute write_input = 1) before its epilogue reads it.
// Before these rules, a graph input's Cast to f16 (--precision fp16) whose every reader is a
// native convolution that gathers its image runs inside those convolutions: they read the f32
// input and convert it as they gather it (attribute convert_input, codegen::ConvReadsF32Image),
// and the Cast's kernel goes. Buffer storage only (texture kernels read one channel type).
// No group grows past kMaxGroupNodes: a chain of thousands of elementwise nodes (a hostile or
// generated model) would be one kernel of as many statements, which OpenCL compilers (PoCL's
// clang among them) overflow their stack on; the chain continues in the next group.
// Groups are recorded in Node::group; lowering makes one kernel per group (backends/lower.cpp),
// two for a product with its LayerNorm.
#include <algorithm>
#include <map>
#include <set>

#include "backends/backend.h"
#include "codegen/opencl/generator.h"
#include "ir/index_map.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

using ir::OpClass;
using ir::OpKind;

constexpr size_t kMaxGroupNodes = 64;

bool IsElementwise(const ir::Node& n) {
  bool elementwise = ir::IsElementwiseClass(n.info().cls);
  // Integer Pow is a loop, not an expression.
  return elementwise && !(n.op == OpKind::kPow && !IsFloat(n.inputs[0]->type.dtype));
}

// buffers: no value may become an image (a Concat of images is a texture kernel's, which takes
// no epilogue).
bool IsAnchor(const ir::Node& n, bool buffers) {
  OpClass c = n.info().cls;
  if (n.op == OpKind::kGather || (n.op == OpKind::kConcat && buffers))
    return n.outputs[0]->type.dtype == DType::kFloat32 ||
           n.outputs[0]->type.dtype == DType::kFloat16;
  return (c == OpClass::kConv || c == OpClass::kMatMul ||
          (c == OpClass::kPool && n.op != OpKind::kMaxPoolIndices) ||
          (c == OpClass::kReduce && n.op != OpKind::kArgMax && n.op != OpKind::kArgMin) ||
          n.op == OpKind::kLayerNorm) &&
         IsFloat(n.outputs[0]->type.dtype);
}

// Whether a group led by `anchor` may end in a value of type t (see the first rule).
bool StoresAs(const ir::Node& anchor, DType t) {
  DType a = anchor.outputs[0]->type.dtype;
  auto f16_or_f32 = [](DType d) { return d == DType::kFloat16 || d == DType::kFloat32; };
  return t == a || ((anchor.op == OpKind::kMatMul || anchor.op == OpKind::kLayerNorm) &&
                    f16_or_f32(a) && f16_or_f32(t));
}

bool BackendFuses(const ir::Node& n) {
  const backends::Backend* be = backends::FindBackend(backends::BackendOf(n));
  return be && be->FusesEpilogues();
}

// Whether a node whose result has shape `out`, reading x, may join the group led by `first`:
// same layout up to leading unit dims, except after a Gather, whose kernel indexes the chain
// by its own coordinates: there the shapes must be equal.
bool JoinsGroupOf(const ir::Node& first, const Shape& x, const Shape& out) {
  if (first.op == OpKind::kGather || first.op == OpKind::kConcat)
    return first.outputs[0]->type.shape == out;
  return SameLayout(x, out);
}

// The rule before the others; returns how many Casts went.
int64_t ConvertInputsInConvolutions(ir::Graph& g, const PassContext& ctx) {
  if (ctx.storage != StoragePolicy::kBuffer) return 0;
  std::vector<std::vector<ir::Node*>> readers(g.UseCounts().size());
  for (const auto& node : g.nodes())
    for (const ir::Value* in : node->inputs) readers[in->id].push_back(node.get());
  std::set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end());
  int64_t absorbed = 0;
  for (const auto& node : g.nodes()) {
    ir::Node& c = *node;
    if (c.op != OpKind::kCast || !c.inputs[0]->is_input ||
        c.inputs[0]->type.dtype != DType::kFloat32 || c.outputs[0]->type.dtype != DType::kFloat16 ||
        outputs.count(c.outputs[0]))
      continue;
    ir::Value *x = c.inputs[0], *h = c.outputs[0];
    std::vector<ir::Node*>& rs = readers[h->id];
    auto reads_as_image = [&](const ir::Node* r) {
      if (r->op != OpKind::kConv || backends::BackendOf(*r) != backends::kNative) return false;
      for (size_t i = 1; i < r->inputs.size(); ++i)
        if (r->inputs[i] == h) return false;
      return codegen::ConvCanConvertImage(*r);
    };
    if (rs.empty() || !std::all_of(rs.begin(), rs.end(), reads_as_image)) continue;
    for (ir::Node* r : rs) {
      r->inputs[0] = x;
      r->attrs.Set("convert_input", int64_t{1});
    }
    ++absorbed;
  }
  if (absorbed > 0) g.RemoveDeadNodes();
  return absorbed;
}

// What the second and third rules look up. They change groups, never edges.
struct GraphIndex {
  std::map<const ir::Node*, size_t> pos;            // graph order
  std::vector<std::vector<const ir::Node*>> users;  // value id -> the nodes that read it
  std::vector<bool> outputs;                        // value id -> a graph output
  std::map<int, std::vector<ir::Node*>> members;    // group -> its nodes in graph order

  explicit GraphIndex(ir::Graph& g) : users(g.UseCounts().size()), outputs(users.size(), false) {
    for (const auto& node : g.nodes()) {
      pos[node.get()] = pos.size();
      for (const ir::Value* in : node->inputs) users[in->id].push_back(node.get());
      if (node->group >= 0) members[node->group].push_back(node.get());
    }
    for (const ir::Value* v : g.outputs()) outputs[v->id] = true;
  }
};

// The second rule: merges elementwise groups into the group whose result they read (a group
// made for a producer that is in none) where all of that result's uses are inside the two.
// Returns how many groups were merged away.
int64_t MergeDiamonds(GraphIndex& ix, std::vector<const ir::Node*>& root, bool buffers) {
  int64_t merged = 0;
  // Groups made here for producers that were alone (a Conv whose BatchNorm was folded into it,
  // then SiLU) are added to ix.members while it is walked: std::map keeps the walk valid.
  for (auto& [h, mh] : ix.members) {
    if (mh.empty() || !IsElementwise(*mh.front())) continue;
    const ir::Value* out_h = mh.back()->outputs[0];
    for (const ir::Value* x : ir::ExternalInputs({mh.begin(), mh.end()})) {
      ir::Node* p = x->producer;
      if (!p || p->group == h || ix.outputs[x->id]) continue;
      if (p->group < 0 && !((IsAnchor(*p, buffers) || IsElementwise(*p)) && BackendFuses(*p)))
        continue;
      std::vector<ir::Node*> alone{p};
      std::vector<ir::Node*>& gm = p->group >= 0 ? ix.members[p->group] : alone;
      if (gm.back()->outputs[0] != x || ix.pos[mh.front()] < ix.pos[gm.back()] ||
          !JoinsGroupOf(*gm.front(), x->type.shape, out_h->type.shape) ||
          p->backend != mh.front()->backend)
        continue;
      if (IsAnchor(*gm.front(), buffers) && !StoresAs(*gm.front(), out_h->type.dtype)) continue;
      bool inside = std::none_of(mh.begin(), mh.end(),
                                 [](const ir::Node* n) { return ir::ReadsThroughView(*n); });
      for (const ir::Node* u : ix.users[x->id])
        inside &= (p->group >= 0 && u->group == p->group) || u->group == h;
      if (!inside || gm.size() + mh.size() > kMaxGroupNodes) continue;
      if (p->group < 0) {
        p->group = static_cast<int>(root.size());
        root.push_back(p);
      }
      std::vector<ir::Node*>& members = ix.members[p->group];
      if (members.empty()) members = {p};
      for (ir::Node* n : mh) n->group = p->group;
      members.insert(members.end(), mh.begin(), mh.end());
      mh.clear();
      ++merged;
      break;
    }
  }
  return merged;
}

// The third rule; returns how many LayerNorms joined a product's, a Gather's or an elementwise
// group (the statistic keeps its first name, norms-after-products).
// An elementwise group's seed is read as a buffer: only where no value may become an image.
int64_t MergeNormPrologues(ir::Graph& g, GraphIndex& ix, std::vector<const ir::Node*>& root,
                           bool buffers_only) {
  int64_t merged = 0;
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    if (n.op != OpKind::kLayerNorm || ir::ReadsThroughView(n)) continue;
    ir::Value* x = n.inputs[0];
    ir::Node* p = x->producer;
    if (!p || ix.outputs[x->id] || p->backend != n.backend || !BackendFuses(n)) continue;
    std::vector<ir::Node*> producer = p->group >= 0 ? ix.members[p->group] : std::vector{p};
    const Shape& xs = x->type.shape;
    bool has_norm = std::any_of(producer.begin(), producer.end(),
                                [](const ir::Node* m) { return m->op == OpKind::kLayerNorm; });
    const ir::Node& head = *producer.front();
    bool gathers =
        head.op == OpKind::kGather && IsAnchor(head, buffers_only) && !ir::ReadsThroughView(head);
    // An elementwise group reads one operand as stored (codegen::ElementwiseSeed).
    bool computes = buffers_only && IsElementwise(head) && codegen::ElementwiseSeed(head) &&
                    std::none_of(producer.begin(), producer.end(),
                                 [](const ir::Node* m) { return ir::ReadsThroughView(*m); });
    if ((head.op != OpKind::kMatMul && !gathers && !computes) || producer.back()->outputs[0] != x ||
        xs.empty() || has_norm || n.attrs.Int("axis") != static_cast<int64_t>(xs.size()) - 1 ||
        head.outputs[0]->type.dtype == DType::kFloat64 ||
        x->type.dtype != head.outputs[0]->type.dtype)
      continue;
    std::vector<ir::Node*> moved = n.group >= 0 ? ix.members[n.group] : std::vector{&n};
    // Other readers of X: in the LayerNorm's epilogue, or after the merged group.
    const std::vector<const ir::Node*>& readers = ix.users[x->id];
    bool read_elsewhere = readers.size() > 1;
    bool read_after = std::all_of(readers.begin(), readers.end(), [&](const ir::Node* u) {
      return u == &n || (n.group >= 0 && u->group == n.group) || ix.pos[u] > ix.pos[moved.back()];
    });
    if (!read_after) continue;
    if (p->group < 0) {
      p->group = static_cast<int>(root.size());
      root.push_back(p);
      ix.members[p->group] = {p};
    }
    if (read_elsewhere) n.attrs.Set("write_input", int64_t{1});
    if (n.group >= 0) ix.members.erase(n.group);
    for (ir::Node* m : moved) m->group = p->group;
    std::vector<ir::Node*>& gm = ix.members[p->group];
    gm.insert(gm.end(), moved.begin(), moved.end());
    ++merged;
  }
  return merged;
}

}  // namespace

Stats Fuse(ir::Graph& g, const PassContext& ctx) {
  const bool buffers = ctx.storage == StoragePolicy::kBuffer;
  int64_t converted = ConvertInputsInConvolutions(g, ctx);
  std::vector<int> uses = g.UseCounts();
  std::vector<const ir::Node*> root;  // group id -> the group's first node
  std::vector<size_t> size;           // group id -> its nodes so far
  int64_t fused = 0;
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    if (!IsElementwise(n) || !BackendFuses(n) || ir::ReadsThroughView(n)) continue;
    for (ir::Value* in : n.inputs) {
      ir::Node* p = in->producer;
      if (!p || uses[in->id] != 1) continue;
      if (p->backend != n.backend || !(IsAnchor(*p, buffers) || IsElementwise(*p))) continue;
      const ir::Node* first = p->group >= 0 ? root[p->group] : p;
      if (!JoinsGroupOf(*first, in->type.shape, n.outputs[0]->type.shape)) continue;
      if (IsAnchor(*first, buffers) && !StoresAs(*first, n.outputs[0]->type.dtype)) continue;
      if (p->group >= 0 && size[p->group] >= kMaxGroupNodes) continue;
      if (p->group < 0) {
        p->group = static_cast<int>(root.size());
        root.push_back(p);
        size.push_back(1);
      }
      n.group = p->group;
      ++size[p->group];
      ++fused;
      break;
    }
  }
  GraphIndex ix(g);
  int64_t merged = MergeDiamonds(ix, root, buffers);
  int64_t norms = MergeNormPrologues(g, ix, root, buffers);
  std::set<int> groups;
  for (const auto& node : g.nodes())
    if (node->group >= 0) groups.insert(node->group);
  return {{"groups", static_cast<int64_t>(groups.size())},
          {"nodes-fused", fused},
          {"groups-merged", merged},
          {"norms-after-products", norms},
          {"inputs-converted-in-convolutions", converted}};
}

}  // namespace texel::passes
