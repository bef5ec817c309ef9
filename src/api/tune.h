// The tuner (`texel tune`, issue 17, docs/tuning.md): for each distinct tunable kernel of a
// model (family and signature, codegen/opencl/tuning.h), measures candidate points of its
// declared space on the device, the heuristic's first, and records the fastest in the tuning
// database. Candidates are built several to a program (one build, the dominant cost on a CPU
// device) and run alone, back to back, each on seeded random inputs of its own (the node's
// constants as they are), timed by profiling events (median of several runs after a warm-up). One
// that fails to build or run, or whose outputs differ from the heuristic kernel's, is discarded
// with a line in the log. Search: every candidate where the space is small, else random candidates
// and then the neighbours of the best (points differing in one parameter). The budget (seconds,
// import and passes included) is honoured (no build of candidates starts that the last one's
// duration says would overrun it): after the heuristics' times, every kernel is searched at
// once, in waves of builds, each kernel with a share of what is left in proportion to its time. A
// kernel whose best is within 5% of the heuristic's keeps the heuristic's point. Thread safety: one
// tune per context at a time.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "runtime/cl/context.h"

namespace texel {

struct TuneOptions {
  double budget_seconds = 120;
  std::string db;  // the database written; "" the device's (runtime::TuningDb::DefaultPath)
  int runs = 7;    // timed runs per candidate, after a warm-up
  uint64_t seed = 0;
  CompileOptions compile;  // how the model is imported and optimised (its tuning is ignored)
  // Whether the chosen points are checked in the whole model against the heuristic's (kept only
  // if faster): kAuto on GPUs where it fits half the budget (docs/tuning.md).
  enum class ModelCheck { kAuto, kOn, kOff };
  ModelCheck model_check = ModelCheck::kAuto;
  // Every measured candidate's time goes to the log as well, not only the discarded ones.
  bool log_candidates = false;
  // Builds of candidates whose programs compile at once, each in a worker process (or on a
  // thread) with a context of its own (0: on GPUs all the host's cores but one, at most 16; on CPUs
  // 1, their drivers compiling on the cores the tune measures on).
  int jobs = 0;
  // An executable that compiles programs as `WORKER compile-worker DIR` (the texel command; the
  // CLI names itself): a wave's programs then compile in that many processes instead of
  // threads, which NVIDIA's driver runs one at a time (runtime/cl/compile_workers.h). "": threads.
  std::string compile_worker;
  // Where set (by a signal handler or another thread), the tune stops at its next build (a wave
  // being compiled is abandoned): the kernels whose candidates were measured get their entries,
  // those not yet searched none, and there is no model check (so only points 5% faster alone
  // are kept).
  const std::atomic<bool>* stop = nullptr;
};

struct TunedKernel {
  std::string family, signature;
  std::string heuristic, best;  // points (PointString)
  double heuristic_us = 0, tuned_us = 0;
  int candidates = 0, tried = 0, discarded = 0;
};

struct TuneProgress {
  int index = 0, count = 0;  // kernel index (0-based) of count
  const TunedKernel* kernel = nullptr;
  double seconds_left = 0;
};

struct TuneResult {
  std::string db;
  std::vector<TunedKernel> kernels;  // in model order; those whose heuristic was measured
  int skipped = 0;                   // kernels the budget did not reach, or that failed
  double seconds = 0;
  // The model check (TuneOptions::model_check): the whole model's median ms with the
  // heuristic's points and with those kept, and which were kept; 0 and "" where no check ran
  // (off, over its share of the budget, nothing chosen, or the model does not run on random
  // inputs).
  double model_heuristic_ms = 0, model_tuned_ms = 0;
  std::string model_kept;
  bool interrupted = false;  // TuneOptions::stop was set
};

// Tunes model_path's kernels on ctx's device into the database. progress is called after each
// build of candidates; log receives one line per discarded candidate (and with
// TuneOptions::log_candidates one per measured candidate). Throws Error as Compile does.
TuneResult TuneModel(const std::string& model_path, const std::shared_ptr<cl::Context>& ctx,
                     const TuneOptions& options,
                     const std::function<void(const TuneProgress&)>& progress = {},
                     const std::function<void(const std::string&)>& log = {});

}  // namespace texel
