// The tuner's parts, internal to src/api (api/tune.h is the interface): the Tuner that TuneModel
// runs in phases, and what its files share. tuner.cpp: the kernels collected, their heuristics
// timed, waves of builds; tuner_search.cpp: each kernel's search and its confirmation;
// model_check.cpp: the chosen points checked in the whole model. Thread safety: one Tuner per
// tune, used from the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "api/candidate_order.h"
#include "api/trial_builds.h"
#include "api/tune.h"
#include "codegen/opencl/tuning.h"
#include "core/error.h"
#include "ir/graph.h"
#include "runtime/cl/compile_workers.h"
#include "runtime/cl/context.h"
#include "runtime/executable.h"
#include "runtime/plan.h"
#include "runtime/session.h"
#include "runtime/tuning_db.h"

namespace texel::tuning {

using Clock = std::chrono::steady_clock;
using codegen::TunePoint;

inline double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A kernel keeps a point that beats the heuristic's by 5% alone, or by 2% where the model check
// will judge the points together (small gains add up over a model's kernels; a kernel's noise is
// the check's to catch). Without a check after all (interrupted, or failed) the 2% ones revert.
// The database holds a 2% point only once the check has kept it, so that no interrupt or
// failure between the search's store and the check leaves an unchecked one there.
constexpr double kKeepAlone = 0.95, kKeepChecked = 0.98;

// The database entry of tunable t at point p with k's times.
runtime::TuningEntry EntryOf(const cl::DeviceInfo& dev, const codegen::Tunable& t,
                             const TunePoint& p, const TunedKernel& k);

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
                      const std::vector<uint8_t>* binary = nullptr);

// The median wall-clock milliseconds of each model's runs, one run of each in turn: at least 10
// each, more while within `seconds`, at most 100. The kernels' own times, measured alone, miss
// what a model adds: a split product's sum kernel is free where a LayerNorm sums the slices, a
// launch costs less where the device is the bottleneck (Swin-T's points chosen alone ran 3.3-3.9%
// slower in the model than the heuristic's on an H100).
std::vector<double> TimeInTurn(const std::vector<ModelRun*>& models, double seconds);

// The model check's verdict on the models' medians (ms[0] the heuristic's points, then each set
// of chosen points): the index of the set kept, or 0 for the heuristic's. A set is kept where
// faster by more than noise (0.5%), or by 1% where two sets were timed (the better of two noisy
// times is flattered).
size_t CheckVerdict(const std::vector<double>& ms);

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
  // Seconds left of the whole budget; Left(): of the search's part (the check's share kept).
  double BudgetLeft() const { return options_.budget_seconds - Since(t0_); }
  double Left() const { return Stopped() ? -1 : BudgetLeft() - reserve_; }
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
  // Whether programs compile in worker processes, several at once.
  bool CompilesInWorkers() const { return !worker_.empty() && WaveSize() > 1; }
  // The builds' trials measured one build after another, their programs compiled first in
  // parallel where a wave has more than one (per build: RunEach's results and reasons); the
  // wave's times go to Timed.
  struct Measurements {
    std::vector<std::optional<Measured>> measured;
    std::vector<std::string> why;
    bool run = true;  // false: the tune was interrupted or its budget spent before this build
  };
  // with_reference: each build's trials[0] is the reference of the rest (RunEach).
  std::vector<Measurements> RunWave(const std::vector<std::vector<Trial>>& builds, uint64_t seed,
                                    bool with_reference = true);
  // A wave's programs compiled at once: in worker processes where there is a worker
  // (TuneOptions::compile_worker), else on threads. Once `stop` says so the workers are killed
  // (their unfinished programs get no binary) and the threads start no further program.
  Prebuilt Compile(const std::vector<const runtime::Plan*>& plans, const GiveUp& stop);
  // A kernel's search: its candidates' order (api/candidate_order.h), its best so far and its
  // share of the search's time.
  struct Hunt {
    Hunt(size_t w, const std::vector<TunePoint>& candidates, std::mt19937_64& rng)
        : work(w), order(candidates, rng), best(candidates[0]) {}
    std::optional<size_t> Next(const std::vector<TunePoint>& candidates) {  // marked tried
      return order.Next(candidates, best, spent_s >= share_s / 2);
    }
    size_t work;
    CandidateOrder order;
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
  // most `room` builds; owner[b] is build b's hunt. Hunts out of candidates stop. With
  // at_least_one, a first round where no share covers a build takes every hunt with candidates.
  std::vector<std::vector<Trial>> NextWave(std::vector<Hunt>& hunts, double per_build, size_t room,
                                           std::vector<Hunt*>* owner, bool at_least_one = false);
  // Every share spent with time left: what is left, less `keep_s`, shared out among the hunts
  // with candidates left. False where none has.
  bool Reshare(std::vector<Hunt>& hunts, double keep_s);
  // Each searched kernel's entry: its best point where faster than keep_below, else the
  // heuristic's.
  void StoreChosen(std::vector<Hunt>& hunts, double keep_below);
  // A build's results: discarded candidates logged, the best kept. True where the best is new
  // and won by kKeepAlone: Spread then offers it to the family's other hunts.
  bool Judge(Hunt& h, const std::vector<Trial>& trials, Measurements& m);
  void Spread(std::vector<Hunt>& hunts, const Hunt& from);
  int offered_ = 0;  // other kernels' winners tried first
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
  // wave_compile_ + n * build_run_, and a build alone last_build_. last_kernels_: the most
  // kernels one of its programs held.
  double wave_compile_ = 0, build_run_ = 0, last_build_ = 0;
  size_t last_kernels_ = 0;
  void Timed(double compile_s, double wave_s, size_t builds, size_t kernels);
  // Builds that fit `seconds` in one wave (at most WaveSize(); a first wave: `first`), their
  // programs' compilation `compile_scale` times the last wave's; WaveTime is its inverse, the
  // predicted seconds of a wave of n builds.
  size_t BuildsThatFit(double seconds, size_t first, double compile_scale = 1) const;
  double WaveTime(size_t n, double compile_scale) const;
  // Confirming `pending` winners (at least one): one wave of programs of kConfirmKernels
  // kernels, compiled at the last wave's time per kernel (drivers compile a program's kernels
  // one after another; on an H200 at batch 1, the log's times put a confirmation wave at about
  // 2 s after a search wave of about 8).
  static constexpr size_t kConfirmKernels = 4;  // two (heuristic, winner) pairs
  double ConfirmScale() const {
    return static_cast<double>(kConfirmKernels) /
           static_cast<double>(std::max<size_t>(last_kernels_, 1));
  }
  // Where the last wave's builds compiled as they ran, one build's time: Confirm then builds
  // one at a time, or, on a GPU after a wave of one, compiles the next wave's in parallel.
  double ConfirmTime(size_t pending) const {
    size_t n = wave_compile_ > 0 ? std::clamp<size_t>(pending, 1, WaveSize()) : 1;
    return WaveTime(n, ConfirmScale());
  }
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

}  // namespace texel::tuning
