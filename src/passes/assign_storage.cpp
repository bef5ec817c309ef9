// assign-storage: puts values in 2D images where texture kernels compute them (--storage).
//   buffer (the default): nothing changes.
//   texture: every native group that a texture kernel computes writes an image (f16 values, under
//     --precision fp16, in f16 channels): Conv 2-D
//     (dense or depthwise, constant filters, stored as an OIHW4o weight image), 2-D
//     Max/AveragePool and ReduceMean/Sum/Max over H and W keeping them, whatever their input; an
//     elementwise group whose first node reads an image of its output's shape. The group's fused
//     chain runs on the texels.
//   auto: per group, from device facts: texture on GPUs whose texture path is the fast one
//     (Qualcomm Adreno, ARM Mali, Imagination), buffer elsewhere; with --measure, from measured
//     time on any device with images: texture where the group's anchor alone ran faster with
//     its input and result in images than in buffers, by more than the two conversions
//     (about a kernel launch each) that leaving buffers costs (cached like other measurements).
// Then every use gets the storage it needs, through a ConvertStorage node (a device-side copy,
// one per value and storage) where the producer's differs: texture kernels read their main
// input as an image; everything else (buffer kernels, library calls, views, graph outputs)
// reads buffers, except that a texture group's chain may read an image of its own shape.
// Values that would not fit the device's largest image stay in buffers.
#include <map>

#include "backends/backend.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "core/texture_layout.h"
#include "ir/index_map.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

using ir::Storage;

// Values images hold: 4-D f32, and f16 under --precision fp16 (in f16 channels).
bool Is4dF32(const ir::Value* v) {
  return (v->type.dtype == DType::kFloat32 || v->type.dtype == DType::kFloat16) &&
         v->type.shape.size() == 4;
}

// An image of v has f16 channels: v is f16, or --texture-precision fp16 asks for them.
bool HalfTexels(const ir::Value* v, const PassContext& ctx) {
  return ctx.half_texels || v->type.dtype == DType::kFloat16;
}

bool FitsDevice(const ir::Value* v, TextureKind kind, const cl::DeviceInfo& d) {
  return FitsImage(TextureExtentOf(v->type.shape, kind), d.image2d_max_width, d.image2d_max_height);
}

bool IsElementwise(const ir::Node& n) {
  return n.info().cls == ir::OpClass::kUnary || n.info().cls == ir::OpClass::kBinary;
}

// The value a texture kernel for `group` reads as an image (its main input), or null when no
// texture kernel computes the group.
const ir::Value* TextureInput(const std::vector<ir::Node*>& group, const cl::DeviceInfo& d) {
  const ir::Node& a = *group.front();
  const ir::Value* out = group.back()->outputs[0];
  if (a.backend != backends::kNative || !Is4dF32(out) ||
      !FitsDevice(out, TextureKind::kActivation, d))
    return nullptr;
  for (size_t k = 1; k < group.size(); ++k)
    if (!IsElementwise(*group[k]) || !Is4dF32(group[k]->outputs[0])) return nullptr;
  // Texture kernels read operands lane by lane at their own coordinates, not through views.
  for (const ir::Node* n : group)
    if (ir::ReadsThroughView(*n)) return nullptr;
  const ir::Value* x = a.inputs[0];
  if (a.op == ir::OpKind::kConv) {
    const ir::Value* w = a.inputs[1];
    if (!Is4dF32(x) || !w->is_constant() || (a.inputs.size() > 2 && !a.inputs[2]->is_constant()))
      return nullptr;
    int64_t groups = a.attrs.Int("group");
    bool depthwise =
        groups == x->type.shape[1] && groups == out->type.shape[1] && w->type.shape[1] == 1;
    if ((groups != 1 && !depthwise) || !FitsDevice(w, TextureKind::kWeight, d)) return nullptr;
    return FitsDevice(x, TextureKind::kActivation, d) ? x : nullptr;
  }
  if (a.op == ir::OpKind::kMaxPool || a.op == ir::OpKind::kAveragePool)
    return Is4dF32(x) && FitsDevice(x, TextureKind::kActivation, d) ? x : nullptr;
  bool spatial_reduce = a.op == ir::OpKind::kReduceMean || a.op == ir::OpKind::kReduceSum ||
                        a.op == ir::OpKind::kReduceMax;
  if (spatial_reduce && a.attrs.Ints("axes") == std::vector<int64_t>{2, 3} &&
      a.attrs.Int("keepdims") != 0)
    return Is4dF32(x) && FitsDevice(x, TextureKind::kActivation, d) ? x : nullptr;
  if (IsElementwise(a) && Is4dF32(a.outputs[0]))
    for (const ir::Value* v : a.inputs)
      if (v->is_image() && v->type.shape == out->type.shape) return v;
  return nullptr;
}

bool PrefersTextures(const cl::DeviceInfo& d) {
  if (d.kind != cl::DeviceKind::kGpu || !d.image_support) return false;
  for (const char* v : {"Qualcomm", "QUALCOMM", "ARM", "Imagination"})
    if (d.vendor.find(v) != std::string::npos) return true;
  return false;
}

constexpr EnumName<StoragePolicy> kStoragePolicyNames[] = {{StoragePolicy::kBuffer, "buffer"},
                                                           {StoragePolicy::kTexture, "texture"},
                                                           {StoragePolicy::kAuto, "auto"}};

}  // namespace

const char* StoragePolicyName(StoragePolicy p) { return NameIn(kStoragePolicyNames, p); }

bool ParseStoragePolicy(std::string_view s, StoragePolicy* p) {
  return ParseIn(kStoragePolicyNames, s, p);
}

namespace {

// Which fusion groups compute into images, and what each reads as an image.
struct TextureGroups {
  std::map<const ir::Node*, const ir::Value*> image_input;  // anchor -> its image input
  std::map<const ir::Node*, const ir::Node*> anchor_of;     // every node's group anchor
  int64_t count = 0, measured = 0;
};

// Every group a texture kernel computes (with `measured`, only those measured faster so,
// counting the conversions at their edges), its output marked as an image.
TextureGroups ChooseTextureGroups(ir::Graph& g, const PassContext& ctx, bool measured) {
  TextureGroups tg;
  for (const auto& group : ir::FusionGroups(g)) {
    for (ir::Node* n : group) tg.anchor_of[n] = group.front();
    const ir::Value* x = TextureInput(group, *ctx.device);
    if (!x) continue;
    if (measured) {
      // Starting from a buffer costs a conversion in and, until later groups follow into
      // images, one out: about a kernel launch (5 us) each.
      ++tg.measured;
      double boundary = x->is_image() ? 0.0 : 2 * 5e-6;
      if (ctx.measure_storage(*group.front(), Storage::kTexture) + boundary >=
          ctx.measure_storage(*group.front(), Storage::kBuffer))
        continue;
    }
    tg.image_input[group.front()] = x;
    ir::Value* out = group.back()->outputs[0];
    out->storage = Storage::kTexture;
    out->half_texels = HalfTexels(out, ctx);
    ++tg.count;
  }
  return tg;
}

// ConvertStorage nodes, one per value and storage, made on first use.
class Conversions {
 public:
  Conversions(ir::Graph& g, const PassContext& ctx) : g_(g), ctx_(ctx) {}
  ir::Value* To(ir::Value* v, Storage to) {
    auto [it, fresh] = converted_.try_emplace({v, to}, nullptr);
    if (fresh) {
      ir::Node* c =
          g_.InsertNodeAfter(v->producer, ir::OpKind::kConvertStorage, {v}, {},
                             v->name + (to == Storage::kBuffer ? "/to_buffer" : "/to_texture"));
      c->backend = backends::kNative;
      c->outputs[0]->storage = to;
      c->outputs[0]->half_texels = to != Storage::kBuffer && HalfTexels(v, ctx_);
      it->second = c->outputs[0];
    }
    return it->second;
  }
  int64_t count() const { return static_cast<int64_t>(converted_.size()); }

 private:
  ir::Graph& g_;
  const PassContext& ctx_;
  std::map<std::pair<const ir::Value*, Storage>, ir::Value*> converted_;
};

// Gives node n's inputs the storage it reads them in (through conversions); a texture group's
// convolution gets its filter packed as texels. Returns the filters packed.
int64_t ConvertInputs(ir::Graph& g, const PassContext& ctx, const TextureGroups& tg, ir::Node* n,
                      Conversions& conversions) {
  const ir::Node* anchor = tg.anchor_of.at(n);
  auto img = tg.image_input.find(anchor);
  bool texture_group = img != tg.image_input.end();
  const ir::Value* chain_out = texture_group ? n->outputs[0] : nullptr;
  int64_t weights = 0;
  for (size_t k = 0; k < n->inputs.size(); ++k) {
    ir::Value* v = n->inputs[k];
    if (v->producer && tg.anchor_of.at(v->producer) == anchor && v->producer != n) continue;
    if (texture_group && n == anchor && n->op == ir::OpKind::kConv && k == 1) {
      if (v->storage != Storage::kTextureWeight) {  // a filter of its own, packed as texels
        ir::Value* w = g.AddConstant(v->name + "/texels", v->constant);
        w->storage = Storage::kTextureWeight;
        w->half_texels = HalfTexels(v, ctx);
        n->inputs[k] = w;
        ++weights;
      }
      continue;
    }
    Storage need = Storage::kBuffer;
    if (texture_group && n == anchor && v == img->second) need = Storage::kTexture;
    // A chain may read an image of its own shape by lane.
    if (texture_group && v->is_image() && v->type.shape == chain_out->type.shape) continue;
    if (v->is_constant() && need == Storage::kBuffer) continue;
    if ((v->storage == Storage::kBuffer) != (need == Storage::kBuffer))
      n->inputs[k] = conversions.To(v, need);
  }
  return weights;
}

}  // namespace

Stats AssignStorage(ir::Graph& g, const PassContext& ctx) {
  if (ctx.storage == StoragePolicy::kBuffer) return {};
  const cl::DeviceInfo& d = *ctx.device;
  if (!d.image_support) {
    if (ctx.storage == StoragePolicy::kTexture)
      Fail(ErrorCode::kUnsupported, "--storage texture: device '{}' has no image support", d.name);
    if (ctx.notice)
      ctx.notice(
          fmt::format("device '{}' has no image support; --storage auto keeps buffers", d.name));
    return {{"texture-groups", 0}};
  }
  bool measured = ctx.storage == StoragePolicy::kAuto && ctx.measure_storage;
  if (ctx.storage == StoragePolicy::kAuto && !measured && !PrefersTextures(d))
    return {{"texture-groups", 0}};
  TextureGroups tg = ChooseTextureGroups(g, ctx, measured);
  // Each use gets the storage it needs.
  Conversions conversions(g, ctx);
  int64_t weights = 0;
  std::vector<ir::Node*> nodes;
  for (const auto& node : g.nodes()) nodes.push_back(node.get());
  for (ir::Node* n : nodes) weights += ConvertInputs(g, ctx, tg, n, conversions);
  // A graph output keeps its name on the buffer the host reads.
  for (ir::Value*& out : g.outputs())
    if (out->is_image()) {
      ir::Value* b = conversions.To(out, Storage::kBuffer);
      b->name = out->name;
      out->name += "/texture";
      out = b;
    }
  return {{"texture-groups", tg.count},
          {"groups-measured", tg.measured},
          {"conversions", conversions.count()},
          {"weight-textures", weights}};
}

}  // namespace texel::passes
