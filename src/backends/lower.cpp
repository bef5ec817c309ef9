#include "backends/lower.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "backends/backend.h"
#include "core/error.h"

namespace texel::backends {

runtime::Plan LowerToPlan(const ir::Graph& g, const cl::DeviceInfo& device) {
  runtime::Plan plan;
  if (device.fp64) plan.source = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  std::vector<int> buffer_of;  // value id -> buffer index
  auto buffer = [&](const ir::Value* v) -> int {
    if (static_cast<size_t>(v->id) >= buffer_of.size()) buffer_of.resize(v->id + 1, -1);
    int& b = buffer_of[v->id];
    if (b < 0) {
      b = static_cast<int>(plan.buffers.size());
      plan.buffers.push_back({v->type.bytes(), v->constant});
    }
    return b;
  };
  for (const ir::Value* v : g.inputs())
    plan.inputs.push_back({v->name, v->type.dtype, v->type.shape, buffer(v)});
  int index = 0;
  // Kernels that differ only in their name are emitted once and shared by their steps: repeated
  // blocks (ResNet stages, transformer layers) then cost one device compile, not one per node.
  std::unordered_map<std::string, std::string> kernel_of_body;
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
    for (const ir::Value* v : n.inputs) buffer(v);
    for (const ir::Value* v : n.outputs) buffer(v);
    if (n.outputs[0]->type.bytes() == 0) continue;  // nothing to compute
    const Backend* be = FindBackend(n.backend.empty() ? "native" : n.backend);
    TEXEL_CHECK(be != nullptr, "node '{}' has unknown backend '{}'", n.name, n.backend);
    std::string op = std::string(OpName(n.op));
    for (char& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::vector<codegen::KernelSpec> kernels;
    try {
      kernels = be->Lower(n, fmt::format("k{}_{}", index++, op), device);
    } catch (Error& e) {
      e.AddContext(fmt::format("node '{}' ({})", n.name, OpName(n.op)));
      throw;
    }
    for (auto& k : kernels) {
      runtime::KernelStep step;
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
      for (int id : k.args) step.buffers.push_back(buffer_of.at(id));
      step.global = k.global;
      step.local = k.local;
      step.node = n.name;
      step.op = OpName(n.op);
      step.backend = std::string(be->name());
      step.flops = k.flops;
      for (const ir::Value* v : n.inputs) step.bytes += static_cast<double>(v->type.bytes());
      for (const ir::Value* v : n.outputs) step.bytes += static_cast<double>(v->type.bytes());
      if (fresh) plan.source += k.source + "\n";
      plan.steps.push_back(std::move(step));
    }
  }
  for (const ir::Value* v : g.outputs())
    plan.outputs.push_back({v->name, v->type.dtype, v->type.shape, buffer(v),
                            v->valid_rows ? buffer(v->valid_rows) : -1});
  return plan;
}

}  // namespace texel::backends
