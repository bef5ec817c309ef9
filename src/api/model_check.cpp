// The tuner's model check: the chosen points in the whole model, timed in turn with the
// heuristic's (api/tuner.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "api/tuner.h"
#include "backends/lower.h"
#include "core/random_tensor.h"

namespace texel::tuning {
namespace {

// The most of the budget `auto` sets aside for the check. Half, not a third: Swin-T's points
// chosen alone ran 3.6% slower in the model at batch 1 on an H200 (`--budget 30`, its check then
// by its forced run's build 1.3 x 8.5 + 1.5 = 12.6 s, over a third: inferred, that
// tune's log was not kept); with the check forced the tune took 24.1 s and the check
// kept the heuristic's (the chosen points 1.321 ms against 1.197).
constexpr double kMostForTheCheck = 0.5;

}  // namespace

ModelRun PrepareModel(const std::shared_ptr<cl::Context>& ctx, cl::ProgramCache& cache,
                      runtime::Plan plan, uint64_t seed, const std::vector<uint8_t>* binary) {
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

// On GPUs the chosen points are checked in the whole model at the end, against the heuristic's:
// that model is built now, and the check's share of the budget set aside, where it fits half the
// budget (kMostForTheCheck). CPU drivers such as PoCL compile each kernel at its first launch, so
// there a model build costs tens of seconds; and with kernels run one after another on the same
// cores (a 2-4 us step) the times measured alone hold in the model.
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
    if (CompilesInWorkers()) {
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
  // Waited for while two thirds of the budget are not spent.
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
  // The chosen points' program is new, so compiled from source: where the heuristic's came from
  // the program cache (a model run before its tune), what its build from source took when the
  // entry was made (without, Swin-T's check on an H200 was sized from a 0.1 s build,
  // 1.3 x 0.1 + 1.5 = 1.6 s, took 7.5 and overran a
  // 30 s budget by 3.9 s).
  const cl::Program* program = heuristic_model_->exe->program();
  if (program != nullptr && program->from_cache())  // a worker's time may be that record already
    compile_s = std::max(compile_s, program->build_seconds());
  heuristic_model_->build_s += compile_s;
  // The chosen points' build can take longer than the heuristic's (Swin-T on an H100: the
  // check took 10.5 s where the heuristic's model had been ready in under 8.5 s); with twice
  // the heuristic's build kept, EfficientNet-B0's check at batch 1 did not fit a 30 s budget's
  // third, and its points chosen by their kernels alone ran 2.7% slower in the model (H200).
  reserve_ = 1.3 * heuristic_model_->build_s + 1.5;
  if (options_.model_check == TuneOptions::ModelCheck::kAuto &&
      (reserve_ > kMostForTheCheck * options_.budget_seconds || Left() <= 0)) {
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

void Tuner::Revert(const std::function<bool(const Work&)>& which) {
  std::vector<runtime::TuningEntry> entries;
  for (Work& w : work_) {
    if (!w.ok || w.k.best == w.k.heuristic || !which(w)) continue;
    // A point kept for the check's sake was stored as the heuristic's already (StoreChosen).
    bool stored = !OnlyForTheCheck(w);
    w.best = w.tunable.candidates[0];
    w.k.best = w.k.heuristic;
    w.k.tuned_us = w.k.heuristic_us;
    if (stored) entries.push_back(EntryOf(dev_, w.tunable, w.best, w.k));
  }
  if (!entries.empty()) runtime::TuningDb::Store(result_.db, entries);
}

size_t CheckVerdict(const std::vector<double>& ms) {
  constexpr double kFasterThanNoise = 0.995, kBetterOfTwo = 0.99;
  auto valid = [](double t) { return std::isfinite(t) && t > 0; };
  if (ms.size() < 2 || !valid(ms[0])) return 0;
  size_t best = 0;  // the fastest valid set; the first on ties
  for (size_t i = 1; i < ms.size(); ++i)
    if (valid(ms[i]) && (best == 0 || ms[i] < ms[best])) best = i;
  return best > 0 && ms[best] < ms[0] * (ms.size() > 2 ? kBetterOfTwo : kFasterThanNoise) ? best
                                                                                          : 0;
}

// The chosen points in the model, run in turn with the heuristic's: kept if faster by more than
// noise, else their entries get the heuristic's point, so that no compile takes them, nor a
// neighbour's nearest shape. Where only some of them won by 5% alone, the model with those alone
// is built beside it (both compiled at once where worker processes compile) and run in the same
// turns, and the faster of the two is kept if it beats the heuristic's by 1% (CheckVerdict): on
// an H200 at batch 1 (`--budget 60`) every chosen point lost in ViT-B/16 (1.987 against 1.878 ms)
// and the 5% ones won (1.852), where before the check kept the heuristic's.
void Tuner::CheckInModel(const ir::Graph& graph) {
  if (!heuristic_model_) return;
  // No check after all, or a failed one: a point kept for the check's sake (not 5% faster
  // alone) goes back to the heuristic's.
  auto only_alone = [this](const std::string& why) {
    Say(why + ", so only points 5% faster alone are kept");
    Revert(OnlyForTheCheck);
  };
  if (Stopped()) return only_alone("interrupted: no model check");
  ChosenPoints chosen, alone;  // every chosen point; those 5% faster alone
  bool mixed = false;          // some chosen points are only for the check's sake
  for (Work& w : work_)
    if (w.ok && w.k.best != w.k.heuristic) {
      chosen.Set(w.tunable, w.best);
      if (OnlyForTheCheck(w))
        mixed = true;
      else
        alone.Set(w.tunable, w.best);
    }
  if (chosen.empty()) {
    Say("the model check has nothing to compare: every kernel keeps the heuristic's point");
    return;
  }
  // CPU drivers compile each kernel at its first launch, and the heuristic's model may have
  // come from the driver's own cache: there the chosen points' build takes about a build's time
  // per kernel (SqueezeNet on PoCL, `--model-check on --budget 30`: its check, sized from a
  // 0.2 s build at 1.3 x 0.2 + 1.5 = 1.8 s, took 29.9 s, and the tune 56.7 s).
  if (dev_.kind != cl::DeviceKind::kGpu && last_kernels_ > 0) {
    double build_s = static_cast<double>(heuristic_model_->exe->plan().steps.size()) * last_build_ /
                     static_cast<double>(last_kernels_);
    if (build_s > BudgetLeft())
      return only_alone(
          fmt::format("no time for the model check (its build about {:.0f} s, "
                      "{:.0f} s left)",
                      build_s, BudgetLeft()));
  }
  // The check's share was set aside (reserve_), but the search's last wave and the
  // confirmations can eat into it: a check with less than half its share left is not started
  // (ConvNeXt-T at batch 32 on an H200 took 65.6 s of a 60 s budget once, the log not kept).
  if (BudgetLeft() < 0.5 * reserve_)
    return only_alone(fmt::format("{:.1f} s left of the model check's {:.1f}: not run",
                                  std::max(0.0, BudgetLeft()), reserve_));
  struct Candidate {
    bool only_alone;  // the points 5% faster alone
    const char* name;
    runtime::Plan plan;
  };
  std::vector<Candidate> sets;
  Prebuilt binaries;
  bool from_workers = false;  // a set without a binary in `binaries` is left out
  auto c0 = Clock::now();
  try {
    sets.push_back({false, "the chosen points", backends::LowerToPlan(graph, dev_, &chosen)});
    // Beside the chosen points where it compiles alongside them, or the budget holds its build.
    const bool side_by_side = CompilesInWorkers();
    if (mixed && !alone.empty() && (side_by_side || Left() > reserve_))
      sets.push_back(
          {true, "the points 5% faster alone", backends::LowerToPlan(graph, dev_, &alone)});
    // In worker processes (one set or two), which are stopped once the whole budget is spent,
    // where a build here cannot be cut short; a set a worker did not compile is left out. Where
    // the workers fail to start, the sets are built here, the second only where the budget
    // holds it.
    if (side_by_side) {
      std::vector<const runtime::Plan*> plans;
      for (const Candidate& c : sets) plans.push_back(&c.plan);
      bool spent = false;
      try {
        binaries = CompileInWorkers(worker_, dev_, plans.size(), cache_, plans, [&] {
          spent = BudgetLeft() <= 0;
          return Stopped() || spent;
        });
        from_workers = true;
      } catch (const Error& e) {
        Say(fmt::format("the model check's programs are built here: {}", e.what()));
        if (sets.size() > 1 && Left() <= reserve_) sets.pop_back();
      }
      if (Stopped()) return only_alone("interrupted: no model check");
      if (spent)
        return only_alone(fmt::format(
            "the model check's programs were given up after {:.1f} s: the budget was spent",
            Since(c0)));
    }
  } catch (const Error& e) {
    return only_alone(fmt::format("the model check failed ({})", e.what()));
  }
  // Each set's model apart: one that fails to build or run is left out, with why.
  std::vector<ModelRun> runs;
  std::vector<const Candidate*> built;
  bool alone_failed = false;
  std::string failures;
  for (Candidate& c : sets) {
    auto left_out = [&](const std::string& why) {
      alone_failed |= c.only_alone;
      failures += fmt::format("{}with {}: {}", failures.empty() ? "" : "; ", c.name, why);
    };
    auto bin = binaries.find(c.plan.source);
    if (from_workers && bin == binaries.end()) {
      left_out("its program did not compile in a worker process");
      continue;
    }
    try {
      runs.push_back(PrepareModel(ctx_, cache_, std::move(c.plan), options_.seed,
                                  bin == binaries.end() ? nullptr : &bin->second));
      built.push_back(&c);
    } catch (const Error& e) {
      left_out(e.what());
    }
  }
  if (runs.empty()) {  // the 5% points stay unless their own model failed
    if (!alone_failed) return only_alone(fmt::format("the model check failed ({})", failures));
    Say(fmt::format("the model check failed ({}), so the heuristic's points are kept", failures));
    return Revert([](const Work&) { return true; });
  }
  std::vector<ModelRun*> timed = {&*heuristic_model_};
  for (ModelRun& r : runs) timed.push_back(&r);
  const double turns_s = 0.5 * static_cast<double>(timed.size());
  if (BudgetLeft() < turns_s)
    return only_alone(fmt::format("{:.1f} s left for the model check's {:.1f} s of runs: not run",
                                  std::max(0.0, BudgetLeft()), turns_s));
  std::vector<double> ms;
  try {
    ms = TimeInTurn(timed, turns_s);
  } catch (const Error& e) {
    return only_alone(fmt::format("the model check failed ({})", e.what()));
  }
  const size_t verdict = CheckVerdict(ms);  // 0: the heuristic's
  const Candidate* kept = verdict > 0 ? built[verdict - 1] : nullptr;
  std::string times;
  for (size_t i = 0; i < built.size(); ++i)
    times += fmt::format(", with {}: {:.3f} ms", built[i]->name, ms[i + 1]);
  Say(fmt::format(
      "the model with the heuristic's points: {:.3f} ms{}; {} (built in {:.1f} s, checked in "
      "{:.1f} s){}",
      ms[0], times, kept ? fmt::format("{} kept", kept->name) : "the heuristic's kept",
      heuristic_model_->build_s, Since(c0), failures.empty() ? "" : "; failed: " + failures));
  result_.model_heuristic_ms = ms[0];
  result_.model_tuned_ms = ms[verdict];
  result_.model_kept = kept ? kept->name : "the heuristic's points";
  if (!kept) {
    Revert([](const Work&) { return true; });
  } else if (kept->only_alone) {
    Revert(OnlyForTheCheck);
  } else {  // the points kept for the check's sake go into the database now
    std::vector<runtime::TuningEntry> entries;
    for (const Work& w : work_)
      if (w.ok && OnlyForTheCheck(w)) entries.push_back(EntryOf(dev_, w.tunable, w.best, w.k));
    if (!entries.empty()) runtime::TuningDb::Store(result_.db, entries);
  }
}

}  // namespace texel::tuning
