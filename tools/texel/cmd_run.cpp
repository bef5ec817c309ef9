// texel run: compiles a model for a device, runs it on given or seeded random inputs, prints a
// summary of each output and the median latency, and writes outputs as .npy files.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "core/error.h"
#include "core/npy.h"
#include "model_session.h"

namespace texel::cli {

namespace {

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
  ModelArgs model;
  std::string output_dir;
  int repeat = 10, warmup = 2, top = 5;
};

int Run(const RunArgs& a) {
  if (!a.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.output_dir, ec);
    if (ec || !std::filesystem::is_directory(a.output_dir))
      Fail(ErrorCode::kIo, "--output-dir {}: cannot create the directory{}{}", a.output_dir,
           ec ? ": " : " (a file of that name exists)", ec ? ec.message() : "");
  }
  ModelSession ms = OpenModelSession(a.model);
  const runtime::Plan& plan = ms.plan();
  runtime::Session& session = *ms.session;
  std::vector<double> ms_runs = runtime::TimeExecutions({&session}, a.warmup, a.repeat)[0];
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
  std::printf("latency  median %.3f ms over %zu runs (min %.3f, max %.3f)\n",
              ms_runs[ms_runs.size() / 2], ms_runs.size(), ms_runs.front(), ms_runs.back());
  return 0;
}

}  // namespace

Runner AddRunCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Compile and run a model; print outputs and latency");
  auto a = std::make_shared<RunArgs>();
  AddModelOptions(cmd, &a->model);
  cmd->add_option("--output-dir,-o", a->output_dir, "write each output to DIR/<name>.npy");
  cmd->add_option("--repeat,-r", a->repeat, "timed runs (default 10)");
  cmd->add_option("--warmup", a->warmup, "untimed runs first (default 2)");
  cmd->add_option("--top", a->top, "largest values shown per output (default 5)");
  return [a] { return Run(*a); };
}

}  // namespace texel::cli
