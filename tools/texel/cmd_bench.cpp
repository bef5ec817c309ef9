// texel bench: compiles a model for a device and measures it: host latency over timed runs after
// warm-up, the kernel count, the planned memory, and a per-kernel profile from OpenCL profiling
// events (median device time per step, GFLOP/s, GB/s, share of the total), optionally as JSON.
// --vs FLAGS compiles the model again with other compiler flags (backends, partition policy)
// and times all configurations interleaved, run by run, so that they see the same machine
// state: a difference between them is then theirs, not the host's drift between processes.
// --without PATTERN adds the same plan without some kernels to those configurations: what-if
// timing, whose results are wrong.
#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "model_session.h"
#include "runtime/executable.h"

namespace texel::cli {
namespace {

// A kernel's name, or the library routine a step calls ("clblast.sgemm").
const std::string& StepName(const runtime::KernelStep& s) {
  return s.call.empty() ? s.kernel : s.call;
}

struct BenchArgs {
  ModelArgs model;
  int repeat = 50, warmup = 5, top = 20;
  std::string json;
  std::vector<std::string> vs;  // other compiler flags to compare with, e.g. "--backends native"
  std::vector<std::string> without;  // what-if: the model without the kernels these name
};

struct StepProfile {
  size_t index;
  const runtime::KernelStep* step;
  double ms;  // median device time over the profiled runs
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Rates in units of 1e9 per second from a count and milliseconds.
double PerNs(double count, double ms) { return ms > 0 ? count / ms * 1e-6 : 0; }

// Keeps the end of a long name, where IR names say the most ("/layer4/layer4.1/conv2/Conv").
std::string Tail(const std::string& s, size_t width) {
  return s.size() <= width ? s : "..." + s.substr(s.size() - (width - 3));
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void WriteJson(const BenchArgs& a, const ModelSession& ms, const std::vector<double>& latency,
               const std::vector<StepProfile>& profile, double total_ms) {
  const runtime::Plan& plan = ms.plan();
  const runtime::MemoryPlan& mem = plan.memory;
  std::string j = "{\n";
  j += fmt::format("  \"model\": {},\n  \"device\": {},\n", JsonString(a.model.model),
                   JsonString(ms.device.Label()));
  j += fmt::format("  \"repeat\": {},\n  \"warmup\": {},\n  \"kernels\": {},\n", latency.size(),
                   a.warmup, plan.steps.size());
  j += fmt::format("  \"latency_ms\": {{\"median\": {}, \"min\": {}, \"max\": {}}},\n",
                   latency[latency.size() / 2], latency.front(), latency.back());
  j += fmt::format(
      "  \"memory\": {{\"arena_bytes\": {}, \"lower_bound_bytes\": {}, \"unshared_bytes\": {}, "
      "\"alignment_bytes\": {}, \"io_bytes\": {}, \"constant_bytes\": {}}},\n",
      mem.arena_bytes, mem.lower_bound, mem.unshared_bytes, mem.alignment, mem.io_bytes,
      mem.constant_bytes);
  j += fmt::format("  \"total_ms\": {},\n  \"steps\": [", total_ms);
  for (size_t i = 0; i < profile.size(); ++i) {
    const StepProfile& p = profile[i];
    j += fmt::format(
        "{}\n    {{\"index\": {}, \"kernel\": {}, \"node\": {}, \"op\": {}, \"backend\": {}, "
        "\"ms\": {}, \"flops\": {}, \"bytes\": {}, \"gflops\": {}, \"gbps\": {}, \"share\": {}}}",
        i ? "," : "", p.index, JsonString(StepName(*p.step)), JsonString(p.step->node),
        JsonString(p.step->op), JsonString(p.step->backend), p.ms, p.step->flops, p.step->bytes,
        PerNs(p.step->flops, p.ms), PerNs(p.step->bytes, p.ms), total_ms > 0 ? p.ms / total_ms : 0);
  }
  j += "\n  ]\n}\n";
  std::ofstream f(a.json);
  f << j;
  if (!f) Fail(ErrorCode::kIo, "--json {}: cannot write", a.json);
}

// One configuration of --vs: the model compiled with the flags in `flags` (the compiler flags of
// the command line, with --backends, --deny, --partition and --measure replaced); or of
// --without: the model's plan without some kernels.
struct Variant {
  std::string flags;
  CompiledModel model;
  std::unique_ptr<runtime::Session> session;
  std::vector<double> ms;
};

Variant CompileVariant(const BenchArgs& a, const ModelSession& ms, const std::string& flags) {
  CompilerFlags f = a.model.compile;
  for (const char* name : {"backends", "deny", "partition"}) f.values.erase(name);
  f.measure = false;
  CLI::App parser("--vs");
  AddCompilerFlags(&parser, &f);
  try {
    parser.parse(flags, false);
  } catch (const CLI::ParseError& e) {
    Fail(ErrorCode::kInvalidArgument, "--vs '{}': {}", flags, e.what());
  }
  if (IsArtifactFile(a.model.model))
    Fail(ErrorCode::kInvalidArgument,
         "--vs '{}': {} is an artifact, compiled already; compare flags on the ONNX model", flags,
         a.model.model);
  Variant v;
  v.flags = flags;
  v.model = Compile(a.model.model, ms.context, ToCompileOptions(f));
  v.session = std::make_unique<runtime::Session>(*v.model.executable);
  for (const auto& [name, t] : ms.inputs) v.session->SetInput(name, t);
  return v;
}

// What-if timing: the model's plan without the kernels whose op or node name contains pattern,
// on the same device and constants. Its results are wrong; its time bounds what removing those
// kernels (fusing them into others) could buy.
Variant WithoutVariant(const ModelSession& ms, const std::string& pattern) {
  if (pattern.empty()) Fail(ErrorCode::kInvalidArgument, "--without: the pattern is empty");
  runtime::Artifact art = ms.model.executable->ToArtifact(false);
  auto& steps = art.plan.steps;
  const size_t before = steps.size();
  std::erase_if(steps, [&](const runtime::KernelStep& s) {
    return s.op.find(pattern) != std::string::npos || s.node.find(pattern) != std::string::npos;
  });
  if (steps.size() == before)
    Fail(ErrorCode::kInvalidArgument, "--without '{}': no kernel's op or node name contains it",
         pattern);
  Variant v;
  v.flags = fmt::format("--without {} ({} kernels)", pattern, before - steps.size());
  cl::ProgramCache cache = cl::ProgramCache::Default();
  v.model.executable =
      runtime::Executable::FromArtifact(ms.context, std::move(art), &cache, "the model");
  v.session = std::make_unique<runtime::Session>(*v.model.executable);
  for (const auto& [name, t] : ms.inputs) v.session->SetInput(name, t);
  return v;
}

// Times the main session and each variant (TimeExecutions: one run of each in turn); prints one
// row per configuration and returns the main one's times.
std::vector<double> TimeInterleaved(const BenchArgs& a, const ModelSession& ms,
                                    std::vector<Variant>& variants) {
  std::vector<runtime::Session*> sessions = {ms.session.get()};
  for (Variant& v : variants) sessions.push_back(v.session.get());
  std::vector<std::vector<double>> ms_of = runtime::TimeExecutions(sessions, a.warmup, a.repeat);
  double base = ms_of[0][ms_of[0].size() / 2];
  std::printf(
      "vs       interleaved, %d runs each after %d warm-up: median ms (min), ratio to "
      "this command's flags\n",
      a.repeat, a.warmup);
  for (size_t i = 0; i < sessions.size(); ++i) {
    const runtime::Plan& plan = i == 0 ? ms.plan() : variants[i - 1].model.executable->plan();
    int calls = 0;
    for (const auto& s : plan.steps) calls += !s.call.empty();
    double med = ms_of[i][ms_of[i].size() / 2];
    std::printf("  %-44s %8.3f (%.3f) %6.3fx  %zu steps, %d library calls\n",
                i == 0 ? "(this command)" : Tail(variants[i - 1].flags, 44).c_str(), med,
                ms_of[i].front(), med / base, plan.steps.size(), calls);
  }
  return ms_of[0];
}

int Bench(const BenchArgs& a) {
  if (a.repeat < 1) Fail(ErrorCode::kInvalidArgument, "--repeat {}: must be at least 1", a.repeat);
  if (a.warmup < 0)
    Fail(ErrorCode::kInvalidArgument, "--warmup {}: must not be negative", a.warmup);
  if (a.top < 0) Fail(ErrorCode::kInvalidArgument, "--top {}: must not be negative", a.top);
  ModelSession ms = OpenModelSession(a.model);
  const runtime::Plan& plan = ms.plan();
  runtime::Session& session = *ms.session;

  // Latency first, without profiling events; then as many runs again with events, for the
  // per-kernel times, so that requesting events does not weigh on the latency.
  std::vector<Variant> variants;
  for (const std::string& flags : a.vs) variants.push_back(CompileVariant(a, ms, flags));
  for (const std::string& pattern : a.without) variants.push_back(WithoutVariant(ms, pattern));
  if (!a.without.empty())
    std::printf(
        "note     --without: a variant's outputs are wrong; its time bounds what removing "
        "those kernels would buy\n");
  std::vector<double> latency = variants.empty()
                                    ? runtime::TimeExecutions({&session}, a.warmup, a.repeat)[0]
                                    : TimeInterleaved(a, ms, variants);
  std::vector<std::vector<double>> step_ms(plan.steps.size());
  std::vector<runtime::StepTiming> timings;
  for (size_t r = 0; r < latency.size() && !plan.steps.empty(); ++r) {
    session.Execute(&timings);
    for (size_t i = 0; i < timings.size(); ++i) step_ms[i].push_back(timings[i].ms);
  }
  std::vector<StepProfile> profile;
  double total_ms = 0, total_flops = 0, total_bytes = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    profile.push_back({i, &plan.steps[i], Median(step_ms[i])});
    total_ms += profile.back().ms;
    total_flops += plan.steps[i].flops;
    total_bytes += plan.steps[i].bytes;
  }
  std::stable_sort(profile.begin(), profile.end(),
                   [](const StepProfile& x, const StepProfile& y) { return x.ms > y.ms; });

  std::printf("latency  median %.3f ms over %zu runs (min %.3f, max %.3f), after %d warm-up\n",
              latency[latency.size() / 2], latency.size(), latency.front(), latency.back(),
              a.warmup);
  std::printf("kernels  %zu (%s)\n", plan.steps.size(), KernelMix(plan).c_str());
  std::printf("memory   %s\n", FormatMemory(plan.memory).c_str());
  if (!plan.steps.empty()) {
    std::printf("profile  device time per kernel, median over %zu profiled runs\n", latency.size());
    auto share = [&](double ms) { return total_ms > 0 ? 100 * ms / total_ms : 0; };
    size_t shown = a.top > 0 ? std::min<size_t>(a.top, profile.size()) : profile.size();
    // Columns as wide as the rows shown need, within limits; longer names keep their end.
    size_t wk = 6, wo = 2, wn = 4;
    for (size_t i = 0; i < shown; ++i) {
      wk = std::max(wk, std::min<size_t>(StepName(*profile[i].step).size(), 28));
      wo = std::max(wo, std::min<size_t>(profile[i].step->op.size(), 28));
      wn = std::max(wn, std::min<size_t>(profile[i].step->node.size(), 36));
    }
    const size_t wname = wk + wo + wn + 2;  // the three name columns, for the summary rows
    std::string out =
        fmt::format("  {:>4}  {:<{}} {:<{}} {:<{}} {:>9} {:>9} {:>8} {:>6}\n", "#", "kernel", wk,
                    "op", wo, "node", wn, "time ms", "GFLOP/s", "GB/s", "share");
    for (size_t i = 0; i < shown; ++i) {
      const StepProfile& p = profile[i];
      out += fmt::format("  {:>4}  {:<{}} {:<{}} {:<{}} {:>9.4f} {:>9.2f} {:>8.2f} {:>5.1f}%\n",
                         p.index, Tail(StepName(*p.step), wk), wk, Tail(p.step->op, wo), wo,
                         Tail(p.step->node, wn), wn, p.ms, PerNs(p.step->flops, p.ms),
                         PerNs(p.step->bytes, p.ms), share(p.ms));
    }
    if (shown < profile.size()) {
      double rest = 0;
      for (size_t i = shown; i < profile.size(); ++i) rest += profile[i].ms;
      out += fmt::format("  {:>4}  {:<{}} {:>9.4f} {:>9} {:>8} {:>5.1f}%\n", "",
                         fmt::format("({} more kernels)", profile.size() - shown), wname, rest, "",
                         "", share(rest));
    }
    out += fmt::format("  {:>4}  {:<{}} {:>9.4f} {:>9.2f} {:>8.2f} {:>5.1f}%\n", "", "total", wname,
                       total_ms, PerNs(total_flops, total_ms), PerNs(total_bytes, total_ms), 100.0);
    std::fputs(out.c_str(), stdout);
  }
  if (!a.json.empty()) WriteJson(a, ms, latency, profile, total_ms);
  return 0;
}

}  // namespace

Runner AddBenchCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "Measure a model: latency, per-kernel profile, kernel count, planned memory");
  auto a = std::make_shared<BenchArgs>();
  AddModelOptions(cmd, &a->model);
  cmd->add_option("--repeat,-r", a->repeat, "timed runs, and as many profiled runs (default 50)");
  cmd->add_option("--warmup", a->warmup, "untimed runs first (default 5)");
  cmd->add_option("--top", a->top,
                  "kernels shown in the profile, slowest first; 0: all (default 20)");
  cmd->add_option("--json", a->json, "also write the results to FILE as JSON");
  cmd->add_option("--vs", a->vs,
                  "FLAGS: also compile with these compiler flags (e.g. \"--backends "
                  "clblast,native --partition first\") and time all configurations "
                  "interleaved (repeatable)");
  cmd->add_option("--without", a->without,
                  "PATTERN: also time the model without the kernels whose op (a fused group's, "
                  "e.g. Conv+Add+Relu) or node name contains PATTERN, interleaved (repeatable). "
                  "What-if timing: that variant's results are wrong, and kernels after one that "
                  "computes indices or counts may read garbage; its time bounds what fusing "
                  "those kernels away would buy. Each variant holds its own copy of the weights");
  return [a] { return Bench(*a); };
}

}  // namespace texel::cli
