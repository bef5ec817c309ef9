#include "backends/lower.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

#include "backends/backend.h"
#include "core/error.h"
#include "core/texture_layout.h"

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
  for (const auto& node : g.nodes()) {
    const ir::Node& n = *node;
    bool is_output =
        std::find(g.outputs().begin(), g.outputs().end(), n.outputs[0]) != g.outputs().end();
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
    const Backend* be = FindBackend(first.backend.empty() ? "native" : first.backend);
    TEXEL_CHECK(be != nullptr, "node '{}' has unknown backend '{}'", first.name, first.backend);
    // "Conv+Add+Relu": the ops of nodes[from..], a kernel's label.
    auto ops_from = [&](size_t from) {
      std::string s;
      for (size_t k = from; k < nodes.size(); ++k) {
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
      TEXEL_CHECK(k.first_op < nodes.size(), "kernel '{}' starts past its group", k.name);
      step.node = nodes[k.first_op]->name;
      step.op = ops_from(k.first_op);
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
