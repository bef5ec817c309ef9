// What `texel run` and `texel bench` share: the options that pick a model, its input shapes and
// inputs, and a device; a compiled model with a Session whose inputs are bound; timed runs; and
// the planned memory in words (also for `texel compile`).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "commands.h"
#include "runtime/cl/device.h"
#include "runtime/session.h"

namespace texel::cli {

// The compile options every compiling command (run, bench, compile, partition) takes: one flag
// per option of the table (api/compile_options.h), and --measure.
struct CompilerFlags {
  std::map<std::string, std::vector<std::string>> values;  // option name -> values as given
  bool measure = false;
  bool no_tuning = false;
  bool empty() const;  // no compiler flag given
};

// Adds a flag per compile option (--input-shape, --freeze, --backends, --deny, --partition,
// --storage, --texture-precision, --precision, --tuning, --db, --disable-pass), --measure and
// --no-tuning.
void AddCompilerFlags(CLI::App* cmd, CompilerFlags* f);
CompileOptions ToCompileOptions(const CompilerFlags& f);

struct ModelArgs {
  std::string model, device;
  std::vector<std::string> inputs;
  CompilerFlags compile;
  uint64_t seed = 0;
};

// Adds the model argument, --input, the compiler flags, --device and --seed.
void AddModelOptions(CLI::App* cmd, ModelArgs* a);

struct ModelSession {
  cl::DeviceInfo device;
  std::shared_ptr<cl::Context> context;
  CompiledModel model;
  std::map<std::string, HostTensor> inputs;  // what the Session's inputs were set to
  std::unique_ptr<runtime::Session> session;
  const runtime::Plan& plan() const { return model.executable->plan(); }
};

// Whether the file at path is a .texel artifact (by its first bytes).
bool IsArtifactFile(const std::string& path);

// An artifact loaded for ctx's device (graph empty; compile_ms: the load's time). *how: "program
// from its binary in P ms; reading, verifying and uploading R ms" (or from the cache, or built
// from source).
CompiledModel LoadArtifactModel(const std::string& path, std::shared_ptr<cl::Context> ctx,
                                std::string* how);

// Compiles the model for the device (or loads it, for an artifact, whose compiler flags must be
// the defaults), makes a Session and binds every input (from --input, else seeded random
// values), printing a "device", a "model" and one "input" line each.
ModelSession OpenModelSession(const ModelArgs& a);

// The plan's kernels by kind, for transformer layers: "attention 4, norm 9, gemm 28, copy 2,
// other 3" (gemm: MatMul and Conv, with what is fused into them; copy: data movement).
std::string KernelMix(const runtime::Plan& plan);

// "812 B", "4.0 KiB", "6.02 MiB".
std::string FormatBytes(int64_t bytes);

// "arena 6.02 MiB (1.000x the liveness lower bound 6.02 MiB), inputs/outputs 592.0 KiB,
// constants 4.70 MiB"
std::string FormatMemory(const runtime::MemoryPlan& mem);

// 1000 * a / b, rounded; 0 when b is 0.
int64_t PerMille(int64_t a, int64_t b);

}  // namespace texel::cli
