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
#include "runtime/cl/compile_workers.h"
#include "runtime/session.h"
#include "runtime/tuning_db.h"

namespace texel {
namespace {

using Clock = std::chrono::steady_clock;
using codegen::TunePoint;
using tuning::BuildPhases;
using tuning::CompileInParallel;
using tuning::CompileInWorkers;
using tuning::Differs;
using tuning::LowerTrials;
using tuning::Measured;
using tuning::Prebuilt;
using tuning::RunEach;
using tuning::StepCostUs;
using tuning::Trial;
using tuning::TrialPlan;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A kernel keeps a point that beats the heuristic's by 5% alone, or by 2% where the model check
// will judge the points together (small gains add up over a model's kernels; a kernel's noise is
// the check's to catch). Without a check after all (interrupted, or failed) the 2% ones revert.
// The database holds a 2% point only once the check has kept it, so that no interrupt or
// failure between the search's store and the check leaves an unchecked one there.
constexpr double kKeepAlone = 0.95, kKeepChecked = 0.98;

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
                      runtime::Plan plan, uint64_t seed,
                      const std::vector<uint8_t>* binary = nullptr) {
  auto t0 = Clock::now();
  ModelRun m;
  m.exe = std::make_unique<runtime::Executable>(ctx, std::move(plan), &cache, binary);
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
        cache_(cl::ProgramCache::Default()),
        worker_(options.compile_worker) {}  // this tune's builds, no global state

  void Collect(const ir::Graph& graph);
  void PrepareModelCheck(const ir::Graph& graph);
  void TimeHeuristics();
  // The heuristic's model, where a worker compiled it during TimeHeuristics, built from its binary.
  void ReadyModelCheck();
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

  bool Stopped() const { return options_.stop != nullptr && options_.stop->load(); }
  double Left() const { return Stopped() ? -1 : options_.budget_seconds - reserve_ - Since(t0_); }
  void Say(const std::string& line) const {
    if (log_) log_(line);
  }
  void Report(size_t i) const {
    if (progress_)
      progress_({static_cast<int>(i), static_cast<int>(work_.size()), &work_[i].k,
                 std::max(0.0, Left())});
  }
  // Builds compiled at once: TuneOptions::jobs.
  size_t WaveSize() const;
  // The builds' trials measured one build after another, their programs compiled first in
  // parallel where a wave has more than one (per build: RunEach's results and reasons); the
  // wave's times go to Timed.
  struct Measurements {
    std::vector<std::optional<Measured>> measured;
    std::vector<std::string> why;
    bool run = true;  // false: the tune was interrupted before this build
  };
  // with_reference: each build's trials[0] is the reference of the rest (RunEach).
  std::vector<Measurements> RunWave(const std::vector<std::vector<Trial>>& builds, uint64_t seed,
                                    bool with_reference = true);
  // A wave's programs compiled at once: in worker processes where there is a worker
  // (TuneOptions::compile_worker), else on threads.
  Prebuilt Compile(const std::vector<const runtime::Plan*>& plans);
  // A kernel's search: its candidates' order (every one where few, else random ones for half
  // its share of the time and then the best one's neighbours), what it has tried, its best so
  // far and its share of the search's time.
  struct Hunt {
    Hunt(size_t work, const std::vector<TunePoint>& candidates, std::mt19937_64& rng);
    std::optional<size_t> Next(const std::vector<TunePoint>& candidates);  // marked tried
    size_t work;
    std::vector<size_t> order;
    std::vector<bool> tried;
    bool small = true;
    double share_s = 0, spent_s = 0;
    int builds = 0;
    bool stopped = false;  // every candidate tried, or its heuristic's kernel failed
    TunePoint best;
    double best_ratio = 1;  // the best point's time relative to the heuristic's
  };
  // Every searchable kernel's hunt, its share of the time left in proportion to its heuristic
  // time, the slowest first.
  std::vector<Hunt> StartHunts();
  // The next wave: rounds over the kernels (most share left first, none searched yet before
  // any), one build of up to kPerBuild - 1 candidates and the heuristic's each per round, at
  // most `room` builds; owner[b] is build b's hunt. Hunts out of candidates stop.
  std::vector<std::vector<Trial>> NextWave(std::vector<Hunt>& hunts, double per_build, size_t room,
                                           std::vector<Hunt*>* owner);
  // Every share spent with time left: what is left shared out among the hunts with candidates
  // left. False where none has.
  bool Reshare(std::vector<Hunt>& hunts);
  // Each searched kernel's entry: its best point where faster than keep_below, else the
  // heuristic's.
  void StoreChosen(std::vector<Hunt>& hunts, double keep_below);
  // A build's results: discarded candidates logged, the best kept.
  void Judge(Hunt& h, const std::vector<Trial>& trials, Measurements& m);
  // The winners timed again beside the heuristic's, interleaved: their ratios there.
  void Confirm(std::vector<Hunt>& hunts, double keep_below);
  // Gives the chosen kernels that `which` names the heuristic's point, in the result and in the
  // database.
  void Revert(const std::function<bool(const Work&)>& which);
  // A point chosen for the model check's sake: not 5% faster alone.
  static bool OnlyForTheCheck(const Work& w) {
    return w.k.best != w.k.heuristic && w.k.tuned_us > kKeepAlone * w.k.heuristic_us;
  }
  // w's entry with the heuristic's point and times.
  runtime::TuningEntry HeuristicEntry(const Work& w) const {
    TunedKernel k = w.k;
    k.best = k.heuristic;
    k.tuned_us = k.heuristic_us;
    return EntryOf(dev_, w.tunable, w.tunable.candidates[0], k);
  }

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
  std::string worker_;  // TuneOptions::compile_worker, "" once it failed to start
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
  // The heuristic's model being compiled by a worker (PrepareModelCheck to ReadyModelCheck).
  std::unique_ptr<cl::CompileJob> model_job_;
  std::optional<runtime::Plan> model_plan_;
  Clock::time_point model_t0_;
  // The check's model built (from a worker's binary, which took compile_s), and its share of
  // the budget kept, where it fits; NoModelCheck says why there is none.
  void BuildModelCheck(runtime::Plan plan, const std::vector<uint8_t>* binary, double compile_s);
  void NoModelCheck(const Error& e);
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
    runtime::Plan plan = backends::LowerToPlan(graph, dev_, &heuristic_points_);
    // Compiled in a worker while the heuristics' kernels are timed, where builds compile in
    // parallel (not on CPU devices by default: there the worker would take the cores measured
    // on). The heuristics are not held back for it: a kernel they leave untimed is not tuned.
    if (!worker_.empty() && WaveSize() > 1) {
      try {
        model_job_ = std::make_unique<cl::CompileJob>(
            worker_, dev_, std::vector<cl::ProgramSource>{{plan.source, plan.build_options}}, 1,
            cache_.dir());
        model_plan_ = std::move(plan);
        model_t0_ = Clock::now();
        return;
      } catch (const Error&) {  // built here
      }
    }
    BuildModelCheck(std::move(plan), nullptr, 0);
  } catch (const Error& e) {
    NoModelCheck(e);
  }
}

void Tuner::ReadyModelCheck() {
  if (!model_job_) return;
  std::unique_ptr<cl::CompileJob> job = std::move(model_job_);
  runtime::Plan plan = std::move(*model_plan_);
  model_plan_.reset();
  // Waited for while two thirds of the budget are not spent (a third is the check's at most).
  auto deadline = t0_ + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(options_.budget_seconds * 2 / 3));
  bool done = job->DoneBy(deadline, [this] { return Stopped(); });
  if (Stopped()) return;  // the job's destructor stops its worker
  if (!done) {
    Say(fmt::format(
        "the model check's model was not compiled within two thirds of the budget ({:.0f} s so "
        "far): not run (points are judged by their kernels alone)",
        Since(model_t0_)));
    return;  // the job's destructor stops its worker
  }
  // The worker's binary where it built one; otherwise (the program failed, or every worker) the
  // model is built here, where a build error says why.
  std::vector<uint8_t> binary;
  double compile_s = 0;
  try {
    cl::CompileJob::Compiled compiled = std::move(job->Wait()[0]);
    binary = std::move(compiled.binary);
    compile_s = compiled.seconds;
  } catch (const Error&) {  // every worker failed
  }
  try {
    BuildModelCheck(std::move(plan), binary.empty() ? nullptr : &binary, compile_s);
  } catch (const Error& e) {
    NoModelCheck(e);
  }
}

void Tuner::BuildModelCheck(runtime::Plan plan, const std::vector<uint8_t>* binary,
                            double compile_s) {
  if (Stopped()) return;  // no check for an interrupted tune
  heuristic_model_ = PrepareModel(ctx_, cache_, std::move(plan), options_.seed, binary);
  heuristic_model_->build_s += compile_s;
  // The chosen points' build can take longer than the heuristic's (Swin-T on an H100: the
  // check took 10.5 s where the heuristic's model had been ready in under 8.5 s); with twice
  // the heuristic's build kept, EfficientNet-B0's check at batch 1 did not fit a 30 s budget's
  // third, and its points chosen by their kernels alone ran 2.7% slower in the model (H200).
  reserve_ = 1.3 * heuristic_model_->build_s + 1.5;
  if (options_.model_check == TuneOptions::ModelCheck::kAuto &&
      (reserve_ > options_.budget_seconds / 3 || Left() <= 0)) {
    Say(fmt::format(
        "the model check would take about {:.0f} s of the {:.0f} s budget: not run (points are "
        "judged by their kernels alone)",
        reserve_, options_.budget_seconds));
    heuristic_model_.reset();
    reserve_ = 0;
  }
}

void Tuner::NoModelCheck(const Error& e) {
  Say(fmt::format(
      "the model does not run on random inputs, so the points are not checked in it: {}",
      e.what()));
  heuristic_model_.reset();
  reserve_ = 0;
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

Prebuilt Tuner::Compile(const std::vector<const runtime::Plan*>& plans) {
  if (!worker_.empty()) {
    try {
      Prebuilt out =
          CompileInWorkers(worker_, dev_, WaveSize(), cache_, plans, [this] { return Stopped(); });
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
  return CompileInParallel(compilers_, cache_, plans, [this] { return Stopped(); });
}

std::vector<Tuner::Measurements> Tuner::RunWave(const std::vector<std::vector<Trial>>& builds,
                                                uint64_t seed, bool with_reference) {
  auto start = Clock::now();
  double compile_s = 0;  // a wave of one build compiles as it runs
  Prebuilt prebuilt;
  // Each build lowered once, for its program's compilation and its run.
  std::vector<std::optional<TrialPlan>> lowered(builds.size());
  if (builds.size() > 1) {
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
    prebuilt = Compile(plans);
    phases_.prebuilt += static_cast<int>(prebuilt.size());
    phases_.program += Since(lowered_at);
    compile_s = Since(start);
  }
  std::vector<Measurements> out(builds.size());
  // A failed build's trials are built apart while the budget lasts and the tune runs.
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(std::max(0.0, Left())));
  auto give_up = [&] { return Stopped() || Clock::now() >= deadline; };
  for (size_t b = 0; b < builds.size(); ++b) {
    if (Stopped()) {  // the rest of the wave is not run: nothing measured, nothing to judge
      out[b].measured.resize(builds[b].size());
      out[b].why.assign(builds[b].size(), "interrupted");
      out[b].run = false;
      continue;
    }
    out[b].measured = RunEach(ctx_, cache_, builds[b], options_.runs, seed, step_us_, prebuilt,
                              phases_, &out[b].why, give_up, std::move(lowered[b]), with_reference);
  }
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

// Every kernel's search at once: each wave gives builds to the kernels with the most of their
// share of the time left (the slowest first while none has had one), so that a wave fills its
// compiling processes with several kernels' candidates where one kernel's share (ResNet-50 at
// batch 32: 22 kernels in 40 s) is shorter than a wave.
void Tuner::Search() {
  const double keep_below = heuristic_model_ ? kKeepChecked : kKeepAlone;
  std::vector<Hunt> hunts = StartHunts();
  // What a build costs a kernel's share: a build alone at first, then the last wave's time per
  // build.
  double per_build = last_build_ > 0 ? last_build_ : 1.0;
  bool reshared = false;
  // A wave is not started that the last builds' durations say would overrun the budget (with a
  // build's time kept for the confirmations).
  while (Left() > 2 * last_build_) {
    std::vector<Hunt*> owner;
    std::vector<std::vector<Trial>> wave =
        NextWave(hunts, per_build, BuildsThatFit(Left() - last_build_, WaveSize()), &owner);
    if (wave.empty()) {
      if (reshared || !Reshare(hunts)) break;
      reshared = true;  // once: a second empty wave means the spaces are done
      continue;
    }
    reshared = false;
    auto start = Clock::now();
    std::vector<Measurements> results = RunWave(wave, options_.seed);
    double cost = Since(start) / static_cast<double>(wave.size());
    for (size_t b = 0; b < wave.size(); ++b) {
      if (!results[b].run) continue;
      owner[b]->spent_s += cost - per_build;
      Judge(*owner[b], wave[b], results[b]);
      Report(owner[b]->work);
    }
    per_build = cost;
  }
  Confirm(hunts, keep_below);
  StoreChosen(hunts, keep_below);
  // The compiling threads' contexts hold device memory (a CUDA context each on NVIDIA's).
  compilers_.resize(std::min<size_t>(compilers_.size(), 1));
}

std::vector<Tuner::Hunt> Tuner::StartHunts() {
  std::vector<Hunt> hunts;
  double total_us = 0;
  for (const Work& w : work_)
    if (w.ok) total_us += w.k.heuristic_us;
  std::mt19937_64 rng(options_.seed);
  const double left = Left();
  for (size_t i = 0; i < work_.size(); ++i) {
    if (!work_[i].ok) continue;
    Hunt h(i, work_[i].tunable.candidates, rng);
    h.share_s = left * work_[i].k.heuristic_us / std::max(total_us, 1e-9);
    hunts.push_back(std::move(h));
  }
  std::stable_sort(hunts.begin(), hunts.end(), [&](const Hunt& a, const Hunt& b) {
    return work_[a.work].k.heuristic_us > work_[b.work].k.heuristic_us;
  });
  return hunts;
}

std::vector<std::vector<Trial>> Tuner::NextWave(std::vector<Hunt>& hunts, double per_build,
                                                size_t room, std::vector<Hunt*>* owner) {
  std::vector<std::vector<Trial>> wave;
  for (bool more = true; more && wave.size() < room;) {
    more = false;
    std::vector<Hunt*> ready;
    for (Hunt& h : hunts)
      if (!h.stopped && (h.builds == 0 || h.spent_s + per_build <= h.share_s)) ready.push_back(&h);
    std::stable_sort(ready.begin(), ready.end(), [](const Hunt* a, const Hunt* b) {
      return (a->builds == 0) != (b->builds == 0)
                 ? a->builds == 0
                 : a->share_s - a->spent_s > b->share_s - b->spent_s;
    });
    for (Hunt* h : ready) {
      if (wave.size() >= room) break;
      Work& w = work_[h->work];
      std::vector<Trial> trials = {{w.node, &w.tunable, w.tunable.candidates[0], w.product_only}};
      for (size_t n = 1; n < kPerBuild; ++n) {
        std::optional<size_t> c = h->Next(w.tunable.candidates);
        if (!c) break;
        trials.push_back({w.node, &w.tunable, w.tunable.candidates[*c], w.product_only});
      }
      if (trials.size() == 1) {  // every candidate tried
        h->stopped = true;
        continue;
      }
      ++h->builds;
      h->spent_s += per_build;  // until the wave says what a build cost
      wave.push_back(std::move(trials));
      owner->push_back(h);
      more = true;
    }
  }
  return wave;
}

bool Tuner::Reshare(std::vector<Hunt>& hunts) {
  double active_us = 0;
  for (const Hunt& h : hunts)
    if (!h.stopped) active_us += work_[h.work].k.heuristic_us;
  if (active_us <= 0) return false;
  for (Hunt& h : hunts)
    if (!h.stopped)
      h.share_s = h.spent_s + (Left() - last_build_) * work_[h.work].k.heuristic_us / active_us;
  return true;
}

void Tuner::StoreChosen(std::vector<Hunt>& hunts, double keep_below) {
  // Interrupted, a kernel never searched gets no entry (one would say it was).
  const bool stopped = Stopped();
  std::vector<runtime::TuningEntry> entries;
  for (Hunt& h : hunts) {
    Work& w = work_[h.work];
    if (stopped && w.k.tried <= 1) continue;
    w.best = h.best;
    if (h.best_ratio > keep_below) {  // within noise and context: keep the heuristic's
      w.best = w.tunable.candidates[0];
      w.k.best = w.k.heuristic;
      w.k.tuned_us = w.k.heuristic_us;
    }
    entries.push_back(OnlyForTheCheck(w) ? HeuristicEntry(w)
                                         : EntryOf(dev_, w.tunable, w.best, w.k));
  }
  runtime::TuningDb::Store(result_.db, entries);
}

Tuner::Hunt::Hunt(size_t w, const std::vector<TunePoint>& candidates, std::mt19937_64& rng)
    : work(w), tried(candidates.size(), false), best(candidates[0]) {
  tried[0] = true;
  for (size_t c = 1; c < candidates.size(); ++c) order.push_back(c);
  small = order.size() <= 24;
  if (!small) std::shuffle(order.begin(), order.end(), rng);
}

std::optional<size_t> Tuner::Hunt::Next(const std::vector<TunePoint>& candidates) {
  auto take = [this](size_t c) {
    tried[c] = true;
    return c;
  };
  if (!small && spent_s >= share_s / 2)
    for (size_t c = 1; c < candidates.size(); ++c)
      if (!tried[c] && Neighbours(candidates[c], best)) return take(c);
  for (size_t c : order)
    if (!tried[c]) return take(c);
  return std::nullopt;
}

void Tuner::Judge(Hunt& h, const std::vector<Trial>& trials, Measurements& m) {
  Work& w = work_[h.work];
  const codegen::Tunable& t = w.tunable;
  if (!m.measured[0]) {  // the heuristic's kernel ran before: the device is failing
    h.stopped = true;
    return;
  }
  for (size_t j = 1; j < trials.size(); ++j) {
    ++w.k.tried;
    std::string p = codegen::PointString(trials[j].point);
    if (m.measured[j]) m.why[j] = Differs(m.measured[0]->out, m.measured[j]->out);
    if (!m.why[j].empty()) {
      ++w.k.discarded;
      Say(fmt::format("{} {} {}: discarded: {}", t.family, t.signature, p, m.why[j]));
      continue;
    }
    // Judged by its time relative to the heuristic's kernel in the same runs: a busy machine
    // slows both alike.
    double ratio = m.measured[j]->us / std::max(m.measured[0]->us, 1e-9);
    if (options_.log_candidates)
      Say(fmt::format("{} {} {}: {:.1f} us (heuristic {:.1f} us)", t.family, t.signature, p,
                      m.measured[j]->us, m.measured[0]->us));
    if (ratio < h.best_ratio) {
      h.best_ratio = ratio;
      h.best = trials[j].point;
      w.k.best = p;
      w.k.heuristic_us = m.measured[0]->us;
      w.k.tuned_us = m.measured[j]->us;
    }
  }
}

// The fastest of many noisy measurements is flattered by the noise (ResNet-18's points so
// chosen on a busy 2-core machine ran 1.3x slower in the model than the heuristic's): each
// winner is timed again beside the heuristic's kernel, interleaved, in a build of its own (the
// builds in waves), and kept only if it is still faster there. Winners the budget leaves no
// time to confirm keep their search's ratio.
void Tuner::Confirm(std::vector<Hunt>& hunts, double keep_below) {
  std::vector<Hunt*> pending;
  for (Hunt& h : hunts)
    if (h.best_ratio <= keep_below) pending.push_back(&h);
  while (!pending.empty() && Left() > last_build_) {
    size_t n = std::min(pending.size(), BuildsThatFit(Left(), WaveSize()));
    std::vector<std::vector<Trial>> wave;
    for (size_t b = 0; b < n; ++b) {
      Work& w = work_[pending[b]->work];
      wave.emplace_back();
      for (int r = 0; r < 2; ++r) {
        wave.back().push_back({w.node, &w.tunable, w.tunable.candidates[0], w.product_only});
        wave.back().push_back({w.node, &w.tunable, pending[b]->best, w.product_only});
      }
    }
    std::vector<Measurements> results = RunWave(wave, options_.seed + 1);
    for (size_t b = 0; b < n; ++b) {
      if (!results[b].run) continue;  // not confirmed: the search's ratio stands
      Hunt& h = *pending[b];
      // Whole (heuristic, best) pairs only: a part of a failed build measured alone would pair
      // one kernel's two times with the other's one.
      const std::vector<std::optional<Measured>>& m = results[b].measured;
      double heuristic = 0, best = 0;
      int pairs = 0;
      for (size_t j = 0; j + 1 < m.size(); j += 2)
        if (m[j] && m[j + 1]) heuristic += m[j]->us, best += m[j + 1]->us, ++pairs;
      if (pairs == 0 || heuristic <= 0) {
        h.best_ratio = 1;
        continue;
      }
      Work& w = work_[h.work];
      w.k.heuristic_us = heuristic / pairs;
      w.k.tuned_us = best / pairs;
      h.best_ratio = best / heuristic;
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
  }
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
  // A point kept for the check's sake that is not 5% faster alone.
  if (Stopped()) {
    Say("interrupted: no model check, so only points 5% faster alone are kept");
    Revert(OnlyForTheCheck);
    return;
  }
  ChosenPoints chosen;
  for (Work& w : work_)
    if (w.ok && w.k.best != w.k.heuristic) chosen.Set(w.tunable, w.best);
  if (chosen.empty()) {
    Say("the model check has nothing to compare: every kernel keeps the heuristic's point");
    return;
  }
  try {
    auto c0 = Clock::now();
    ModelRun tuned =
        PrepareModel(ctx_, cache_, backends::LowerToPlan(graph, dev_, &chosen), options_.seed);
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
    if (!keep) {
      Revert([](const Work&) { return true; });
    } else {  // the points kept for the check's sake go into the database now
      std::vector<runtime::TuningEntry> entries;
      for (const Work& w : work_)
        if (w.ok && OnlyForTheCheck(w)) entries.push_back(EntryOf(dev_, w.tunable, w.best, w.k));
      if (!entries.empty()) runtime::TuningDb::Store(result_.db, entries);
    }
  } catch (const Error& e) {
    // The points kept for the check's sake (2% faster alone) go back to the heuristic's.
    Say(fmt::format("the model check failed, so only points 5% faster alone are kept: {}",
                    e.what()));
    Revert(OnlyForTheCheck);
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
  tuner.ReadyModelCheck();
  tuner.Search();
  tuner.CheckInModel(*graph);
  tuner.Finish();
  return result;
}

}  // namespace texel
