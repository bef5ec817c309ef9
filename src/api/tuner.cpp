// The tuner's kernels, their heuristics timed, and its waves of builds (api/tuner.h).
#include "api/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <thread>

#include "backends/native/native_backend.h"

namespace texel::tuning {

// The database entry of tunable t at point p with k's times.
runtime::TuningEntry EntryOf(const cl::DeviceInfo& dev, const codegen::Tunable& t,
                             const TunePoint& p, const TunedKernel& k) {
  runtime::TuningEntry entry;
  entry.key = runtime::TuningKey::For(dev, t.family, t.version, t.signature);
  entry.params = std::map<std::string, int64_t>(p.begin(), p.end());
  entry.heuristic_us = k.heuristic_us;
  entry.tuned_us = k.tuned_us;
  return entry;
}

void Tuner::Collect(const ir::Graph& graph) {
  codegen::Target target = backends::NativeBackend::TargetOf(dev_);
  std::map<std::string, size_t> seen;  // family/signature -> its index in work_
  std::set<int> norm_groups;  // fusion groups in which a LayerNorm reads a product's slices
  for (const auto& node : graph.nodes())
    if (node->op == ir::OpKind::kLayerNorm && node->group >= 0) norm_groups.insert(node->group);
  for (const auto& node : graph.nodes()) {
    if (backends::BackendOf(*node) != backends::kNative) continue;
    std::optional<codegen::Tunable> t;
    try {
      t = codegen::TunableOf(*node, target);
    } catch (const Error&) {
      continue;  // a node the generators refuse is the compile's to report
    }
    if (!t) continue;
    // One point serves every node of the signature: timed by the product alone only if every
    // such product's slices are summed by a LayerNorm.
    bool product_only = node->op == ir::OpKind::kMatMul && norm_groups.count(node->group) > 0;
    auto [it, first] = seen.emplace(t->family + "/" + t->signature, work_.size());
    if (!first) {
      work_[it->second].product_only &= product_only;
      continue;
    }
    Work w{node.get(), *t, {}, {}, t->candidates[0]};
    w.product_only = product_only;
    w.k.family = t->family;
    w.k.signature = t->signature;
    w.k.heuristic = w.k.best = codegen::PointString(t->candidates[0]);
    w.k.candidates = static_cast<int>(t->candidates.size());
    work_.push_back(std::move(w));
  }
  step_us_ = StepCostUs(ctx_);
  Say(fmt::format("each kernel counted with {:.1f} us of launch beside its own time", step_us_));
}

void Tuner::Timed(double compile_s, double wave_s, size_t builds, size_t kernels) {
  last_kernels_ = kernels;
  wave_compile_ = compile_s;
  build_run_ = (wave_s - compile_s) / static_cast<double>(std::max<size_t>(builds, 1));
  // A build alone compiles its own program: a wave's compilation is about one build's.
  last_build_ = compile_s + build_run_;
}

size_t Tuner::BuildsThatFit(double seconds, size_t first, double compile_scale) const {
  if (last_build_ <= 0) return std::clamp<size_t>(first, 1, WaveSize());
  if (wave_compile_ <= 0)  // builds compiled as they run
    return std::clamp<size_t>(static_cast<size_t>(seconds / (last_build_ * compile_scale)), 1,
                              WaveSize());
  double n = (seconds - wave_compile_ * compile_scale) / std::max(build_run_, 1e-3);
  return std::clamp<size_t>(n > 0 ? static_cast<size_t>(n) : 1, 1, WaveSize());
}

double Tuner::WaveTime(size_t n, double compile_scale) const {
  double builds = static_cast<double>(n);
  if (wave_compile_ <= 0) return builds * last_build_ * compile_scale;  // compiled as they run
  return wave_compile_ * compile_scale + builds * build_run_;
}

size_t Tuner::WaveSize() const {
  if (options_.jobs > 0) return static_cast<size_t>(options_.jobs);
  if (dev_.kind != cl::DeviceKind::kGpu) return 1;  // CPU drivers compile on the tune's cores
  // Every core but the tune's own: NVIDIA's driver compiles a program on one core, and its
  // worker processes scale (H200 host of 16: 0.35-0.37 s a build at batch 1 with 15 against
  // 0.44-0.48 with 8). At most 16, each a context holding device memory.
  return std::clamp<size_t>(std::max(std::thread::hardware_concurrency(), 1u) - 1, 1, 16);
}

Prebuilt Tuner::Compile(const std::vector<const runtime::Plan*>& plans, const GiveUp& stop) {
  if (!worker_.empty()) {
    try {
      Prebuilt out = CompileInWorkers(worker_, dev_, WaveSize(), cache_, plans, stop);
      phases_.by_workers += static_cast<int>(out.size());
      return out;
    } catch (const Error& e) {
      if (Stopped()) return {};  // the workers took the interrupt too (one process group)
      Say(fmt::format("compiling on threads instead of worker processes: {}", e.what()));
      worker_.clear();
    }
  }
  if (Stopped()) return {};
  if (compilers_.empty()) compilers_.push_back(ctx_);
  while (compilers_.size() < std::min(WaveSize(), plans.size())) {
    try {
      compilers_.push_back(std::make_shared<cl::Context>(dev_));
    } catch (const Error&) {
      break;  // fewer threads
    }
  }
  return CompileInParallel(compilers_, cache_, plans, stop);
}

std::vector<Tuner::Measurements> Tuner::RunWave(const std::vector<std::vector<Trial>>& builds,
                                                uint64_t seed, bool with_reference) {
  auto start = Clock::now();
  // The wave ends with the budget: its worker processes are killed (threads start no further
  // program) and builds not started are not run, so that a wave longer than the last one's
  // times predicted overruns by at most the build or thread's program in flight. Before, its
  // unfinished programs compiled one by one as its builds ran: SqueezeNet on PoCL, `--budget 3
  // --jobs 4`, took 16.2 s (EfficientNet-B0 at batch 32 on an H200, 43.2 s of 40, presumably
  // the same: that tune's log was not kept).
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::max(0.0, Left())));
  auto give_up = [&] { return Stopped() || Clock::now() >= deadline; };
  double compile_s = 0;  // a wave of one build compiles as it runs
  Prebuilt prebuilt;
  // Each build lowered once, for its program's compilation and its run.
  std::vector<std::optional<TrialPlan>> lowered(builds.size());
  if (builds.size() > 1 && !give_up()) {
    std::vector<const runtime::Plan*> plans;
    for (size_t b = 0; b < builds.size(); ++b) {
      try {
        lowered[b] = LowerTrials(dev_, builds[b]);
        plans.push_back(&lowered[b]->plan);
      } catch (const Error&) {  // the build says why as it runs
      }
    }
    auto lowered_at = Clock::now();
    phases_.lower += Since(start);
    prebuilt = Compile(plans, give_up);
    phases_.prebuilt += static_cast<int>(prebuilt.size());
    phases_.program += Since(lowered_at);
    compile_s = Since(start);
  }
  std::vector<Measurements> out(builds.size());
  size_t run = 0;
  for (size_t b = 0; b < builds.size(); ++b) {
    if (give_up()) {  // the rest of the wave is not run: nothing measured, nothing to judge
      out[b].measured.resize(builds[b].size());
      out[b].why.assign(builds[b].size(), Stopped() ? "interrupted" : "the budget was spent");
      out[b].run = false;
      continue;
    }
    ++run;
    // A failed build's trials are built apart while the budget lasts and the tune runs.
    out[b].measured = RunEach(ctx_, cache_, builds[b], options_.runs, seed, step_us_, prebuilt,
                              phases_, &out[b].why, give_up, std::move(lowered[b]), with_reference);
  }
  if (run < builds.size() && !Stopped())
    Say(fmt::format("the budget ended a wave of {} builds after {:.1f} s: {} not run",
                    builds.size(), Since(start), builds.size() - run));
  // A wave the budget cut short says nothing about the next one's times.
  if (run == 0) return out;
  size_t kernels = 0;
  for (const std::vector<Trial>& b : builds) kernels = std::max(kernels, b.size());
  Timed(compile_s, Since(start), run, kernels);
  return out;
}

// Every kernel's heuristic point first, a few kernels per build: the times that share out the
// rest of the budget.
void Tuner::TimeHeuristics() {
  for (size_t i = 0; i < work_.size() && Left() > 0;) {
    // As many builds as the last wave's time per build says fit what is left (the first wave:
    // two, which says it): a wave of DenseNet-121's eight at batch 32 overran a 40 s budget.
    size_t size = BuildsThatFit(Left(), 2);
    std::vector<std::vector<Trial>> wave;
    std::vector<size_t> first;  // work index of each build's first trial
    for (; i < work_.size() && wave.size() < size; i += kPerBuild) {
      first.push_back(i);
      wave.emplace_back();
      for (size_t j = i; j < std::min(work_.size(), i + kPerBuild); ++j)
        wave.back().push_back({work_[j].node, &work_[j].tunable, work_[j].tunable.candidates[0],
                               work_[j].product_only});
    }
    // Unrelated kernels: a failed build's halves apart, none the others' reference.
    std::vector<Measurements> results = RunWave(wave, options_.seed, false);
    for (size_t b = 0; b < wave.size(); ++b)
      for (size_t j = 0; j < wave[b].size() && results[b].run; ++j) {
        Work& w = work_[first[b] + j];
        w.k.tried = 1;
        if (!results[b].measured[j]) {
          Say(fmt::format("{} {}: the heuristic's kernel failed, not tuned: {}", w.k.family,
                          w.k.signature, results[b].why[j]));
          continue;
        }
        w.ok = true;
        w.k.heuristic_us = w.k.tuned_us = results[b].measured[j]->us;
        Report(first[b] + j);
      }
  }
}

void Tuner::Finish() {
  const BuildPhases& p = phases_;
  Say(fmt::format(
      "{} builds of candidates ({} compiled in parallel waves, {} of them in worker processes) "
      "took {:.1f} s: lowering {:.1f}, programs {:.1f}, inputs {:.1f}, runs {:.1f}, outputs "
      "{:.1f}",
      p.builds, p.prebuilt, p.by_workers, p.lower + p.program + p.inputs + p.runs + p.outputs,
      p.lower, p.program, p.inputs, p.runs, p.outputs));
  for (Work& w : work_) {
    if (w.ok)
      result_.kernels.push_back(w.k);
    else
      ++result_.skipped;
  }
  result_.seconds = Since(t0_);
  result_.interrupted = Stopped();
}

}  // namespace texel::tuning
