// texel run: compiles a model for a device, runs it on given or seeded random inputs, prints a
// summary of each output and the median latency, and writes outputs as .npy files.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <random>

#include "api/compiler.h"
#include "commands.h"
#include "core/error.h"
#include "core/npy.h"

namespace texel::cli {

std::map<std::string, HostTensor> ReadNpyAssignments(const std::vector<std::string>& items,
                                                     const char* flag) {
  std::map<std::string, HostTensor> out;
  for (const auto& item : items) {
    auto [name, path] = SplitAssignment(item, flag);
    if (out.count(name)) Fail(ErrorCode::kInvalidArgument, "{} {}: given twice", flag, name);
    try {
      out[name] = ReadNpy(path);
    } catch (Error& e) {
      e.AddContext(fmt::format("{} {}", flag, name));
      throw;
    }
  }
  return out;
}

namespace {

HostTensor RandomTensor(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  HostTensor t(dtype, shape);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < t.size(); ++i) {
    if (dtype == DType::kFloat32)
      t.data<float>()[i] = normal(rng);
    else if (dtype == DType::kFloat16)
      t.data<uint16_t>()[i] = FloatToHalf(normal(rng));
    else if (dtype == DType::kBool)
      t.data<uint8_t>()[i] = small(rng) & 1;
    else
      VisitDType(dtype,
                 [&](auto z) { t.data<decltype(z)>()[i] = static_cast<decltype(z)>(small(rng)); });
  }
  return t;
}

std::string Summary(const HostTensor& t, int top) {
  if (t.size() == 0) return "empty";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < t.size(); ++i) {
    double v = t.GetDouble(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::string s = fmt::format("min {:.6g}  max {:.6g}  mean {:.6g}", lo, hi, sum / t.size());
  if (top > 0 && IsFloat(t.dtype)) {
    std::vector<int64_t> idx(t.size());
    std::iota(idx.begin(), idx.end(), 0);
    int k = static_cast<int>(std::min<int64_t>(top, t.size()));
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [&](int64_t a, int64_t b) { return t.GetDouble(a) > t.GetDouble(b); });
    s += fmt::format("\n    top-{}:", k);
    for (int i = 0; i < k; ++i) s += fmt::format("  [{}] {:.6g}", idx[i], t.GetDouble(idx[i]));
  }
  return s;
}

struct RunArgs {
  std::string model, device, output_dir;
  std::vector<std::string> inputs, shapes, freeze;
  int repeat = 10, warmup = 2, top = 5;
  uint64_t seed = 0;
};

int Run(const RunArgs& a) {
  if (!a.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.output_dir, ec);
    if (ec || !std::filesystem::is_directory(a.output_dir))
      Fail(ErrorCode::kIo, "--output-dir {}: cannot create the directory{}{}", a.output_dir,
           ec ? ": " : " (a file of that name exists)", ec ? ec.message() : "");
  }
  cl::DeviceInfo dev = cl::SelectDevice(a.device);
  auto ctx = std::make_shared<cl::Context>(dev);
  CompileOptions opts;
  opts.import.input_shapes = ParseInputShapes(a.shapes);
  opts.import.frozen_inputs = ReadNpyAssignments(a.freeze, "--freeze");
  std::map<std::string, HostTensor> given = ReadNpyAssignments(a.inputs, "--input");
  CompiledModel m = Compile(a.model, ctx, opts);
  const runtime::Plan& plan = m.executable->plan();
  std::printf("device   %s\n", dev.Label().c_str());
  std::printf("model    %s: %zu kernels, compiled in %.0f ms%s\n", a.model.c_str(),
              plan.steps.size(), m.compile_ms,
              // A plan without steps (e.g. only views) has no program.
              m.executable->program_from_cache() ? " (program from cache)" : "");
  for (const auto& [name, t] : given) {
    (void)t;
    bool known = std::any_of(plan.inputs.begin(), plan.inputs.end(),
                             [&](const auto& in) { return in.name == name; });
    if (!known)
      Fail(ErrorCode::kInvalidArgument, "--input {}: the model has no input named '{}'", name,
           name);
  }
  runtime::Session session(*m.executable);
  std::mt19937_64 rng(a.seed);
  for (const auto& in : plan.inputs) {
    auto it = given.find(in.name);
    bool random = it == given.end();
    HostTensor t = random ? RandomTensor(in.dtype, in.shape, rng) : it->second;
    try {
      session.SetInput(in.name, t);
    } catch (Error& e) {
      if (!random) e.AddContext(fmt::format("--input {}", in.name));
      throw;
    }
    std::printf("input    %s: %s[%s]%s\n", in.name.c_str(),
                std::string(DTypeName(in.dtype)).c_str(), ShapeStr(in.shape).c_str(),
                random ? fmt::format(" (random, seed {})", a.seed).c_str() : "");
  }
  for (int i = 0; i < a.warmup; ++i) session.Execute();
  std::vector<double> ms;
  for (int i = 0; i < std::max(a.repeat, 1); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    session.Execute();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const auto& out = plan.outputs[i];
    HostTensor t = session.GetOutput(i);
    std::printf("output   %s: %s[%s]  %s\n", out.name.c_str(),
                std::string(DTypeName(out.dtype)).c_str(), ShapeStr(out.shape).c_str(),
                Summary(t, a.top).c_str());
    if (!a.output_dir.empty()) {
      std::string safe = out.name;
      for (char& c : safe)
        if (c == '/' || c == '\\') c = '_';
      WriteNpy((std::filesystem::path(a.output_dir) / (safe + ".npy")).string(), t);
    }
  }
  std::sort(ms.begin(), ms.end());
  std::printf("latency  median %.3f ms over %zu runs (min %.3f, max %.3f)\n", ms[ms.size() / 2],
              ms.size(), ms.front(), ms.back());
  return 0;
}

}  // namespace

Runner AddRunCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Compile and run a model; print outputs and latency");
  auto a = std::make_shared<RunArgs>();
  cmd->add_option("model", a->model, "ONNX model file")->required();
  cmd->add_option("--input,-i", a->inputs, "NAME=FILE.npy (repeatable); others are random");
  cmd->add_option("--input-shape", a->shapes, "NAME=DIMS, e.g. input=1x3x224x224 (repeatable)");
  cmd->add_option("--freeze", a->freeze, "NAME=FILE.npy: bind an input at compile time");
  cmd->add_option("--output-dir,-o", a->output_dir, "write each output to DIR/<name>.npy");
  cmd->add_option("--device,-d", a->device, "gpu, cpu, P:D or a name substring (env TEXEL_DEVICE)");
  cmd->add_option("--repeat,-r", a->repeat, "timed runs (default 10)");
  cmd->add_option("--warmup", a->warmup, "untimed runs first (default 2)");
  cmd->add_option("--seed", a->seed, "seed of the random inputs (default 0)");
  cmd->add_option("--top", a->top, "largest values shown per output (default 5)");
  return [a] { return Run(*a); };
}

}  // namespace texel::cli
