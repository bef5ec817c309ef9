#include "api/compiler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "api/compile_options.h"
#include "api/measure.h"
#include "api/tuning_source.h"
#include "backends/lower.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/sha256.h"
#include "core/version.h"
#include "frontend/linalg/importer.h"
#include "runtime/memory_plan.h"

namespace texel {

namespace {

// The first bytes of a file (enough for LooksLikeLinalg); empty when it cannot be read, which
// the ONNX frontend then reports.
std::string FilePrefix(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string prefix(4096, '\0');
  f.read(prefix.data(), static_cast<std::streamsize>(prefix.size()));
  prefix.resize(f ? prefix.size() : static_cast<size_t>(std::max<std::streamsize>(f.gcount(), 0)));
  return prefix;
}

// CompileGraph on what import() returns, recording the model's sha256 (hashed after the import,
// so that the frontend reports a missing or malformed model); compile_ms includes the import.
CompiledModel ImportAndCompile(const std::function<std::unique_ptr<ir::Graph>()>& import,
                               const std::function<std::string()>& model_sha256,
                               std::shared_ptr<cl::Context> ctx, const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<ir::Graph> graph = import();
  CompiledModel m = CompileGraph(std::move(graph), std::move(ctx), options, model_sha256());
  m.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace

std::unique_ptr<ir::Graph> ImportModelFile(const std::string& path,
                                           const onnx_frontend::ImportOptions& options) {
  std::error_code ec;
  bool mlir = std::filesystem::path(path).extension() == ".mlir" ||
              (std::filesystem::is_regular_file(path, ec) &&
               linalg_frontend::LooksLikeLinalg(FilePrefix(path)));
  if (mlir) return linalg_frontend::ImportLinalgFile(path, options);
  return onnx_frontend::ImportOnnxFile(path, options);
}

std::unique_ptr<ir::Graph> ImportModelBytes(const std::string& bytes, const std::string& base_dir,
                                            const onnx_frontend::ImportOptions& options) {
  if (linalg_frontend::LooksLikeLinalg(bytes))
    return linalg_frontend::ImportLinalgText(bytes, "<memory>", options);
  return onnx_frontend::ImportOnnxBytes(bytes, base_dir, options);
}

std::unique_ptr<ir::Graph> ImportAndOptimize(const std::string& model_path,
                                             const CompileOptions& options) {
  auto graph = ImportModelFile(model_path, options.import);
  passes::PassContext pc;
  pc.disabled = options.disabled_passes;
  pc.precision = options.precision;
  passes::RunPipeline(*graph, pc, options.after_pass);
  return graph;
}

namespace {

// The passes for a device: ctx's, or one described by its facts alone (ctx null: measuring
// then fails).
void RunPassesFor(ir::Graph& graph, const cl::DeviceInfo& dev, std::shared_ptr<cl::Context> ctx,
                  const CompileOptions& options) {
  if (!ctx && options.partition == passes::PartitionPolicy::kMeasure)
    Fail(ErrorCode::kInvalidArgument,
         "--partition measure times kernels on the device; compiling for device facts cannot");
  // Measuring nodes (--partition measure): the caller's timer, or one for this compile, whose
  // memory of equal nodes no other compile shares.
  std::optional<NodeTimer> own_timer;
  NodeTimer* timer = options.timer;
  if (options.partition == passes::PartitionPolicy::kMeasure && !timer)
    timer = &own_timer.emplace(ctx);
  passes::PassContext pc;
  pc.device = &dev;
  pc.backends = options.backends;
  pc.deny = options.deny;
  pc.policy = options.partition;
  pc.notice = options.on_notice;
  pc.storage = options.storage;
  if (options.partition == passes::PartitionPolicy::kMeasure &&
      options.storage == passes::StoragePolicy::kAuto)
    pc.measure_storage = [timer](const ir::Node& n, ir::Storage s) {
      return timer->Seconds(n, *backends::FindBackend(backends::kNative), s);
    };
  pc.half_texels = options.half_texels;
  pc.precision = options.precision;
  pc.disabled = options.disabled_passes;
  if (options.partition == passes::PartitionPolicy::kMeasure)
    pc.measure = [timer](const ir::Node& n, const backends::Backend& b) {
      return timer->Seconds(n, b);
    };
  passes::RunPipeline(graph, pc, options.after_pass);
}

// The device's own limits, checked when the plan is made rather than when clCreateBuffer fails
// at the first run: each buffer at most CL_DEVICE_MAX_MEM_ALLOC_SIZE, all of them together at
// most the device's global memory (docs/reliability.md). Images are bounded by their extents.
void CheckDeviceLimits(const runtime::Plan& plan, const cl::DeviceInfo& dev) {
  const runtime::MemoryPlan& m = plan.memory;
  auto name_of = [&](size_t b) {
    for (const auto* list : {&plan.inputs, &plan.outputs})
      for (const runtime::TensorBinding& t : *list)
        if (t.buffer == static_cast<int>(b)) return fmt::format("'{}'", t.name);
    return plan.buffers[b].constant ? std::string("a constant") : std::string("a value");
  };
  auto check = [&](int64_t bytes, const std::string& what) {
    if (dev.max_alloc_bytes > 0 && static_cast<uint64_t>(bytes) > dev.max_alloc_bytes)
      Fail(ErrorCode::kUnsupported,
           "{} needs {} bytes; device '{}' allocates at most {} at once "
           "(CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
           what, bytes, dev.name, dev.max_alloc_bytes);
  };
  check(m.arena_bytes, "the arena of intermediate values");
  for (size_t b = 0; b < plan.buffers.size(); ++b)
    if (!plan.buffers[b].is_image() && (m.offsets.empty() || m.offsets[b] < 0))
      check(plan.buffers[b].bytes, name_of(b));
  uint64_t total = static_cast<uint64_t>(m.arena_bytes) + static_cast<uint64_t>(m.constant_bytes) +
                   static_cast<uint64_t>(m.io_bytes) + static_cast<uint64_t>(m.texture_pool_bytes);
  if (dev.global_mem_bytes > 0 && total > dev.global_mem_bytes)
    Fail(
        ErrorCode::kUnsupported,
        "the model needs {} bytes of device memory; device '{}' has {} (CL_DEVICE_GLOBAL_MEM_SIZE)",
        total, dev.name, dev.global_mem_bytes);
}

// The passes and the lowering for a device (as RunPassesFor).
runtime::Plan PlanFor(ir::Graph& graph, const cl::DeviceInfo& dev, std::shared_ptr<cl::Context> ctx,
                      const CompileOptions& options, const std::string& model_sha256) {
  RunPassesFor(graph, dev, ctx, options);
  std::optional<DbTuningSource> tuning;
  if (options.tuning) {
    std::string db =
        options.tuning_db.empty() ? runtime::TuningDb::DefaultPath(dev) : options.tuning_db;
    if (!db.empty()) tuning.emplace(db, dev);
  }
  runtime::Plan plan = backends::LowerToPlan(graph, dev, tuning ? &*tuning : nullptr);
  TuningReport report = tuning ? tuning->Report() : TuningReport{};
  // A damaged or foreign tuning database is read around, never trusted: the caller hears so.
  if (options.on_notice)
    for (const std::string& n : report.notices) options.on_notice(n);
  if (options.on_tuning) options.on_tuning(report);
  plan.memory = runtime::PlanMemory(plan, runtime::ArenaAlignment(dev));
  CheckDeviceLimits(plan, dev);
  plan.info = {
      kVersion,          DescribeOptions(options),     model_sha256,       dev.name,
      dev.vendor,        cl::DeviceKindName(dev.kind), dev.driver_version, dev.platform_version,
      dev.device_version};
  return plan;
}

// A model file's sha256, dropping the mapped pages as the hash goes.
std::string FileSha256(const std::string& path) {
  auto file = MappedFile::Open(path);
  return Sha256Hex(file->bytes(), [&](std::string_view part) { file->Release(part); });
}

}  // namespace

std::unique_ptr<ir::Graph> ImportAndOptimizeFor(const std::string& model_path,
                                                std::shared_ptr<cl::Context> ctx,
                                                const CompileOptions& options) {
  auto graph = ImportModelFile(model_path, options.import);
  RunPassesFor(*graph, ctx->info(), ctx, options);
  return graph;
}

CompiledModel CompileGraph(std::unique_ptr<ir::Graph> graph, std::shared_ptr<cl::Context> ctx,
                           const CompileOptions& options, const std::string& model_sha256) {
  auto t0 = std::chrono::steady_clock::now();
  runtime::Plan plan = PlanFor(*graph, ctx->info(), ctx, options, model_sha256);
  cl::ProgramCache cache = cl::ProgramCache::Default();  // used while the program is built
  CompiledModel m;
  if (!options.keep_graph) graph.reset();  // the plan holds the constants alone now
  m.executable = std::make_unique<runtime::Executable>(ctx, std::move(plan), &cache);
  m.graph = std::move(graph);
  m.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

runtime::Artifact CompileForDevice(const std::string& model_path, const cl::DeviceInfo& facts,
                                   const CompileOptions& options) {
  std::unique_ptr<ir::Graph> graph = ImportModelFile(model_path, options.import);
  runtime::Artifact artifact;
  artifact.plan = PlanFor(*graph, facts, nullptr, options, FileSha256(model_path));
  return artifact;
}

runtime::Artifact CompileBytesForDevice(const std::string& bytes, const std::string& base_dir,
                                        const cl::DeviceInfo& facts,
                                        const CompileOptions& options) {
  std::unique_ptr<ir::Graph> graph = ImportModelBytes(bytes, base_dir, options.import);
  runtime::Artifact artifact;
  artifact.plan = PlanFor(*graph, facts, nullptr, options, Sha256Hex(bytes));
  return artifact;
}

CompiledModel Compile(const std::string& model_path, std::shared_ptr<cl::Context> ctx,
                      const CompileOptions& options) {
  try {
    return ImportAndCompile([&] { return ImportModelFile(model_path, options.import); },
                            [&] { return FileSha256(model_path); }, std::move(ctx), options);
  } catch (Error& e) {
    // Errors past the importer (the device's limits, lowering) name the file too.
    const std::vector<std::string>& ctx = e.context();
    if (std::find(ctx.begin(), ctx.end(), model_path) == ctx.end()) e.AddContext(model_path);
    throw;
  }
}

CompiledModel CompileBytes(const std::string& bytes, std::shared_ptr<cl::Context> ctx,
                           const CompileOptions& options) {
  return ImportAndCompile([&] { return ImportModelBytes(bytes, ".", options.import); },
                          [&] { return Sha256Hex(bytes); }, std::move(ctx), options);
}

}  // namespace texel
