#include "api/compiler.h"

#include <chrono>

#include "api/measure.h"
#include "backends/lower.h"
#include "runtime/memory_plan.h"

namespace texel {

std::unique_ptr<ir::Graph> ImportAndOptimize(const std::string& model_path,
                                             const CompileOptions& options) {
  auto graph = onnx_frontend::ImportOnnxFile(model_path, options.import);
  passes::RunPipeline(*graph, passes::PassContext{}, options.after_pass);
  return graph;
}

CompiledModel CompileGraph(std::unique_ptr<ir::Graph> graph, std::shared_ptr<cl::Context> ctx,
                           const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  passes::PassContext pc;
  pc.device = &ctx->info();
  pc.backends = options.backends;
  pc.deny = options.deny;
  pc.policy = options.partition;
  pc.storage = options.storage;
  if (options.partition == passes::PartitionPolicy::kMeasure &&
      options.storage == passes::StoragePolicy::kAuto)
    pc.measure_storage = [&ctx](const ir::Node& n, ir::Storage s) {
      return MeasureNode(n, *backends::FindBackend("native"), ctx, s);
    };
  pc.half_texels = options.half_texels;
  if (options.partition == passes::PartitionPolicy::kMeasure)
    pc.measure = [&ctx](const ir::Node& n, const backends::Backend& b) {
      return MeasureNode(n, b, ctx);
    };
  passes::RunPipeline(*graph, pc, options.after_pass);
  runtime::Plan plan = backends::LowerToPlan(*graph, ctx->info());
  plan.memory = runtime::PlanMemory(plan, runtime::ArenaAlignment(ctx->info()));
  static cl::ProgramCache cache = cl::ProgramCache::Default();
  CompiledModel m;
  m.executable = std::make_unique<runtime::Executable>(ctx, std::move(plan), &cache);
  m.graph = std::move(graph);
  m.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

CompiledModel Compile(const std::string& model_path, std::shared_ptr<cl::Context> ctx,
                      const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  auto graph = onnx_frontend::ImportOnnxFile(model_path, options.import);
  CompiledModel m = CompileGraph(std::move(graph), std::move(ctx), options);
  m.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace texel
