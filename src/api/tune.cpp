#include "api/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <type_traits>

#include "api/trial_builds.h"
#include "backends/lower.h"
#include "backends/native/native_backend.h"
#include "codegen/opencl/tuning.h"
#include "core/error.h"
#include "core/random_tensor.h"
#include "runtime/session.h"
#include "runtime/tuning_db.h"

namespace texel {
namespace {

using Clock = std::chrono::steady_clock;
using codegen::TunePoint;
using tuning::BuildPhases;
using tuning::CompileInParallel;
using tuning::Differs;
using tuning::LowerTrials;
using tuning::Measured;
using tuning::Prebuilt;
using tuning::RunEach;
using tuning::StepCostUs;
using tuning::Trial;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Points that differ in exactly one parameter.
bool Neighbours(const TunePoint& a, const TunePoint& b) {
  int differ = 0;
  for (const auto& [k, v] : a) differ += b.count(k) == 0 || b.at(k) != v;
  return differ == 1;
}

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

// The points chosen so far, by family and signature; other kernels take the heuristic's.
class ChosenPoints : public codegen::TuningSource {
 public:
  void Set(const codegen::Tunable& t, const TunePoint& p) {
    points_[t.family + "/" + t.signature] = p;
  }
  std::optional<TunePoint> Pick(const codegen::Tunable& t) const override {
    auto it = points_.find(t.family + "/" + t.signature);
    if (it == points_.end()) return std::nullopt;
    return it->second;
  }
  bool empty() const { return points_.empty(); }

 private:
  std::map<std::string, TunePoint> points_;
};

// The whole model lowered with a source's points, ready to run on seeded random inputs.
struct ModelRun {
  std::unique_ptr<runtime::Executable> exe;
  std::unique_ptr<runtime::Session> session;
  double build_s = 0;  // lowering, building and a first run (drivers that compile at first launch)
};

ModelRun PrepareModel(const std::shared_ptr<cl::Context>& ctx, cl::ProgramCache& cache,
                      const ir::Graph& g, const codegen::TuningSource& source, uint64_t seed) {
  auto t0 = Clock::now();
  ModelRun m;
  m.exe = std::make_unique<runtime::Executable>(ctx, backends::LowerToPlan(g, ctx->info(), &source),
                                                &cache);
  m.session = std::make_unique<runtime::Session>(*m.exe);
  std::mt19937_64 rng(seed);
  for (const auto& in : m.exe->plan().inputs)
    m.session->SetInput(in.name, RandomTensor(in.dtype, in.shape, rng));
  m.session->Execute();
  m.build_s = Since(t0);
  return m;
}

// The median wall-clock milliseconds of each model's runs, one run of each in turn: at least 10
// each, more while within `seconds`, at most 100. The kernels' own times, measured alone, miss
// what a model adds: a split product's sum kernel is free where a LayerNorm sums the slices, a
// launch costs less where the device is the bottleneck (Swin-T's points chosen alone ran 3.3-3.9%
// slower in the model than the heuristic's on an H100).
std::vector<double> TimeInTurn(const std::vector<ModelRun*>& models, double seconds) {
  std::vector<runtime::Session*> sessions;
  for (ModelRun* m : models) sessions.push_back(m->session.get());
  // Two warm-up runs of each, then a timed one that sizes the rest.
  double round_ms = 0;
  for (const auto& ms : runtime::TimeExecutions(sessions, 2, 1)) round_ms += ms[0];
  int repeat = static_cast<int>(std::clamp(seconds * 1e3 / std::max(round_ms, 1e-3), 10.0, 100.0));
  std::vector<double> medians;
  for (const auto& ms : runtime::TimeExecutions(sessions, 0, repeat))
    medians.push_back(ms[ms.size() / 2]);
  return medians;
}

// One tune, in phases that TuneModel runs in order: the model's distinct tunable kernels, the
// heuristic's model for the check at the end, every kernel's heuristic point timed, each
// kernel's search within its share of the budget, and the chosen points checked in the model.
class Tuner {
 public:
  Tuner(const std::shared_ptr<cl::Context>& ctx, const TuneOptions& options,
        const std::function<void(const TuneProgress&)>& progress,
        const std::function<void(const std::string&)>& log, TuneResult& result)
      : ctx_(ctx),
        dev_(ctx->info()),
        options_(options),
        progress_(progress),
        log_(log),
        result_(result),
        cache_(cl::ProgramCache::Default()) {}  // this tune's builds, no global state

  void Collect(const ir::Graph& graph);
  void PrepareModelCheck(const ir::Graph& graph);
  void TimeHeuristics();
  void Search();
  void CheckInModel(const ir::Graph& graph);
  void Finish();

 private:
  struct Work {
    const ir::Node* node;
    codegen::Tunable tunable;
    TunedKernel k;
    bool ok = false;
    TunePoint best;             // the point chosen (the heuristic's until beaten)
    bool product_only = false;  // Trial::product_only
  };
  static constexpr size_t kPerBuild = 8;  // kernels per build

  double Left() const { return options_.budget_seconds - reserve_ - Since(t0_); }
  void Say(const std::string& line) const {
    if (log_) log_(line);
  }
  void Report(size_t i) const {
    if (progress_)
      progress_({static_cast<int>(i), static_cast<int>(work_.size()), &work_[i].k,
                 std::max(0.0, Left())});
  }
  std::vector<std::optional<Measured>> Run(const std::vector<Trial>& trials, uint64_t seed,
                                           std::vector<std::string>* why) {
    return RunEach(ctx_, cache_, trials, options_.runs, seed, step_us_, {}, phases_, why);
  }
  // Builds compiled at once: TuneOptions::jobs.
  size_t WaveSize() const;
  // The builds' trials measured one build after another, their programs compiled first in
  // parallel where a wave has more than one (per build: RunEach's results and reasons); the
  // wave's times go to Timed.
  struct Measurements {
    std::vector<std::optional<Measured>> measured;
    std::vector<std::string> why;
  };
  std::vector<Measurements> RunWave(const std::vector<std::vector<Trial>>& builds, uint64_t seed);
  // Work i's search until `end`; returns the best point's time relative to the heuristic's.
  double SearchKernel(size_t i, Clock::time_point end, std::mt19937_64& rng, TunePoint* best);
  // The best point timed again beside the heuristic's, interleaved: its ratio there.
  double Confirm(Work& w, const TunePoint& best);
  // Gives the chosen kernels that `which` names the heuristic's point, in the result and in the
  // database.
  void Revert(const std::function<bool(const Work&)>& which);

  const Clock::time_point t0_ = Clock::now();
  const std::shared_ptr<cl::Context>& ctx_;
  const cl::DeviceInfo& dev_;
  const TuneOptions& options_;
  const std::function<void(const TuneProgress&)>& progress_;
  const std::function<void(const std::string&)>& log_;
  TuneResult& result_;
  cl::ProgramCache cache_;
  std::vector<Work> work_;
  double step_us_ = 0;
  BuildPhases phases_;  // every build's time, by phase
  // Contexts on the device for the compiling threads of a wave ([0] is ctx_), made as needed.
  std::vector<std::shared_ptr<cl::Context>> compilers_;
  double reserve_ = 0;  // seconds kept for the model check at the end
  // The last wave's times: its programs' parallel compilation (0 for a wave of one build, which
  // compiles as it runs) and each build's run after it. A wave of n builds is predicted to take
  // wave_compile_ + n * build_run_, and a build alone (the confirmation) last_build_.
  double wave_compile_ = 0, build_run_ = 0, last_build_ = 0;
  void Timed(double compile_s, double wave_s, size_t builds);
  // Builds that fit `seconds` in one wave (at most WaveSize(); a first wave: `first`).
  size_t BuildsThatFit(double seconds, size_t first) const;
  ChosenPoints heuristic_points_;
  std::optional<ModelRun> heuristic_model_;
};

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

// On GPUs the chosen points are checked in the whole model at the end, against the heuristic's:
// that model is built now, and the check's share of the budget set aside, where it fits a third
// of the budget. CPU drivers such as PoCL compile each kernel at its first launch, so there a
// model build costs tens of seconds; and with kernels run one after another on the same cores (a
// 2-4 us step) the times measured alone hold in the model.
void Tuner::PrepareModelCheck(const ir::Graph& graph) {
  using Check = TuneOptions::ModelCheck;
  if (work_.empty() ||
      !(options_.model_check == Check::kOn ||
        (options_.model_check == Check::kAuto && dev_.kind == cl::DeviceKind::kGpu)))
    return;
  try {
    heuristic_model_ = PrepareModel(ctx_, cache_, graph, heuristic_points_, options_.seed);
    // The chosen points' build can take longer than the heuristic's (Swin-T on an H100: the
    // check took 10.5 s where the heuristic's model had been ready in under 8.5 s).
    reserve_ = 2 * heuristic_model_->build_s + 1.5;
    if (options_.model_check == Check::kAuto && reserve_ > options_.budget_seconds / 3) {
      Say(fmt::format(
          "the model check would take about {:.0f} s of the {:.0f} s budget: not run (points are "
          "judged by their kernels alone)",
          reserve_ + heuristic_model_->build_s, options_.budget_seconds));
      heuristic_model_.reset();
      reserve_ = 0;
    }
  } catch (const Error& e) {
    Say(fmt::format(
        "the model does not run on random inputs, so the points are not checked in it: {}",
        e.what()));
    heuristic_model_.reset();
  }
}

void Tuner::Timed(double compile_s, double wave_s, size_t builds) {
  wave_compile_ = compile_s;
  build_run_ = (wave_s - compile_s) / static_cast<double>(std::max<size_t>(builds, 1));
  // A build alone compiles its own program: a wave's compilation is about one build's.
  last_build_ = compile_s + build_run_;
}

size_t Tuner::BuildsThatFit(double seconds, size_t first) const {
  if (last_build_ <= 0) return std::clamp<size_t>(first, 1, WaveSize());
  if (wave_compile_ <= 0)  // builds compiled as they run
    return std::clamp<size_t>(static_cast<size_t>(seconds / last_build_), 1, WaveSize());
  double n = (seconds - wave_compile_) / std::max(build_run_, 1e-3);
  return std::clamp<size_t>(n > 0 ? static_cast<size_t>(n) : 1, 1, WaveSize());
}

size_t Tuner::WaveSize() const {
  if (options_.jobs > 0) return static_cast<size_t>(options_.jobs);
  if (dev_.kind != cl::DeviceKind::kGpu) return 1;  // CPU drivers compile on the tune's cores
  return std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, 8);
}

std::vector<Tuner::Measurements> Tuner::RunWave(const std::vector<std::vector<Trial>>& builds,
                                                uint64_t seed) {
  auto start = Clock::now();
  double compile_s = 0;  // a wave of one build compiles as it runs
  Prebuilt prebuilt;
  if (builds.size() > 1) {
    std::vector<runtime::Plan> plans;
    for (const std::vector<Trial>& trials : builds) {
      try {
        plans.push_back(LowerTrials(dev_, trials).plan);
      } catch (const Error&) {  // the build says why as it runs
      }
    }
    if (compilers_.empty()) compilers_.push_back(ctx_);
    while (compilers_.size() < std::min(WaveSize(), plans.size())) {
      try {
        compilers_.push_back(std::make_shared<cl::Context>(dev_));
      } catch (const Error&) {
        break;  // fewer threads
      }
    }
    std::vector<const runtime::Plan*> pointers;
    for (const runtime::Plan& p : plans) pointers.push_back(&p);
    prebuilt = CompileInParallel(compilers_, cache_, pointers);
    phases_.prebuilt += static_cast<int>(prebuilt.size());
    phases_.program += compile_s = Since(start);
  }
  std::vector<Measurements> out(builds.size());
  for (size_t b = 0; b < builds.size(); ++b)
    out[b].measured = RunEach(ctx_, cache_, builds[b], options_.runs, seed, step_us_, prebuilt,
                              phases_, &out[b].why);
  Timed(compile_s, Since(start), builds.size());
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
    std::vector<Measurements> results = RunWave(wave, options_.seed);
    for (size_t b = 0; b < wave.size(); ++b)
      for (size_t j = 0; j < wave[b].size(); ++j) {
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

// The slowest kernels first, each with a share of what is left in proportion to its time.
void Tuner::Search() {
  // A kernel keeps a point that beats the heuristic's by 5%, or by 2% where the model check will
  // judge the points together (small gains add up over a model's kernels; a kernel's noise is
  // the check's to catch).
  const double keep_below = heuristic_model_ ? 0.98 : 0.95;
  std::vector<size_t> order;
  double total_us = 0;
  for (size_t i = 0; i < work_.size(); ++i)
    if (work_[i].ok) order.push_back(i), total_us += work_[i].k.heuristic_us;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return work_[a].k.heuristic_us > work_[b].k.heuristic_us;
  });
  std::mt19937_64 rng(options_.seed);
  double share_left = total_us;
  for (size_t i : order) {
    Work& w = work_[i];
    double slice = Left() * w.k.heuristic_us / std::max(share_left, 1e-9);
    share_left -= w.k.heuristic_us;
    auto end = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(slice));
    TunePoint best = w.tunable.candidates[0];
    double best_ratio = SearchKernel(i, end, rng, &best);
    // The fastest of many noisy measurements is flattered by the noise (ResNet-18's points so
    // chosen on a busy 2-core machine ran 1.3x slower in the model than the heuristic's): the
    // winner is timed again beside the heuristic's kernel, interleaved, in a build of its own,
    // and kept only if it is still faster there.
    if (best_ratio <= keep_below && Left() > last_build_) best_ratio = Confirm(w, best);
    if (best_ratio > keep_below) {  // within noise and context: keep the heuristic's
      best = w.tunable.candidates[0];
      w.k.best = w.k.heuristic;
      w.k.tuned_us = w.k.heuristic_us;
    }
    w.best = best;
    // As it goes: an interrupted tune keeps it.
    runtime::TuningDb::Store(result_.db, {EntryOf(dev_, w.tunable, best, w.k)});
  }
  // The compiling threads' contexts hold device memory (a CUDA context each on NVIDIA's).
  compilers_.resize(std::min<size_t>(compilers_.size(), 1));
}

double Tuner::SearchKernel(size_t i, Clock::time_point end, std::mt19937_64& rng, TunePoint* best) {
  Work& w = work_[i];
  const codegen::Tunable& t = w.tunable;
  auto half = Clock::now() + (end - Clock::now()) / 2;
  // Every candidate when few, else random ones for half the slice and then the best one's
  // neighbours.
  std::vector<size_t> rest(t.candidates.size() - 1);
  for (size_t c = 0; c < rest.size(); ++c) rest[c] = c + 1;
  bool small = rest.size() <= 24;
  if (!small) std::shuffle(rest.begin(), rest.end(), rng);
  std::vector<bool> tried(t.candidates.size(), false);
  tried[0] = true;
  auto next = [&]() -> std::optional<size_t> {
    if (!small && Clock::now() >= half)
      for (size_t c = 1; c < t.candidates.size(); ++c)
        if (!tried[c] && Neighbours(t.candidates[c], *best)) return c;
    for (size_t c : rest)
      if (!tried[c]) return c;
    return std::nullopt;
  };
  // Each build runs the heuristic's kernel beside its candidates, which are judged by their time
  // relative to it in the same runs: a busy machine slows both alike. The builds go in waves
  // whose programs compile in parallel (WaveSize), as many as the slice has time for.
  double best_ratio = 1;
  // A wave is not started that the last builds' durations say would overrun the budget (with
  // one more build for the confirmation).
  while (Clock::now() < end && Left() > 2 * last_build_) {
    // What the slice has left, and the budget less a build alone for the confirmation.
    double to_end = std::chrono::duration<double>(end - Clock::now()).count();
    size_t room = BuildsThatFit(std::min(to_end, Left() - last_build_), WaveSize());
    std::vector<std::vector<Trial>> wave;
    while (wave.size() < room) {
      std::vector<Trial> trials = {{w.node, &t, t.candidates[0], w.product_only}};
      for (size_t n = 1; n < kPerBuild; ++n) {
        std::optional<size_t> c = next();
        if (!c) break;
        tried[*c] = true;
        trials.push_back({w.node, &t, t.candidates[*c], w.product_only});
      }
      if (trials.size() == 1) break;
      wave.push_back(std::move(trials));
    }
    if (wave.empty()) break;
    std::vector<Measurements> results = RunWave(wave, options_.seed);
    bool failing = false;
    for (size_t b = 0; b < wave.size(); ++b) {
      const std::vector<Trial>& trials = wave[b];
      auto& measured = results[b].measured;
      auto& why = results[b].why;
      if (!measured[0]) {  // the heuristic's kernel ran before: the device is failing
        failing = true;
        continue;
      }
      for (size_t j = 1; j < trials.size(); ++j) {
        ++w.k.tried;
        std::string p = codegen::PointString(trials[j].point);
        if (measured[j]) why[j] = Differs(measured[0]->out, measured[j]->out);
        if (!why[j].empty()) {
          ++w.k.discarded;
          Say(fmt::format("{} {} {}: discarded: {}", t.family, t.signature, p, why[j]));
          continue;
        }
        double ratio = measured[j]->us / std::max(measured[0]->us, 1e-9);
        if (options_.log_candidates)
          Say(fmt::format("{} {} {}: {:.1f} us (heuristic {:.1f} us)", t.family, t.signature, p,
                          measured[j]->us, measured[0]->us));
        if (ratio < best_ratio) {
          best_ratio = ratio;
          *best = trials[j].point;
          w.k.best = p;
          w.k.heuristic_us = measured[0]->us;
          w.k.tuned_us = measured[j]->us;
        }
      }
    }
    Report(i);
    if (failing) break;
  }
  return best_ratio;
}

double Tuner::Confirm(Work& w, const TunePoint& best) {
  std::vector<Trial> again;
  for (int r = 0; r < 2; ++r) {
    again.push_back({w.node, &w.tunable, w.tunable.candidates[0], w.product_only});
    again.push_back({w.node, &w.tunable, best, w.product_only});
  }
  std::vector<std::string> why;
  auto measured = Run(again, options_.seed + 1, &why);
  double h = 0, b = 0;
  for (size_t j = 0; j < again.size(); ++j)
    if (measured[j]) (j % 2 ? b : h) += measured[j]->us;
  if (h <= 0 || b <= 0) return 1;
  w.k.heuristic_us = h / 2;
  w.k.tuned_us = b / 2;
  return b / h;
}

void Tuner::Revert(const std::function<bool(const Work&)>& which) {
  std::vector<runtime::TuningEntry> entries;
  for (Work& w : work_) {
    if (!w.ok || w.k.best == w.k.heuristic || !which(w)) continue;
    w.best = w.tunable.candidates[0];
    w.k.best = w.k.heuristic;
    w.k.tuned_us = w.k.heuristic_us;
    entries.push_back(EntryOf(dev_, w.tunable, w.best, w.k));
  }
  if (!entries.empty()) runtime::TuningDb::Store(result_.db, entries);
}

// The chosen points in the model, run in turn with the heuristic's: kept if faster by more than
// noise (0.5%), else their entries get the heuristic's point, so that no compile takes them,
// nor a neighbour's nearest shape.
void Tuner::CheckInModel(const ir::Graph& graph) {
  if (!heuristic_model_) return;
  ChosenPoints chosen;
  for (Work& w : work_)
    if (w.ok && w.k.best != w.k.heuristic) chosen.Set(w.tunable, w.best);
  if (chosen.empty()) {
    Say("the model check has nothing to compare: every kernel keeps the heuristic's point");
    return;
  }
  try {
    auto c0 = Clock::now();
    ModelRun tuned = PrepareModel(ctx_, cache_, graph, chosen, options_.seed);
    std::vector<double> ms = TimeInTurn({&*heuristic_model_, &tuned}, 1.0);
    bool keep = ms[1] < ms[0] * 0.995;
    Say(fmt::format(
        "the model with the heuristic's points: {:.3f} ms, with the chosen ones: {:.3f} ms; {} "
        "(built in {:.1f} s, checked in {:.1f} s)",
        ms[0], ms[1], keep ? "kept" : "the heuristic's kept", heuristic_model_->build_s,
        Since(c0)));
    result_.model_heuristic_ms = ms[0];
    result_.model_tuned_ms = keep ? ms[1] : ms[0];
    result_.model_kept = keep ? "the chosen points" : "the heuristic's points";
    if (!keep) Revert([](const Work&) { return true; });
  } catch (const Error& e) {
    // The points kept for the check's sake (2% faster alone) go back to the heuristic's.
    Say(fmt::format("the model check failed, so only points 5% faster alone are kept: {}",
                    e.what()));
    Revert([](const Work& w) { return w.k.tuned_us > 0.95 * w.k.heuristic_us; });
  }
}

void Tuner::Finish() {
  const BuildPhases& p = phases_;
  Say(fmt::format(
      "{} builds of candidates ({} compiled in parallel waves) took {:.1f} s: lowering {:.1f}, "
      "programs {:.1f}, inputs {:.1f}, runs {:.1f}, outputs {:.1f}",
      p.builds, p.prebuilt, p.lower + p.program + p.inputs + p.runs + p.outputs, p.lower, p.program,
      p.inputs, p.runs, p.outputs));
  for (Work& w : work_) {
    if (w.ok)
      result_.kernels.push_back(w.k);
    else
      ++result_.skipped;
  }
  result_.seconds = Since(t0_);
}

}  // namespace

TuneResult TuneModel(const std::string& model_path, const std::shared_ptr<cl::Context>& ctx,
                     const TuneOptions& options,
                     const std::function<void(const TuneProgress&)>& progress,
                     const std::function<void(const std::string&)>& log) {
  if (options.jobs < 0 || options.jobs > 64)
    Fail(ErrorCode::kInvalidArgument, "tune: jobs must be 0 (automatic) to 64, not {}",
         options.jobs);
  TuneResult result;
  result.db = options.db.empty() ? runtime::TuningDb::DefaultPath(ctx->info()) : options.db;
  if (result.db.empty())
    Fail(ErrorCode::kInvalidArgument,
         "no tuning database: caching is off (TEXEL_CACHE_DIR) and no --db FILE was given");
  Tuner tuner(ctx, options, progress, log, result);
  CompileOptions copts = options.compile;
  copts.tuning = false;
  std::unique_ptr<ir::Graph> graph = ImportAndOptimizeFor(model_path, ctx, copts);
  tuner.Collect(*graph);
  tuner.PrepareModelCheck(*graph);
  tuner.TimeHeuristics();
  tuner.Search();
  tuner.CheckInModel(*graph);
  tuner.Finish();
  return result;
}

}  // namespace texel
