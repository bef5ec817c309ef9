#include "model_session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string_view>

#include "api/compile_options.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/random_tensor.h"
#include "ir/op.h"
#include "runtime/artifact.h"

namespace texel::cli {

std::map<std::string, HostTensor> ReadNpyAssignments(const std::vector<std::string>& items,
                                                     const char* flag) {
  return ParseAssignments<HostTensor>(items, flag,
                                      [](const std::string& path) { return ReadNpy(path); });
}

bool CompilerFlags::empty() const {
  return !measure && !no_tuning && std::all_of(values.begin(), values.end(), [](const auto& kv) {
    return kv.second.empty();
  });
}

void AddCompilerFlags(CLI::App* cmd, CompilerFlags* f) {
  for (const CompileOptionSpec& spec : CompileOptionTable()) {
    CLI::Option* o = cmd->add_option(spec.flag(), f->values[spec.name],
                                     spec.help + (spec.repeatable ? " (repeatable)" : ""));
    // One value per occurrence; repeatable options collect every occurrence's.
    o->allow_extra_args(false);
    if (!spec.repeatable) o->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::Throw);
    if (spec.choices.empty())
      o->type_name(spec.values);
    else
      o->check(CLI::IsMember(spec.choices));
  }
  cmd->add_flag("--measure", f->measure, "same as --partition measure");
  cmd->add_flag("--no-tuning", f->no_tuning, "same as --tuning off");
}

CompileOptions ToCompileOptions(const CompilerFlags& f) {
  CompileOptions opts;
  for (const auto& [name, values] : f.values)
    for (const std::string& v : values) ApplyCompileOption(opts, name, v);
  if (f.measure) ApplyCompileOption(opts, "partition", "measure");
  if (f.no_tuning) ApplyCompileOption(opts, "tuning", "off");
  // What the user should hear of the options (an allowed backend that cannot run, texture
  // storage or a matrix engine the device lacks) and of a damaged or foreign tuning database,
  // which is read around, never trusted.
  opts.on_notice = [](const std::string& n) {
    std::fprintf(stderr, "texel: note: %s\n", n.c_str());
  };
  return opts;
}

void AddModelOptions(CLI::App* cmd, ModelArgs* a) {
  cmd->add_option("model", a->model, "ONNX model, linalg fragment (.mlir) or artifact (.texel)")
      ->required();
  cmd->add_option("--input,-i", a->inputs, "NAME=FILE.npy (repeatable); others are random");
  AddCompilerFlags(cmd, &a->compile);
  cmd->add_option("--device,-d", a->device, "gpu, cpu, P:D or a name substring (env TEXEL_DEVICE)");
  cmd->add_option("--seed", a->seed, "seed of the random inputs (default 0)");
}

bool IsArtifactFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  f.read(magic, sizeof(magic));
  return f && runtime::LooksLikeArtifact({magic, sizeof(magic)});
}

CompiledModel LoadArtifactModel(const std::string& path, std::shared_ptr<cl::Context> ctx,
                                std::string* how) {
  auto t0 = std::chrono::steady_clock::now();
  cl::ProgramCache cache = cl::ProgramCache::Default();
  CompiledModel m;
  m.executable = runtime::Executable::FromArtifactFile(std::move(ctx), path, &cache);
  m.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const runtime::Executable& exe = *m.executable;
  *how = fmt::format("program {} in {:.0f} ms; reading, verifying and uploading {:.0f} ms",
                     exe.program_from_binary()  ? "from its binary"
                     : exe.program_from_cache() ? "from the cache"
                                                : "built from source",
                     exe.program_ms(), m.compile_ms - exe.program_ms());
  return m;
}

ModelSession OpenModelSession(const ModelArgs& a) {
  ModelSession ms;
  ms.device = cl::SelectDevice(a.device);
  auto ctx = ms.context = std::make_shared<cl::Context>(ms.device);
  std::map<std::string, HostTensor> given = ReadNpyAssignments(a.inputs, "--input");
  std::string how;
  if (IsArtifactFile(a.model)) {
    if (!a.compile.empty())
      Fail(ErrorCode::kInvalidArgument,
           "{}: an artifact is compiled already; compiler flags (--precision, --storage, ...) "
           "apply to ONNX models",
           a.model);
    ms.model = LoadArtifactModel(a.model, ctx, &how);
    how = fmt::format("loaded in {:.0f} ms ({})", ms.model.compile_ms, how);
  } else {
    CompileOptions options = ToCompileOptions(a.compile);
    options.keep_graph = false;  // not needed to run
    ms.model = Compile(a.model, ctx, options);
    how = fmt::format("compiled in {:.0f} ms{}", ms.model.compile_ms,
                      // A plan without steps (e.g. only views) has no program.
                      ms.model.executable->program_from_cache() ? " (program from cache)" : "");
  }
  const runtime::Plan& plan = ms.plan();
  std::printf("device   %s\n", ms.device.Label().c_str());
  std::printf("model    %s: %zu kernels, %s\n", a.model.c_str(), plan.steps.size(), how.c_str());
  for (const auto& entry : given) {
    const std::string& name = entry.first;  // not a structured binding: the lambda captures it
    bool known = std::any_of(plan.inputs.begin(), plan.inputs.end(),
                             [&](const auto& in) { return in.name == name; });
    if (!known)
      Fail(ErrorCode::kInvalidArgument, "--input {}: the model has no input named '{}'", name,
           name);
  }
  ms.session = std::make_unique<runtime::Session>(*ms.model.executable);
  std::mt19937_64 rng(a.seed);
  for (const auto& in : plan.inputs) {
    auto it = given.find(in.name);
    bool random = it == given.end();
    HostTensor t = random ? RandomTensor(in.dtype, in.shape, rng) : it->second;
    try {
      ms.session->SetInput(in.name, t);
    } catch (Error& e) {
      if (!random) e.AddContext(fmt::format("--input {}", in.name));
      throw;
    }
    ms.inputs[in.name] = t;
    std::printf("input    %s: %s[%s]%s\n", in.name.c_str(),
                std::string(DTypeName(in.dtype)).c_str(), ShapeStr(in.shape).c_str(),
                random ? fmt::format(" (random, seed {})", a.seed).c_str() : "");
  }
  return ms;
}

std::string FormatBytes(int64_t bytes) {
  double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < (1 << 20)) return fmt::format("{:.1f} KiB", b / 1024);
  return fmt::format("{:.2f} MiB", b / (1 << 20));
}

std::string KernelMix(const runtime::Plan& plan) {
  const char* kinds[] = {"attention", "norm", "gemm", "copy", "other"};
  int count[5] = {};
  // A kernel counts as the most telling of the ops it computes: attention, then a product or
  // convolution, then a norm (a LayerNorm computing its input as it reads it: an embedding
  // lookup, a position term), then any other work (elementwise, pooling, reductions); a copy
  // only where it moves data and computes nothing else.
  for (const auto& step : plan.steps) {
    int k = -1;
    for (size_t from = 0; from <= step.op.size();) {
      size_t to = std::min(step.op.find('+', from), step.op.size());
      ir::OpKind op = ir::OpKind::kCopy;
      if (ir::ParseOpKind(step.op.substr(from, to - from), &op)) {
        ir::OpClass c = ir::GetOpInfo(op).cls;
        int kind = c == ir::OpClass::kAttention                             ? 0
                   : c == ir::OpClass::kMatMul || c == ir::OpClass::kConv   ? 2
                   : c == ir::OpClass::kNormalize                           ? 1
                   : c == ir::OpClass::kMovement || op == ir::OpKind::kCopy ? 3
                                                                            : 4;
        // Ranked attention, product, norm, other, copy.
        static constexpr int kRank[] = {0, 2, 1, 4, 3};
        if (k < 0 || kRank[kind] < kRank[k]) k = kind;
      }
      from = to + 1;
    }
    ++count[k < 0 ? 4 : k];
  }
  std::string s;
  for (int k = 0; k < 5; ++k) s += fmt::format("{}{} {}", k ? ", " : "", kinds[k], count[k]);
  return s;
}

std::string FormatMemory(const runtime::MemoryPlan& mem) {
  std::string s = "arena " + FormatBytes(mem.arena_bytes);
  if (mem.lower_bound > 0)
    s += fmt::format(" ({:.3f}x the liveness lower bound {})",
                     static_cast<double>(mem.arena_bytes) / static_cast<double>(mem.lower_bound),
                     FormatBytes(mem.lower_bound));
  if (!mem.texture_blocks.empty())
    s += fmt::format(", texture pool {} in {} images ({} without sharing)",
                     FormatBytes(mem.texture_pool_bytes), mem.texture_blocks.size(),
                     FormatBytes(mem.texture_unshared_bytes));
  return s + fmt::format(", inputs/outputs {}, constants {}", FormatBytes(mem.io_bytes),
                         FormatBytes(mem.constant_bytes));
}

int64_t PerMille(int64_t a, int64_t b) {
  return b == 0 ? 0 : std::llround(1000.0 * static_cast<double>(a) / static_cast<double>(b));
}

}  // namespace texel::cli
