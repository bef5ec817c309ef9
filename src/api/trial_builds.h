// The tuner's builds (api/tune.h): candidates of kernels lowered to one program per build, each
// node alone on inputs of its own, compiled (a wave of builds in parallel threads), run and
// timed by profiling events, and their outputs compared with the heuristic kernel's.
// Thread safety: CompileInParallel runs threads of its own, each on its own context; the rest
// runs on the caller's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/opencl/tuning.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "runtime/cl/context.h"
#include "runtime/cl/program_cache.h"
#include "runtime/plan.h"

namespace texel::tuning {

using codegen::TunePoint;

// One kernel to try: the node, its space and a point.
struct Trial {
  const ir::Node* node;
  const codegen::Tunable* tunable;
  TunePoint point;
  // A product whose LayerNorm sums its slices in the model (fuse's norm-after-product groups):
  // only its first kernel counts, the split's sum kernel being the model's LayerNorm's work.
  bool product_only = false;
};

// A trial's time (microseconds, median of the runs, its kernels' launches counted) and output.
struct Measured {
  double us = 0;
  HostTensor out;
  double launches_us = 0;  // the launches' part of us (step_us per kernel), a constant
};

// Where the builds' wall-clock time went (seconds), for the tune's last log line.
struct BuildPhases {
  // prebuilt: their programs compiled in a wave, in parallel; by workers: in worker processes
  int builds = 0, prebuilt = 0, by_workers = 0;
  double lower = 0, program = 0, inputs = 0, runs = 0, outputs = 0;
};

// The trials' nodes as one graph lowered to one plan: each node alone, reading inputs of its own
// (constants shared), so that one trial's runs do not warm another's inputs (inputs shared by
// eight trials stayed in an H100's 50 MB L2 at batch 32, and the points chosen so ran 17% slower
// in MobileNetV2). A trial's own operands still stay there between its runs; on GPUs RunTrials
// overwrites the cache before each run.
struct TrialPlan {
  runtime::Plan plan;
  struct Input {
    const ir::Value* original;
    std::string name;
    ir::TensorType type;
  };
  std::vector<Input> inputs;
};

// Programs compiled ahead of their builds, by source.
using Prebuilt = std::map<std::string, std::vector<uint8_t>>;

// What a step costs a run beyond its kernel's device time (the host's enqueue, the device's gap
// between kernels), microseconds: a chain of tiny kernels timed by the host clock, less their
// profiled time (9.1 us on an H100 through NVIDIA's OpenCL): a point that adds a kernel (K split
// with a sum kernel) must save more than that, which the kernels' own times do not show
// (EfficientNet-B0 at batch 1, launch-bound, ran 2.6% slower tuned than untuned).
double StepCostUs(const std::shared_ptr<cl::Context>& ctx);

// The trials as one plan for dev, each kernel taking its trial's point (PointsInOrder).
TrialPlan LowerTrials(const cl::DeviceInfo& dev, const std::vector<Trial>& trials);

// True once no more work may start (a tune interrupted, its budget spent); empty: never.
using GiveUp = std::function<bool()>;

// Compiles the plans' programs on `contexts.size()` threads, each with a context of its own on
// the device, into binaries by source (a plan that fails to compile gets none: its build then
// fails as it runs, trial by trial). NVIDIA's driver compiles a program on one core: a tune at
// batch 32 spent 33 of its builds' 41 s there, one build after another. No program is started
// once `stop` says so.
Prebuilt CompileInParallel(const std::vector<std::shared_ptr<cl::Context>>& contexts,
                           cl::ProgramCache& cache, const std::vector<const runtime::Plan*>& plans,
                           const GiveUp& stop = {});

// The same in up to `processes` worker processes (cl::CompileJob: `worker compile-worker DIR`),
// which NVIDIA's driver runs side by side where it serialises threads; killed when `stop` says
// so. Throws Error(kIo) when no worker can be started.
Prebuilt CompileInWorkers(const std::string& worker, const cl::DeviceInfo& dev, size_t processes,
                          const cl::ProgramCache& cache,
                          const std::vector<const runtime::Plan*>& plans, const GiveUp& stop = {});

// The trials' kernels as one program (one build for all of them; its binary from `prebuilt` where
// that has it) run back to back, each node alone on seeded random inputs (its constants kept:
// packed filters need them): per trial the median over `runs` runs of its profiled time plus
// step_us for each of its kernels, and its output. `lowered`, when given, is LowerTrials(trials)
// already made (for its program's compilation), taken instead of lowering them again.
std::vector<Measured> RunTrials(const std::shared_ptr<cl::Context>& ctx, cl::ProgramCache& cache,
                                const std::vector<Trial>& trials, int runs, uint64_t seed,
                                double step_us, const Prebuilt& prebuilt, BuildPhases& phases,
                                std::optional<TrialPlan> lowered = std::nullopt);

// RunTrials, and where the program fails to build or run, its parts apart (recursively), so
// that only the failing trials are lost (nullopt, with the reason in *why); once `give_up` says
// so (the budget spent, the tune interrupted) no part is built: its trials are lost with the
// failed build's reason and that note.
// - with_reference (a kernel's candidates after trials[0], the heuristic's point): the halves of
//   the candidates, each with the reference built beside it again, so that every candidate's
//   time is judged against the reference's in the same runs (a later half's measured times
//   scaled by the reference's ratio between its runs and the first's, their launches' constant
//   not); one bad candidate of n costs about
//   2 log2(n) more builds, and a candidate that fails beside the reference is lost without a
//   build of its own. A reference that fails alone loses every trial, in about log2(n) + 2.
// - without (unrelated trials, such as every kernel's heuristic point): the halves of the
//   trials; one bad trial of n costs about 2 log2(n) more builds.
std::vector<std::optional<Measured>> RunEach(const std::shared_ptr<cl::Context>& ctx,
                                             cl::ProgramCache& cache,
                                             const std::vector<Trial>& trials, int runs,
                                             uint64_t seed, double step_us,
                                             const Prebuilt& prebuilt, BuildPhases& phases,
                                             std::vector<std::string>* why, const GiveUp& give_up,
                                             std::optional<TrialPlan> lowered = std::nullopt,
                                             bool with_reference = true);

// Why got differs from the heuristic's ref beyond reordered sums (relative L2 above 1e-4, NaNs or
// infinities elsewhere), or "".
std::string Differs(const HostTensor& ref, const HostTensor& got);

}  // namespace texel::tuning
