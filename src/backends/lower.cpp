#include "backends/lower.h"

#include <algorithm>
#include <cctype>
#include <map>
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

}  // namespace

runtime::Plan LowerToPlan(const ir::Graph& g, const cl::DeviceInfo& device,
                          const codegen::TuningSource* tuning) {
  runtime::Plan plan;
  if (device.fp64) plan.source = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  std::vector<int> buffer_of;  // value id -> buffer index
  auto buffer = [&](const ir::Value* v) -> int {
    if (static_cast<size_t>(v->id) >= buffer_of.size()) buffer_of.resize(v->id + 1, -1);
    int& b = buffer_of[v->id];
    if (b < 0) {
      b = static_cast<int>(plan.buffers.size());
      plan.buffers.push_back(DescOf(v));
    }
    return b;
  };
  std::unordered_map<int, const ir::Value*> value_of;
  for (const auto& v : g.values()) value_of[v->id] = v.get();
  for (const ir::Value* v : g.inputs())
    plan.inputs.push_back({v->name, v->type.dtype, v->type.shape, buffer(v)});
  int index = 0;
  // Kernels that differ only in their name are emitted once and shared by their steps: repeated
  // blocks (ResNet stages, transformer layers) then cost one device compile, not one per node.
  std::unordered_map<std::string, std::string> kernel_of_body;
  // A fusion group (passes/fuse.cpp) is one kernel, lowered at the group's last node; the
  // values passed inside a group stay in registers and get no buffer.
  std::map<int, std::vector<const ir::Node*>> groups;
  for (const auto& node : g.nodes())
    if (node->group >= 0) groups[node->group].push_back(node.get());
  std::unordered_map<const ir::Value*, int> uses;  // reads by nodes
  for (const auto& node : g.nodes())
    for (const ir::Value* v : node->inputs) ++uses[v];
  const int64_t alignment = runtime::ArenaAlignment(device);
  const bool in_place = runtime::SubBuffersUsable(device);
  for (const auto& node : g.nodes()) {
    const ir::Node& n = *node;
    bool is_output =
        std::find(g.outputs().begin(), g.outputs().end(), n.outputs[0]) != g.outputs().end();
    // A Concat whose inputs its producers can write in place: no kernel, the inputs' buffers
    // become parts of the output's (memory planning places them there). Each input's buffer must
    // be its own (no other value's view), not already hold parts, and start at an offset the
    // device's sub-buffers allow.
    if (in_place && ConcatInPlace(n, g, uses)) {
      std::vector<int> parts;
      bool fits = true;
      int64_t offset = 0;
      for (const ir::Value* v : n.inputs) {
        int b = static_cast<size_t>(v->id) < buffer_of.size() ? buffer_of[v->id] : -1;
        fits = fits && b >= 0 && offset % alignment == 0 && plan.buffers[b].alias_of < 0 &&
               !plan.buffers[b].zeroed && std::count(buffer_of.begin(), buffer_of.end(), b) == 1;
        for (const runtime::BufferDesc& d : plan.buffers) fits = fits && d.alias_of != b;
        parts.push_back(b);
        offset += v->type.bytes();
      }
      if (fits) {
        int whole = buffer(n.outputs[0]);
        offset = 0;
        for (size_t k = 0; k < parts.size(); ++k) {
          plan.buffers[parts[k]].alias_of = whole;
          plan.buffers[parts[k]].alias_offset = offset;
          offset += n.inputs[k]->type.bytes();
        }
        continue;
      }
    }
    if (n.op == ir::OpKind::kReshape && !is_output) {  // a view: shares the input's buffer
      int b = buffer(n.inputs[0]);
      if (static_cast<size_t>(n.outputs[0]->id) >= buffer_of.size())
        buffer_of.resize(n.outputs[0]->id + 1, -1);
      buffer_of[n.outputs[0]->id] = b;
      continue;
    }
    std::vector<const ir::Node*> nodes = {&n};
    if (n.group >= 0) {
      if (groups[n.group].back() != &n) continue;
      nodes = groups[n.group];
    }
    std::vector<const ir::Value*> reads = ir::ExternalInputs(nodes);  // read from memory
    // Constants get their buffer when a kernel binds them as they are (not packed anew).
    for (const ir::Value* v : reads)
      if (!v->constant) buffer(v);
    for (const ir::Value* v : n.outputs) buffer(v);
    if (n.outputs[0]->type.bytes() == 0) continue;  // nothing to compute
    const ir::Node& first = *nodes[0];
    const Backend* be = FindBackend(BackendOf(first));
    TEXEL_CHECK(be != nullptr, "node '{}' has unknown backend '{}'", first.name, first.backend);
    // "Conv+Add+Relu": the ops of nodes[from..], a kernel's label.
    auto ops_from = [&](size_t from, size_t end = 0) {
      std::string s;
      for (size_t k = from; k < (end ? end : nodes.size()); ++k) {
        if (!s.empty()) s += '+';
        s += OpName(nodes[k]->op);
      }
      return s;
    };
    std::string ops = ops_from(0), op = ops;  // op: "conv_add_relu", in kernel names
    for (char& c : op)
      c = c == '+' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // Kernel names stay short: compilers write them into file names (PoCL fails past 255).
    if (op.size() > 48) op.resize(48);
    std::vector<codegen::KernelSpec> kernels;
    try {
      kernels = be->Lower(nodes, fmt::format("k{}_{}", index++, op), device, tuning);
    } catch (Error& e) {
      e.AddContext(fmt::format("node '{}' ({})", first.name, ops));
      throw;
    }
    // A value inside the group that a kernel writes too (a LayerNorm's input read elsewhere).
    for (const ir::Node* m : nodes)
      for (const ir::Value* v : m->outputs)
        for (const auto& k : kernels)
          if (std::find(k.args.begin(), k.args.end(), v->id) != k.args.end()) buffer(v);
    std::vector<int> scratch;  // scratch index -> buffer index, shared by this node's kernels
    for (const auto& k : kernels)
      for (size_t s = 0; s < k.scratch_bytes.size(); ++s) {
        if (s == scratch.size()) {
          scratch.push_back(static_cast<int>(plan.buffers.size()));
          plan.buffers.push_back({0, nullptr});
        }
        int64_t& bytes = plan.buffers[scratch[s]].bytes;
        bytes = std::max(bytes, k.scratch_bytes[s]);
      }
    for (const auto& k : kernels)
      for (int s : k.zeroed_scratch) plan.buffers[scratch.at(s)].zeroed = true;
    for (auto& k : kernels) {
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
        auto [it, fresh] = kernel_of_body.try_emplace(std::move(body), k.name);
        step.kernel = it->second;
        if (fresh) plan.source += k.source + "\n";
        plan.needs.inline_ptx |= k.inline_ptx;
        plan.needs.tensor_cores |= k.tensor_cores;
      }
      step.call = k.call;
      step.call_args = k.call_args;
      for (size_t a = 0; a < k.args.size(); ++a) {
        int id = k.args[a];
        auto packed = std::find_if(k.packed.begin(), k.packed.end(),
                                   [&](const auto& p) { return p.arg == a; });
        if (packed != k.packed.end()) {
          ConstTensorPtr data = packed->pack();
          step.buffers.push_back(static_cast<int>(plan.buffers.size()));
          plan.buffers.push_back({static_cast<int64_t>(data->bytes.size()), data});
        } else {
          step.buffers.push_back(id < 0 ? scratch.at(-1 - id) : buffer(value_of.at(id)));
        }
      }
      step.global = k.global;
      step.local = k.local;
      size_t end = k.end_op ? k.end_op : nodes.size();
      TEXEL_CHECK(k.first_op < end && end <= nodes.size(), "kernel '{}': ops {}..{} of {}", k.name,
                  k.first_op, end, nodes.size());
      // Named after its anchor: the first of its ops that is not elementwise (a LayerNorm after
      // the epilogue it applies), else its first.
      size_t anchor = k.first_op;
      for (size_t j = k.first_op; j < end; ++j)
        if (!ir::IsElementwiseClass(nodes[j]->info().cls)) {
          anchor = j;
          break;
        }
      step.node = nodes[anchor]->name;
      step.op = ops_from(k.first_op, end);
      step.backend = std::string(be->name());
      step.flops = k.flops;
      for (const ir::Value* v : reads) step.bytes += static_cast<double>(v->type.bytes());
      for (const ir::Value* v : n.outputs) step.bytes += static_cast<double>(v->type.bytes());
      plan.steps.push_back(std::move(step));
    }
  }
  for (const ir::Value* v : g.outputs())
    plan.outputs.push_back({v->name, v->type.dtype, v->type.shape, buffer(v),
                            v->valid_rows ? buffer(v->valid_rows) : -1});
  return plan;
}

}  // namespace texel::backends
