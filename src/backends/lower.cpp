#include "backends/lower.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "backends/backend.h"
#include "core/error.h"
#include "core/texture_layout.h"
#include "runtime/memory_plan.h"

namespace texel::backends {
namespace {

// The memory object of value v: a buffer, or an image by core/texture_layout.h's convention for
// its storage, whose constant contents are packed into texels here.
runtime::BufferDesc DescOf(const ir::Value* v) {
  runtime::BufferDesc d{v->type.bytes(), v->constant};
  if (!v->is_image()) return d;
  TextureKind kind =
      v->storage == ir::Storage::kTextureWeight ? TextureKind::kWeight : TextureKind::kActivation;
  TextureExtent e = TextureExtentOf(v->type.shape, kind);
  d.image_width = e.width;
  d.image_height = e.height;
  d.image_half = v->half_texels;
  d.bytes = e.width * e.height * 4 * (v->half_texels ? 2 : 4);
  if (v->constant) {
    std::vector<float> texels = PackTexels(*v->constant, kind);
    auto packed = std::make_shared<HostTensor>(v->half_texels ? DType::kFloat16 : DType::kFloat32,
                                               Shape{e.height, e.width, 4});
    for (size_t i = 0; i < texels.size(); ++i) {
      if (v->half_texels)
        packed->data<uint16_t>()[i] = FloatToHalf(texels[i]);
      else
        packed->data<float>()[i] = texels[i];
    }
    d.constant = packed;
  }
  return d;
}

// Whether Concat n can have its inputs written in place into its output: along an axis with only
// 1s before it (each input then a contiguous byte range of the output), read plainly (no views
// of the views pass), no ops fused after it, an output that is no graph output or image; each
// input a non-empty value that only n reads, computed by this plan's kernels (no graph input,
// constant or image; a sub-buffer cannot be empty). Offsets, buffers and alignment are the caller's
// to check.
bool ConcatInPlace(const ir::Node& n, const ir::Graph& g,
                   const std::unordered_map<const ir::Value*, int>& uses) {
  if (n.op != ir::OpKind::kConcat || n.group >= 0 || n.outputs[0]->is_image()) return false;
  auto in_list = [](const std::vector<ir::Value*>& list, const ir::Value* v) {
    return std::find(list.begin(), list.end(), v) != list.end();
  };
  if (in_list(g.outputs(), n.outputs[0])) return false;
  int64_t axis = n.attrs.Int("axis");
  const Shape& out = n.outputs[0]->type.shape;
  if (axis < 0 || axis >= static_cast<int64_t>(out.size())) return false;
  for (int64_t d = 0; d < axis; ++d)
    if (out[d] != 1) return false;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const ir::Value* v = n.inputs[k];
    auto it = uses.find(v);
    if (n.attrs.Has(fmt::format("in{}_shape", k)) || v->constant || v->is_image() ||
        v->type.bytes() == 0 || v->valid_rows || v->type.dtype != n.outputs[0]->type.dtype ||
        in_list(g.inputs(), v) || in_list(g.outputs(), v) || it == uses.end() || it->second != 1)
      return false;
  }
  return true;
}

// The plan as it grows, node by node in graph order: each value's buffer, the kernels' source
// (kernels that differ only in their name emitted once) and the steps.
class PlanBuilder {
 public:
  PlanBuilder(const ir::Graph& g, const cl::DeviceInfo& device, const codegen::TuningSource* tuning)
      : g_(g),
        device_(device),
        tuning_(tuning),
        alignment_(runtime::ArenaAlignment(device)),
        in_place_(runtime::SubBuffersUsable(device)) {
    if (device.fp64) plan_.source = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    for (const auto& v : g.values()) value_of_[v->id] = v.get();
    bool exact = false;  // a division the precision pass marked exact
    for (const auto& node : g.nodes()) {
      for (const ir::Value* v : node->inputs) ++uses_[v];
      exact |= node->attrs.Int("exact", 0) == 1;
    }
    // Divisions (and Resize's coordinates) marked exact 1 by the precision pass: the device
    // divides correctly rounded under this option (NVIDIA's OpenCL divides 2.5 ulp off without).
    if (exact) plan_.build_options = runtime::kCorrectDivideOption;
    for (const std::vector<ir::Node*>& group : ir::FusionGroups(g))
      last_of_group_[group.back()] = {group.begin(), group.end()};
  }

  runtime::Plan Build() {
    for (const ir::Value* v : g_.inputs())
      plan_.inputs.push_back({v->name, v->type.dtype, v->type.shape, Buffer(v)});
    for (const auto& node : g_.nodes()) {
      const ir::Node& n = *node;
      if ((in_place_ && ConcatInPlace(n, g_, uses_) && WriteConcatInPlace(n)) || ShareView(n))
        continue;
      // A fusion group (passes/fuse.cpp) is one kernel, lowered at the group's last node; the
      // values passed inside a group stay in registers and get no buffer.
      if (auto it = last_of_group_.find(&n); it != last_of_group_.end()) Lower(it->second);
    }
    for (const ir::Value* v : g_.outputs())
      plan_.outputs.push_back({v->name, v->type.dtype, v->type.shape, Buffer(v),
                               v->valid_rows ? Buffer(v->valid_rows) : -1});
    return std::move(plan_);
  }

 private:
  int Buffer(const ir::Value* v) {
    if (static_cast<size_t>(v->id) >= buffer_of_.size()) buffer_of_.resize(v->id + 1, -1);
    int& b = buffer_of_[v->id];
    if (b < 0) {
      b = static_cast<int>(plan_.buffers.size());
      plan_.buffers.push_back(DescOf(v));
    }
    return b;
  }
  // A Concat whose inputs its producers can write in place: no kernel, the inputs' buffers
  // become parts of the output's (memory planning places them there). Each input's buffer must
  // be its own (no other value's view), not already hold parts, and start at an offset the
  // device's sub-buffers allow. False where they do not.
  bool WriteConcatInPlace(const ir::Node& n);
  // A Reshape that is no graph output is a view: it shares its input's buffer.
  bool ShareView(const ir::Node& n);
  // The kernels of `nodes` (one node, or a fusion group) and their steps.
  void Lower(const std::vector<const ir::Node*>& nodes);
  // "Conv+Add+Relu": the ops of nodes[from, end), a kernel's label.
  static std::string OpsOf(const std::vector<const ir::Node*>& nodes, size_t from, size_t end);
  // The step of kernel k of `nodes` (its scratch buffers by scratch index), its source emitted
  // unless an equal kernel's was.
  void AddStep(const codegen::KernelSpec& k, const std::vector<const ir::Node*>& nodes,
               const std::vector<int>& scratch, const Backend& be);

  const ir::Graph& g_;
  const cl::DeviceInfo& device_;
  const codegen::TuningSource* tuning_;
  const int64_t alignment_;
  const bool in_place_;
  runtime::Plan plan_;
  std::vector<int> buffer_of_;  // value id -> buffer index
  std::unordered_map<int, const ir::Value*> value_of_;
  // A group's last node (a lone node is its own) -> the group's nodes.
  std::unordered_map<const ir::Node*, std::vector<const ir::Node*>> last_of_group_;
  std::unordered_map<const ir::Value*, int> uses_;  // reads by nodes
  // Kernels that differ only in their name are emitted once and shared by their steps: repeated
  // blocks (ResNet stages, transformer layers) then cost one device compile, not one per node.
  std::unordered_map<std::string, std::string> kernel_of_body_;
  int index_ = 0;  // kernels named so far
};

bool PlanBuilder::WriteConcatInPlace(const ir::Node& n) {
  std::vector<int> parts;
  bool fits = true;
  int64_t offset = 0;
  for (const ir::Value* v : n.inputs) {
    int b = static_cast<size_t>(v->id) < buffer_of_.size() ? buffer_of_[v->id] : -1;
    fits = fits && b >= 0 && offset % alignment_ == 0 && plan_.buffers[b].alias_of < 0 &&
           !plan_.buffers[b].zeroed && std::count(buffer_of_.begin(), buffer_of_.end(), b) == 1;
    for (const runtime::BufferDesc& d : plan_.buffers) fits = fits && d.alias_of != b;
    parts.push_back(b);
    offset += v->type.bytes();
  }
  if (!fits) return false;
  int whole = Buffer(n.outputs[0]);
  offset = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    plan_.buffers[parts[k]].alias_of = whole;
    plan_.buffers[parts[k]].alias_offset = offset;
    offset += n.inputs[k]->type.bytes();
  }
  return true;
}

bool PlanBuilder::ShareView(const ir::Node& n) {
  bool is_output =
      std::find(g_.outputs().begin(), g_.outputs().end(), n.outputs[0]) != g_.outputs().end();
  if (n.op != ir::OpKind::kReshape || is_output) return false;
  int b = Buffer(n.inputs[0]);
  if (static_cast<size_t>(n.outputs[0]->id) >= buffer_of_.size())
    buffer_of_.resize(n.outputs[0]->id + 1, -1);
  buffer_of_[n.outputs[0]->id] = b;
  return true;
}

std::string PlanBuilder::OpsOf(const std::vector<const ir::Node*>& nodes, size_t from, size_t end) {
  std::string s;
  for (size_t k = from; k < end; ++k) {
    if (!s.empty()) s += '+';
    s += OpName(nodes[k]->op);
  }
  return s;
}

void PlanBuilder::Lower(const std::vector<const ir::Node*>& nodes) {
  const ir::Node& n = *nodes.back();
  std::vector<const ir::Value*> reads = ir::ExternalInputs(nodes);  // read from memory
  // Constants get their buffer when a kernel binds them as they are (not packed anew).
  for (const ir::Value* v : reads)
    if (!v->constant) Buffer(v);
  for (const ir::Value* v : n.outputs) Buffer(v);
  if (n.outputs[0]->type.bytes() == 0) return;  // nothing to compute
  const ir::Node& first = *nodes[0];
  const Backend* be = FindBackend(BackendOf(first));
  TEXEL_CHECK(be != nullptr, "node '{}' has unknown backend '{}'", first.name, first.backend);
  std::string ops = OpsOf(nodes, 0, nodes.size()), op = ops;  // op: "conv_add_relu", in names
  for (char& c : op)
    c = c == '+' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Kernel names stay short: compilers write them into file names (PoCL fails past 255).
  if (op.size() > 48) op.resize(48);
  std::vector<codegen::KernelSpec> kernels;
  try {
    kernels = be->Lower(nodes, fmt::format("k{}_{}", index_++, op), device_, tuning_);
  } catch (Error& e) {
    e.AddContext(fmt::format("node '{}' ({})", first.name, ops));
    throw;
  }
  // A value inside the group that a kernel writes too (a LayerNorm's input read elsewhere).
  for (const ir::Node* m : nodes)
    for (const ir::Value* v : m->outputs)
      for (const auto& k : kernels)
        if (std::find(k.args.begin(), k.args.end(), v->id) != k.args.end()) Buffer(v);
  std::vector<int> scratch;  // scratch index -> buffer index, shared by this node's kernels
  for (const auto& k : kernels)
    for (size_t s = 0; s < k.scratch_bytes.size(); ++s) {
      if (s == scratch.size()) {
        scratch.push_back(static_cast<int>(plan_.buffers.size()));
        plan_.buffers.push_back({0, nullptr});
      }
      int64_t& bytes = plan_.buffers[scratch[s]].bytes;
      bytes = std::max(bytes, k.scratch_bytes[s]);
    }
  for (const auto& k : kernels)
    for (int s : k.zeroed_scratch) plan_.buffers[scratch.at(s)].zeroed = true;
  for (const auto& k : kernels) {
    AddStep(k, nodes, scratch, *be);
    for (const ir::Value* v : reads)
      plan_.steps.back().bytes += static_cast<double>(v->type.bytes());
    for (const ir::Value* v : n.outputs)
      plan_.steps.back().bytes += static_cast<double>(v->type.bytes());
  }
}

void PlanBuilder::AddStep(const codegen::KernelSpec& k, const std::vector<const ir::Node*>& nodes,
                          const std::vector<int>& scratch, const Backend& be) {
  runtime::KernelStep step;
  if (k.call.empty()) {
    std::string body;  // the source with its own name blanked out
    for (size_t p = 0;;) {
      size_t q = k.source.find(k.name, p);
      body.append(k.source, p, q == std::string::npos ? q : q - p);
      if (q == std::string::npos) break;
      body += '\x01';
      p = q + k.name.size();
    }
    auto [it, fresh] = kernel_of_body_.try_emplace(std::move(body), k.name);
    step.kernel = it->second;
    if (fresh) plan_.source += k.source + "\n";
    plan_.needs.inline_ptx |= k.inline_ptx;
    plan_.needs.tensor_cores |= k.tensor_cores;
  }
  step.call = k.call;
  step.call_args = k.call_args;
  for (size_t a = 0; a < k.args.size(); ++a) {
    int id = k.args[a];
    auto packed =
        std::find_if(k.packed.begin(), k.packed.end(), [&](const auto& p) { return p.arg == a; });
    if (packed != k.packed.end()) {
      ConstTensorPtr data = packed->pack();
      step.buffers.push_back(static_cast<int>(plan_.buffers.size()));
      plan_.buffers.push_back({static_cast<int64_t>(data->bytes.size()), data});
    } else {
      step.buffers.push_back(id < 0 ? scratch.at(-1 - id) : Buffer(value_of_.at(id)));
    }
  }
  step.global = k.global;
  step.local = k.local;
  size_t end = k.end_op ? k.end_op : nodes.size();
  TEXEL_CHECK(k.first_op < end && end <= nodes.size(), "kernel '{}': ops {}..{} of {}", k.name,
              k.first_op, end, nodes.size());
  // Named after its anchor: the first of its ops that is not elementwise (a LayerNorm after the
  // epilogue it applies), else its first.
  size_t anchor = k.first_op;
  for (size_t j = k.first_op; j < end; ++j)
    if (!ir::IsElementwiseClass(nodes[j]->info().cls)) {
      anchor = j;
      break;
    }
  step.node = nodes[anchor]->name;
  step.op = OpsOf(nodes, k.first_op, end);
  step.backend = std::string(be.name());
  step.flops = k.flops;
  plan_.steps.push_back(std::move(step));
}

}  // namespace

runtime::Plan LowerToPlan(const ir::Graph& g, const cl::DeviceInfo& device,
                          const codegen::TuningSource* tuning) {
  return PlanBuilder(g, device, tuning).Build();
}

}  // namespace texel::backends
