#include "api/trial_builds.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>
#include <type_traits>
#include <utility>

#include "backends/lower.h"
#include "backends/native/native_backend.h"
#include "core/error.h"
#include "core/random_tensor.h"
#include "core/threads.h"
#include "runtime/cl/compile_workers.h"
#include "runtime/executable.h"
#include "runtime/session.h"

namespace texel::tuning {
namespace {

using Clock = std::chrono::steady_clock;

// Bytes written before each timed run on a GPU (RunTrials): five times an H200's 50 MB L2, at most
// a 16th of the device's memory.
constexpr uint64_t kOverwriteBytes = 256ull << 20;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Names the points of a bench graph's kernels in the order they are generated (one Pick per
// tunable node, in node order), checking that each is asked for its own kernel.
class PointsInOrder : public codegen::TuningSource {
 public:
  explicit PointsInOrder(std::vector<std::pair<const codegen::Tunable*, TunePoint>> points)
      : points_(std::move(points)) {}
  std::optional<TunePoint> Pick(const codegen::Tunable& t) const override {
    TEXEL_CHECK(next_ < points_.size() && points_[next_].first->signature == t.signature,
                "tuning: kernel {} generated out of order", t.signature);
    return points_[next_++].second;
  }
  bool done() const { return next_ == points_.size(); }

 private:
  std::vector<std::pair<const codegen::Tunable*, TunePoint>> points_;
  mutable size_t next_ = 0;
};

}  // namespace

// What a step costs a run beyond its kernel's device time (the host's enqueue, the device's gap
// between kernels), microseconds: a chain of tiny kernels timed by the host clock, less their
// profiled time (9.1 us on an H100 through NVIDIA's OpenCL): a point that adds a kernel (K split
// with a sum kernel) must save more than that, which the kernels' own times do not show
// (EfficientNet-B0 at batch 1, launch-bound, ran 2.6% slower tuned than untuned).
double StepCostUs(const std::shared_ptr<cl::Context>& ctx) {
  constexpr int kSteps = 32, kRuns = 15;
  ir::Graph g;
  ir::Value* v = g.AddInput("x", {DType::kFloat32, {256}});
  for (int i = 0; i < kSteps; ++i) {
    ir::Node* n = g.AddNode(ir::OpKind::kRelu, {v}, {}, fmt::format("step{}", i));
    n->backend = backends::kNative;
    v = n->outputs[0];
  }
  g.AddOutput(v);
  runtime::Executable exe(ctx, backends::LowerToPlan(g, ctx->info(), nullptr), nullptr);
  runtime::Session session(exe);
  session.SetInput("x", HostTensor(DType::kFloat32, {256}));
  std::vector<double> extra;
  for (int r = 0; r < kRuns + 3; ++r) {
    std::vector<runtime::StepTiming> steps;
    auto t = Clock::now();
    session.Execute(&steps);
    double device_ms = 0;
    for (const auto& st : steps) device_ms += st.ms;
    if (r >= 3) extra.push_back((Since(t) * 1e3 - device_ms) * 1e3 / kSteps);
  }
  std::sort(extra.begin(), extra.end());
  return std::max(0.0, extra[extra.size() / 2]);
}

TrialPlan LowerTrials(const cl::DeviceInfo& dev, const std::vector<Trial>& trials) {
  ir::Graph g;
  TrialPlan tp;
  std::map<const ir::Value*, ir::Value*> constants;
  std::vector<std::pair<const codegen::Tunable*, TunePoint>> points;
  for (size_t i = 0; i < trials.size(); ++i) {
    const ir::Node& n = *trials[i].node;
    std::vector<ir::Value*> in;
    for (const ir::Value* v : n.inputs) {
      if (v->constant) {
        ir::Value*& c = constants[v];
        if (!c) c = g.AddConstant(fmt::format("c{}", constants.size()), v->constant);
        in.push_back(c);
      } else {
        in.push_back(g.AddInput(fmt::format("in{}", tp.inputs.size()), v->type));
        tp.inputs.push_back({v, in.back()->name, v->type});
      }
    }
    ir::Node* m = g.AddNode(n.op, in, n.attrs, fmt::format("trial{}", i));
    m->backend = backends::kNative;
    g.AddOutput(m->outputs[0]);
    points.emplace_back(trials[i].tunable, trials[i].point);
  }
  PointsInOrder source(points);
  tp.plan = backends::LowerToPlan(g, dev, &source);
  TEXEL_CHECK(source.done(), "tuning: a trial's kernel took no point");
  return tp;
}

// Compiles the plans' programs on `contexts.size()` threads, each with a context of its own on
// the device, into binaries by source (a plan that fails to compile gets none: its build then
// fails as it runs, trial by trial). NVIDIA's driver compiles a program on one core: a tune at
// batch 32 spent 33 of its builds' 41 s there, one build after another.
Prebuilt CompileInParallel(const std::vector<std::shared_ptr<cl::Context>>& contexts,
                           cl::ProgramCache& cache, const std::vector<const runtime::Plan*>& plans,
                           const GiveUp& stop) {
  std::vector<std::vector<uint8_t>> binaries(plans.size());
  std::atomic<size_t> next{0};
  auto work = [&](const cl::Context& ctx) noexcept {
    for (size_t i; (i = next++) < plans.size() && !(stop && stop());) {
      try {
        cl::Program program(ctx, plans[i]->source, plans[i]->build_options, &cache);
        binaries[i] = program.Binary();
      } catch (...) {  // no binary: the build compiles (and fails) as it runs
      }
    }
  };
  RunOnThreads(std::max<size_t>(1, std::min(contexts.size(), plans.size())),
               [&](size_t t) { work(*contexts[t]); });
  Prebuilt out;
  for (size_t i = 0; i < plans.size(); ++i)
    if (!binaries[i].empty()) out[plans[i]->source] = std::move(binaries[i]);
  return out;
}

Prebuilt CompileInWorkers(const std::string& worker, const cl::DeviceInfo& dev, size_t processes,
                          const cl::ProgramCache& cache,
                          const std::vector<const runtime::Plan*>& plans, const GiveUp& stop) {
  if (plans.empty()) return {};
  std::vector<cl::ProgramSource> programs;
  for (const runtime::Plan* p : plans) programs.push_back({p->source, p->build_options});
  cl::CompileJob job(worker, dev, programs, processes, cache.dir());
  std::vector<cl::CompileJob::Compiled> compiled = job.Wait(stop);
  Prebuilt out;
  for (size_t i = 0; i < plans.size(); ++i)
    if (!compiled[i].binary.empty()) out[plans[i]->source] = std::move(compiled[i].binary);
  return out;
}

// The trials' kernels as one program (one build for all of them; its binary from `prebuilt` where
// that has it) run back to back, each node alone on seeded random inputs (its constants kept:
// packed filters need them): per trial the median over `runs` runs of its profiled time plus
// step_us for each of its kernels, and its output.
std::vector<Measured> RunTrials(const std::shared_ptr<cl::Context>& ctx, cl::ProgramCache& cache,
                                const std::vector<Trial>& trials, int runs, uint64_t seed,
                                double step_us, const Prebuilt& prebuilt, BuildPhases& phases,
                                std::optional<TrialPlan> lowered) {
  auto t = Clock::now();
  auto lap = [&t](double& phase) {
    auto now = Clock::now();
    phase += std::chrono::duration<double>(now - t).count();
    t = now;
  };
  ++phases.builds;
  TrialPlan tp = lowered ? std::move(*lowered) : LowerTrials(ctx->info(), trials);
  lap(phases.lower);
  auto binary = prebuilt.find(tp.plan.source);
  runtime::Executable exe(ctx, std::move(tp.plan), &cache,
                          binary == prebuilt.end() ? nullptr : &binary->second);
  runtime::Session session(exe);
  lap(phases.program);
  // Each input's values follow from the original value, whichever trials share the build: made
  // once for the trials of one node (at batch 32, eight copies of tens of millions of values had
  // taken most of a build's 6-10 s on the H200 machine's host).
  std::map<const ir::Value*, HostTensor> values;
  for (const TrialPlan::Input& in : tp.inputs) {
    auto it = values.find(in.original);
    if (it == values.end())
      it = values
               .emplace(in.original,
                        UniformTensor(in.type.dtype, in.type.shape,
                                      seed * 1000003 + static_cast<uint64_t>(in.original->id)))
               .first;
    session.SetInput(in.name, it->second);
  }
  lap(phases.inputs);
  session.Execute();  // warm-up
  // On GPUs each run starts with the device's cache overwritten, so that every trial reads its
  // operands from memory, as a model's kernels read their weights; run after run alone, they
  // stayed in an H200's 50 MB L2 (DenseNet-121's 1x1 convolutions at batch 1 unsplit, on small
  // tiles: 24-31 us alone, against 27 for the heuristic's split, but 33-45 us in the model
  // against 24-27, so that points 1.31-1.37x faster summed over the kernels gave the model
  // 0.99-1.13x in four tunes).
  // A device that cannot hold the buffer beside the build times it as before, warm.
  std::optional<cl::Buffer> overwrite;
  if (ctx->info().kind == cl::DeviceKind::kGpu) {
    try {
      overwrite.emplace(*ctx, std::min({kOverwriteBytes, ctx->info().global_mem_bytes / 16,
                                        ctx->info().max_alloc_bytes}));
      overwrite->Zero(*ctx);  // where drivers allocate it
    } catch (const Error&) {
      overwrite.reset();
    }
  }
  std::vector<std::vector<double>> times(trials.size());
  std::vector<int> kernels(trials.size(), 0);
  for (int r = 0; r < runs; ++r) {
    if (overwrite) overwrite->Zero(*ctx);
    std::vector<runtime::StepTiming> steps;
    session.Execute(&steps);
    std::vector<int> seen(trials.size(), 0);
    for (const auto& st : steps) {
      size_t i = std::stoul(st.step->node.substr(5));  // "trialI"
      if (trials[i].product_only && seen[i]++ > 0) continue;
      if (times[i].size() < static_cast<size_t>(r + 1)) times[i].push_back(0);
      times[i].back() += st.ms;
      if (r == 0) ++kernels[i];
    }
  }
  lap(phases.runs);
  std::vector<Measured> out;
  for (size_t i = 0; i < trials.size(); ++i) {
    std::sort(times[i].begin(), times[i].end());
    double us = times[i].empty() ? 0 : times[i][times[i].size() / 2] * 1e3;
    out.push_back({us + kernels[i] * step_us, session.GetOutput(i), kernels[i] * step_us});
  }
  lap(phases.outputs);
  return out;
}

namespace {

// A failed build's trials built again in parts (RunEach): the call's fixed arguments.
struct Retry {
  const std::shared_ptr<cl::Context>& ctx;
  cl::ProgramCache& cache;
  int runs;
  uint64_t seed;
  double step_us;
  const Prebuilt& prebuilt;
  BuildPhases& phases;
  const GiveUp& give_up;
  bool with_reference;
  bool reference_failed = false;  // trials[0] failed in a build of its own: the rest is moot

  // trials measured, a failed build's parts apart. need_reference: nothing has measured the
  // reference yet (a part after the first has).
  std::vector<std::optional<Measured>> Run(const std::vector<Trial>& trials,
                                           std::vector<std::string>* why,
                                           std::optional<TrialPlan> lowered, bool need_reference) {
    why->assign(trials.size(), "");
    std::string failed;
    try {
      std::vector<Measured> all =
          RunTrials(ctx, cache, trials, runs, seed, step_us, prebuilt, phases, std::move(lowered));
      return {all.begin(), all.end()};
    } catch (const Error& e) {
      failed = e.what();
    }
    std::vector<std::optional<Measured>> out(trials.size());
    why->assign(trials.size(), failed);
    if (trials.size() == 1) {
      if (with_reference) reference_failed = true;
      return out;
    }
    if (with_reference && trials.size() == 2) {  // the reference and the failing candidate
      if (need_reference) MeasureApart(trials, 0, 1, failed, &out, why, false);
      return out;
    }
    // Without a reference the halves of the trials; with one, the halves of its candidates, each
    // built beside it again.
    const size_t first = with_reference ? 1 : 0;
    const size_t half = first + (trials.size() - first) / 2;
    MeasureApart(trials, first, half, failed, &out, why, need_reference);
    MeasureApart(trials, half, trials.size(), failed, &out, why, need_reference);
    return out;
  }

  // Trials [from, to) (with the reference beside them where there is one) into out and why,
  // while there is time and the reference builds. A later part's times are scaled by the
  // reference's first measurement over its own, so that every ratio to the reference is the one
  // measured in the same runs.
  void MeasureApart(const std::vector<Trial>& trials, size_t from, size_t to,
                    const std::string& failed, std::vector<std::optional<Measured>>* out,
                    std::vector<std::string>* why, bool need_reference) {
    if (from >= to) return;
    std::string lost;
    if (reference_failed) lost = failed + " (its reference kernel failed alone)";
    if (give_up && give_up()) lost = failed + " (no time was left to build its points apart)";
    const size_t shift = with_reference && from > 0 ? 1 : 0;  // the part's reference first
    if (!lost.empty()) {
      for (size_t i = from; i < to; ++i) (*why)[i] = lost;
      if (shift && !(*out)[0]) (*why)[0] = lost;
      return;
    }
    std::vector<Trial> part_trials;
    if (shift) part_trials.push_back(trials[0]);
    part_trials.insert(part_trials.end(), trials.begin() + from, trials.begin() + to);
    std::vector<std::string> w;
    std::vector<std::optional<Measured>> part =
        Run(part_trials, &w, std::nullopt, need_reference && !(*out)[0]);
    double scale = 1.0;
    if (shift) {
      if ((*out)[0] && part[0])
        scale = ((*out)[0]->us - (*out)[0]->launches_us) /
                std::max(part[0]->us - part[0]->launches_us, 1e-12);
      if (!(*out)[0]) (*out)[0] = std::move(part[0]), (*why)[0] = w[0];
    }
    for (size_t i = from; i < to; ++i) {
      (*out)[i] = std::move(part[i - from + shift]);
      if ((*out)[i]) {  // the measured part; the launches' is a constant
        Measured& m = *(*out)[i];
        m.us = m.launches_us + (m.us - m.launches_us) * scale;
      }
      (*why)[i] = std::move(w[i - from + shift]);
    }
  }
};

}  // namespace

std::vector<std::optional<Measured>> RunEach(
    const std::shared_ptr<cl::Context>& ctx, cl::ProgramCache& cache,
    const std::vector<Trial>& trials, int runs, uint64_t seed, double step_us,
    const Prebuilt& prebuilt, BuildPhases& phases, std::vector<std::string>* why,
    const GiveUp& give_up, std::optional<TrialPlan> lowered, bool with_reference) {
  Retry retry{ctx, cache, runs, seed, step_us, prebuilt, phases, give_up, with_reference};
  return retry.Run(trials, why, std::move(lowered), true);
}

// Why got differs from the heuristic's ref beyond reordered sums, or "".
std::string Differs(const HostTensor& ref, const HostTensor& got) {
  if (ref.shape != got.shape || ref.dtype != got.dtype) return "a different shape or type";
  bool half = ref.dtype == DType::kFloat16;
  double err = 0, norm = 0;
  std::string nan = VisitDType(ref.dtype, [&](auto z) -> std::string {
    using E = decltype(z);
    const E* r = ref.data<E>();
    const E* g = got.data<E>();
    auto value = [half](E v) {
      if constexpr (std::is_same_v<E, uint16_t>)
        if (half) return static_cast<double>(HalfToFloat(v));
      return static_cast<double>(v);
    };
    for (int64_t i = 0; i < ref.size(); ++i) {
      double a = value(r[i]), b = value(g[i]);
      if (std::isnan(a) != std::isnan(b)) return fmt::format("NaN at element {}", i);
      if (std::isnan(a)) continue;
      if (std::isinf(a) || std::isinf(b)) {  // their difference would make the error NaN
        if (a != b) return fmt::format("an infinity at element {} differs", i);
        continue;
      }
      err += (a - b) * (a - b);
      norm += a * a;
    }
    return "";
  });
  if (!nan.empty()) return nan;
  double rel = std::sqrt(err / std::max(norm, 1e-30));
  return !(rel <= 1e-4) ? fmt::format("relative L2 error {:.2g} against the heuristic's", rel) : "";
}

}  // namespace texel::tuning
