// texel compile: runs the compiler pipeline for a device and shows what it made: the IR
// (--print-ir, --print-ir-after=PASS), pass statistics and the memory plan (--stats), the OpenCL
// source (--emit-cl); writes it as an artifact (-o model.texel, docs/artifact.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include "api/compiler.h"
#include "api/tuning_source.h"
#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "core/file_io.h"
#include "ir/printer.h"
#include "model_session.h"
#include "runtime/artifact.h"
#include "runtime/cl/device_facts.h"
#include "runtime/session.h"

namespace texel::cli {
namespace {

struct CompileArgs {
  std::string model, device, print_after, emit_cl, output, facts;
  CompilerFlags compile;
  bool print_ir = false, stats = false, binaries = false;
};

void WriteSource(const CompileArgs& a, const runtime::Plan& plan) {
  if (a.emit_cl.empty()) return;
  std::ofstream f(a.emit_cl);
  f << plan.source;
  if (!f) Fail(ErrorCode::kIo, "{}: cannot write", a.emit_cl);
}

// --facts: the artifact for a device described by its facts (texel devices --facts), which need
// not be here; nothing is built or run.
int CompileForFacts(const CompileArgs& a, const CompileOptions& opts) {
  if (a.output.empty())
    Fail(ErrorCode::kInvalidArgument, "--facts: needs -o FILE.texel to write the artifact to");
  if (a.binaries || !a.device.empty() || a.print_ir)
    Fail(ErrorCode::kInvalidArgument,
         "--facts: compiles for a device that is not here; --binaries, --device and --print-ir "
         "need one");
  cl::DeviceInfo facts = cl::ReadDeviceFacts(a.facts);
  runtime::Artifact artifact = CompileForDevice(a.model, facts, opts);
  WriteSource(a, artifact.plan);
  std::string bytes = runtime::WriteArtifact(artifact);
  WriteFileAtomically(a.output, bytes);
  std::fprintf(stderr, "wrote %s: %s, %zu kernels (%s), for %s (from its facts)\n",
               a.output.c_str(), FormatBytes(static_cast<int64_t>(bytes.size())).c_str(),
               artifact.plan.steps.size(), KernelMix(artifact.plan).c_str(), facts.name.c_str());
  return 0;
}

int RunCompile(const CompileArgs& a) {
  if (a.binaries && a.output.empty())
    Fail(ErrorCode::kInvalidArgument, "--binaries: needs -o FILE.texel to store them in");
  if (IsArtifactFile(a.model))
    Fail(ErrorCode::kInvalidArgument,
         "{}: an artifact is compiled already (texel inspect shows what it holds)", a.model);
  if (!a.output.empty()) {  // before a compile that may take minutes
    std::filesystem::path dir = std::filesystem::absolute(a.output).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
      Fail(ErrorCode::kIo, "{}: cannot write (no directory {})", a.output, dir.string());
  }
  CompileOptions opts = ToCompileOptions(a.compile);
  if (!a.print_after.empty()) {
    bool known = false;
    for (const auto& p : passes::Pipeline()) known = known || a.print_after == p.name;
    if (!known)
      Fail(ErrorCode::kInvalidArgument, "--print-ir-after: no pass named '{}'", a.print_after);
  }
  opts.after_pass = [&, notes = opts.after_pass](const passes::Pass& p, const passes::Stats& stats,
                                                 const ir::Graph& g) {
    if (notes) notes(p, stats, g);
    if (a.stats) {
      std::printf("pass %-16s %s\n", p.name, p.summary);
      for (const auto& [k, v] : stats)
        std::printf("  %-24s %lld\n", k.c_str(), static_cast<long long>(v));
    }
    if (a.print_after == p.name) std::fputs(ir::PrintGraph(g).c_str(), stdout);
  };
  opts.on_tuning = [&](const TuningReport& r) {
    if (!a.stats) return;
    std::printf("%-21s %s\n", "tuning",
                r.db_path.empty() ? "off: every kernel's parameters from the heuristics"
                                  : ("kernel signatures decided from " + r.db_path).c_str());
    for (const auto& [k, v] : std::vector<std::pair<const char*, int>>{
             {"exact", r.exact}, {"nearest", r.nearest}, {"heuristic", r.heuristic}})
      std::printf("  %-24s %d\n", k, v);
  };
  if (!a.facts.empty()) return CompileForFacts(a, opts);
  cl::DeviceInfo dev = cl::SelectDevice(a.device);
  auto ctx = std::make_shared<cl::Context>(dev);
  uint64_t generated = codegen::GeneratedGroups();
  CompiledModel m = Compile(a.model, ctx, opts);
  generated = codegen::GeneratedGroups() - generated;
  if (a.print_ir) std::fputs(ir::PrintGraph(*m.graph).c_str(), stdout);
  const runtime::Plan& plan = m.executable->plan();
  WriteSource(a, plan);
  const runtime::MemoryPlan& mem = plan.memory;
  if (a.stats) {
    // After the passes, in their format: the memory plan of the lowered steps.
    int64_t planned =
        std::count_if(mem.offsets.begin(), mem.offsets.end(), [](int64_t o) { return o >= 0; });
    std::printf("%-21s %s\n", "lower", "kernels generated, once per native group");
    std::printf("  %-24s %llu\n", "groups-generated", static_cast<unsigned long long>(generated));
    std::printf("  %-24s %zu\n", "steps", plan.steps.size());
    std::printf("%-21s %s\n", "plan memory",
                "intermediate buffers placed by liveness in one arena");
    for (const auto& [k, v] : std::vector<std::pair<const char*, int64_t>>{
             {"planned_buffers", planned},
             {"arena_bytes", mem.arena_bytes},
             {"lower_bound_bytes", mem.lower_bound},
             {"arena_per_mille_of_bound", PerMille(mem.arena_bytes, mem.lower_bound)},
             {"unshared_bytes", mem.unshared_bytes},
             {"alignment_bytes", mem.alignment},
             {"constant_bytes", mem.constant_bytes},
             {"io_bytes", mem.io_bytes}})
      std::printf("  %-24s %lld\n", k, static_cast<long long>(v));
    if (!mem.texture_blocks.empty()) {
      std::printf("%-21s %s\n", "plan textures", "image values sharing pooled images by liveness");
      int64_t images = std::count_if(mem.texture_block.begin(), mem.texture_block.end(),
                                     [](int b) { return b >= 0; });
      for (const auto& [k, v] : std::vector<std::pair<const char*, int64_t>>{
               {"image_values", images},
               {"pool_images", static_cast<int64_t>(mem.texture_blocks.size())},
               {"pool_bytes", mem.texture_pool_bytes},
               {"unshared_bytes", mem.texture_unshared_bytes},
               {"pool_per_mille_of_unshared",
                PerMille(mem.texture_pool_bytes, mem.texture_unshared_bytes)}})
        std::printf("  %-24s %lld\n", k, static_cast<long long>(v));
    }
  }
  std::fprintf(stderr, "compiled %s for %s: %zu kernels (%s), %s, %.0f ms\n", a.model.c_str(),
               dev.Label().c_str(), plan.steps.size(), KernelMix(plan).c_str(),
               FormatMemory(mem).c_str(), m.compile_ms);
  if (!a.output.empty()) {
    // Some drivers (PoCL) compile each kernel for its work-group size at its first launch, and
    // their program binary holds what was compiled by then: one run first puts that in.
    if (a.binaries) runtime::Session(*m.executable).Execute();
    runtime::Artifact artifact = m.executable->ToArtifact(a.binaries);
    std::string bytes = runtime::WriteArtifact(artifact);
    WriteFileAtomically(a.output, bytes);
    std::fprintf(stderr, "wrote %s: %s%s\n", a.output.c_str(),
                 FormatBytes(static_cast<int64_t>(bytes.size())).c_str(),
                 a.binaries && artifact.binaries.empty()
                     ? " (without a binary: the driver gives none)"
                 : a.binaries ? fmt::format(" (with the program's binary for {})", dev.name).c_str()
                              : "");
  }
  return 0;
}

}  // namespace

Runner AddCompileCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile a model and show the IR, stats or kernels");
  auto a = std::make_shared<CompileArgs>();
  cmd->add_option("model", a->model, "ONNX model or linalg fragment (.mlir) file")->required();
  cmd->add_flag("--print-ir", a->print_ir, "print the IR after the whole pipeline");
  cmd->add_option("--print-ir-after", a->print_after, "print the IR after pass NAME");
  cmd->add_flag("--stats", a->stats, "print each pass's statistics");
  cmd->add_option("--emit-cl", a->emit_cl, "write the generated OpenCL C to FILE");
  cmd->add_option("--output,-o", a->output,
                  "write the compiled model to FILE.texel (an artifact: texel run|bench|inspect "
                  "FILE.texel, texel_model_load_file)");
  cmd->add_flag("--binaries", a->binaries,
                "with -o: store the program's binary for this device too (used where device, "
                "driver and texel version match; elsewhere built from source)");
  AddCompilerFlags(cmd, &a->compile);
  cmd->add_option("--device,-d", a->device, "gpu, cpu, P:D or a name substring");
  cmd->add_option("--facts", a->facts,
                  "with -o: compile for the device described in FILE (texel devices --facts), "
                  "which need not be here");
  return [a] { return RunCompile(*a); };
}

}  // namespace texel::cli
