// texel partition: how the partition pass split a model between backends. One row per node
// that computes (views and fused elementwise nodes are shown with their anchor): the op, the
// backend chosen, and for every allowed backend whether it supports the node and its estimated
// time, or with --measure the measured one (the partition's own measurements: one timer serves
// both).
// --dot FILE writes the graph in Graphviz DOT, each node filled with its backend's colour.
#include <cstdio>
#include <fstream>
#include <map>

#include "api/compiler.h"
#include "api/measure.h"
#include "backends/backend.h"
#include "core/error.h"
#include "model_session.h"

namespace texel::cli {
namespace {

struct PartitionArgs {
  std::string model, device, dot;
  CompilerFlags compile;
};

const char* Colour(const std::string& backend) {
  static const std::map<std::string, const char*> kColours = {{"native", "#9ecae1"},
                                                              {"clblast", "#fdae6b"}};
  auto it = kColours.find(backend);
  return it == kColours.end() ? "#d9d9d9" : it->second;
}

void WriteDot(const ir::Graph& g, const std::string& path) {
  std::ofstream f(path);
  f << "digraph texel {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=Helvetica];\n";
  for (const auto& n : g.nodes()) {
    f << fmt::format("  n{} [label=\"{}\\n{}\\n{}\", fillcolor=\"{}\"];\n", n->outputs[0]->id,
                     n->name, OpName(n->op), n->backend, Colour(n->backend));
    for (const ir::Value* v : n->inputs)
      if (v->producer)
        f << fmt::format("  n{} -> n{};\n", v->producer->outputs[0]->id, n->outputs[0]->id);
  }
  f << "}\n";
  if (!f) Fail(ErrorCode::kIo, "{}: cannot write", path);
}

int RunPartition(const PartitionArgs& a) {
  CompileOptions opts = ToCompileOptions(a.compile);
  if (opts.backends.empty()) opts.backends = {"native"};  // a column for the default
  cl::DeviceInfo dev = cl::SelectDevice(a.device);
  auto ctx = std::make_shared<cl::Context>(dev);
  // One timer for the compile's partition and this table: each node measured once.
  NodeTimer timer(ctx);
  opts.timer = &timer;
  CompiledModel m = Compile(a.model, ctx, opts);
  std::printf("device   %s\n", dev.Label().c_str());
  std::printf("%-4s %-40s %-20s %-8s", "#", "node", "op", "backend");
  for (const auto& b : opts.backends)
    std::printf(" %16s", fmt::format("{} {}", b,
                                     opts.partition == passes::PartitionPolicy::kMeasure ? "meas us"
                                                                                         : "est us")
                             .c_str());
  std::printf("\n");
  std::map<std::string, int> count;
  int row = 0;
  for (const auto& node : m.graph->nodes()) {
    const ir::Node& n = *node;
    ++count[n.backend];
    std::string name = n.name.size() > 40 ? "..." + n.name.substr(n.name.size() - 37) : n.name;
    std::printf("%-4d %-40s %-20s %-8s", row++, name.c_str(), std::string(OpName(n.op)).c_str(),
                n.backend.c_str());
    for (const auto& bn : opts.backends) {
      const backends::Backend* b = backends::FindBackend(bn);
      std::string cell = "-";
      if (b && b->Supports(n, dev).ok) {
        double s = opts.partition == passes::PartitionPolicy::kMeasure ? timer.Seconds(n, *b)
                                                                       : b->Estimate(n, dev);
        cell = fmt::format("{:.1f}", s * 1e6);
      }
      std::printf(" %16s", cell.c_str());
    }
    std::printf("\n");
  }
  for (const auto& [b, c] : count) std::printf("%s: %d nodes\n", b.c_str(), c);
  if (!a.dot.empty()) WriteDot(*m.graph, a.dot);
  return 0;
}

}  // namespace

Runner AddPartitionCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("partition", "Show which backend runs each node, and why");
  auto a = std::make_shared<PartitionArgs>();
  cmd->add_option("model", a->model, "ONNX model or linalg fragment (.mlir) file")->required();
  cmd->add_option("--dot", a->dot, "write the graph coloured by backend to FILE (Graphviz)");
  AddCompilerFlags(cmd, &a->compile);
  cmd->add_option("--device,-d", a->device, "gpu, cpu, P:D or a name substring");
  return [a] { return RunPartition(*a); };
}

}  // namespace texel::cli
