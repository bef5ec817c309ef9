// texel compile: runs the compiler pipeline for a device and shows what it made: the IR
// (--print-ir, --print-ir-after=PASS), pass statistics (--stats), the OpenCL source (--emit-cl).
#include <cstdio>
#include <fstream>

#include "api/compiler.h"
#include "commands.h"
#include "core/error.h"
#include "ir/printer.h"

namespace texel::cli {
namespace {

struct CompileArgs {
  std::string model, device, print_after, emit_cl;
  std::vector<std::string> shapes, freeze, backends;
  bool print_ir = false, stats = false;
};

int RunCompile(const CompileArgs& a) {
  CompileOptions opts;
  opts.import.input_shapes = ParseInputShapes(a.shapes);
  opts.import.frozen_inputs = ReadNpyAssignments(a.freeze, "--freeze");
  opts.backends = a.backends;
  if (!a.print_after.empty()) {
    bool known = false;
    for (const auto& p : passes::Pipeline()) known = known || a.print_after == p.name;
    if (!known)
      Fail(ErrorCode::kInvalidArgument, "--print-ir-after: no pass named '{}'", a.print_after);
  }
  opts.after_pass = [&](const passes::Pass& p, const passes::Stats& stats, const ir::Graph& g) {
    if (a.stats) {
      std::printf("pass %-16s %s\n", p.name, p.summary);
      for (const auto& [k, v] : stats)
        std::printf("  %-24s %lld\n", k.c_str(), static_cast<long long>(v));
    }
    if (a.print_after == p.name) std::fputs(ir::PrintGraph(g).c_str(), stdout);
  };
  cl::DeviceInfo dev = cl::SelectDevice(a.device);
  auto ctx = std::make_shared<cl::Context>(dev);
  CompiledModel m = Compile(a.model, ctx, opts);
  if (a.print_ir) std::fputs(ir::PrintGraph(*m.graph).c_str(), stdout);
  const runtime::Plan& plan = m.executable->plan();
  if (!a.emit_cl.empty()) {
    std::ofstream f(a.emit_cl);
    f << plan.source;
    if (!f) Fail(ErrorCode::kIo, "{}: cannot write", a.emit_cl);
  }
  int64_t bytes = 0;
  for (const auto& b : plan.buffers)
    if (!b.constant) bytes += b.bytes;
  std::fprintf(stderr, "compiled %s for %s: %zu kernels, %.1f MiB of activations, %.0f ms\n",
               a.model.c_str(), dev.Label().c_str(), plan.steps.size(),
               static_cast<double>(bytes) / (1 << 20), m.compile_ms);
  return 0;
}

}  // namespace

Runner AddCompileCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile a model and show the IR, stats or kernels");
  auto a = std::make_shared<CompileArgs>();
  cmd->add_option("model", a->model, "ONNX model file")->required();
  cmd->add_flag("--print-ir", a->print_ir, "print the IR after the whole pipeline");
  cmd->add_option("--print-ir-after", a->print_after, "print the IR after pass NAME");
  cmd->add_flag("--stats", a->stats, "print each pass's statistics");
  cmd->add_option("--emit-cl", a->emit_cl, "write the generated OpenCL C to FILE");
  cmd->add_option("--input-shape", a->shapes, "NAME=DIMS (repeatable)");
  cmd->add_option("--freeze", a->freeze, "NAME=FILE.npy: bind an input at compile time");
  cmd->add_option("--backends", a->backends, "allowed backends, in order (default: native)")
      ->delimiter(',');
  cmd->add_option("--device,-d", a->device, "gpu, cpu, P:D or a name substring");
  return [a] { return RunCompile(*a); };
}

}  // namespace texel::cli
