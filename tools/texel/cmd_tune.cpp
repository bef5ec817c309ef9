// texel tune: measures candidate kernel parameters for a model's tunable kernels on a device
// and records the fastest in the tuning database (api/tune.h, docs/tuning.md). A progress line
// on stderr (kernel i of n, best so far, time left), discarded candidates in the log (stderr),
// and a summary table on stdout: signature, heuristic us, tuned us, speedup.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>

#include "api/tune.h"
#include "core/error.h"
#include "model_session.h"

namespace texel::cli {
namespace {

struct TuneArgs {
  std::string model, device;
  double budget = 120;
  int runs = 7;
  std::string model_check = "auto";
  bool log_candidates = false;
  int jobs = 0;
  CompilerFlags compile;
};

// This executable, as /proc names it (the file run, even if replaced on disk since: a worker
// speaks its parent's protocol); "" without /proc, and the tune then compiles on threads.
std::string SelfPath() {
  std::error_code ec;
  return std::filesystem::exists("/proc/self/exe", ec) ? "/proc/self/exe" : "";
}

// Ctrl-C (or SIGTERM) stops the tune at its next build, keeping what it measured; the first
// signal puts both back to their defaults, so a second one ends the process at once. A signal
// the shell ignored for this process (a background job's SIGINT) stays ignored.
std::atomic<int> stop_signal{0};
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

extern "C" void OnStopSignal(int sig) {
  int saved = errno;
  stop_signal.store(sig);
  stop_requested.store(true);
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int s : {SIGINT, SIGTERM}) {
    struct sigaction now = {};
    if (sigaction(s, nullptr, &now) == 0 && now.sa_handler == OnStopSignal)
      sigaction(s, &dfl, nullptr);
  }
  const char note[] =
      "\ntexel: tune: interrupted: storing the points measured so far (interrupt again to quit "
      "at once)\n";
  ssize_t ignored = write(STDERR_FILENO, note, sizeof(note) - 1);
  (void)ignored;
  errno = saved;
}

// The handler for SIGINT and SIGTERM while it lives, the previous ones after.
class StopOnSignal {
 public:
  StopOnSignal() {
    struct sigaction sa = {};
    sa.sa_handler = OnStopSignal;
    sa.sa_flags = SA_RESTART;  // the driver's calls go on; the tune checks the flag
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < 2; ++i) {
      sigaction(kSignals[i], nullptr, &old_[i]);
      if (old_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &sa, nullptr);
    }
  }
  ~StopOnSignal() {
    for (size_t i = 0; i < 2; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  struct sigaction old_[2] = {};
};

int RunTune(const TuneArgs& a) {
  if (!(a.budget > 0)) Fail(ErrorCode::kInvalidArgument, "--budget must be positive seconds");
  if (a.runs < 1) Fail(ErrorCode::kInvalidArgument, "--runs must be at least 1");
  if (a.jobs < 0 || a.jobs > 64)
    Fail(ErrorCode::kInvalidArgument, "--jobs must be 0 (automatic) to 64, not {}", a.jobs);
  if (IsArtifactFile(a.model))
    Fail(ErrorCode::kInvalidArgument,
         "{}: an artifact is compiled already; tune the model it was made from", a.model);
  cl::DeviceInfo dev = cl::SelectDevice(a.device);
  auto ctx = std::make_shared<cl::Context>(dev);
  TuneOptions o;
  o.budget_seconds = a.budget;
  o.runs = a.runs;
  o.compile = ToCompileOptions(a.compile);
  o.db = o.compile.tuning_db;  // --db names the database written
  o.model_check = a.model_check == "on"    ? TuneOptions::ModelCheck::kOn
                  : a.model_check == "off" ? TuneOptions::ModelCheck::kOff
                                           : TuneOptions::ModelCheck::kAuto;
  o.log_candidates = a.log_candidates;
  o.jobs = a.jobs;
  o.compile_worker = SelfPath();  // this program's compile-worker command
  o.stop = &stop_requested;
  StopOnSignal on_signal;
  std::printf("device   %s\n", dev.Label().c_str());
  bool tty = isatty(fileno(stderr));
  TuneResult r = TuneModel(
      a.model, ctx, o,
      [&](const TuneProgress& p) {
        std::fprintf(
            stderr,
            "%skernel %d/%d %-12s tried %d/%d best %.1f us (heuristic %.1f us), %.0f s left%s",
            tty ? "\r" : "", p.index + 1, p.count, p.kernel->family.c_str(), p.kernel->tried,
            p.kernel->candidates, p.kernel->tuned_us, p.kernel->heuristic_us, p.seconds_left,
            tty ? "\033[K" : "\n");
      },
      [&](const std::string& line) {
        std::fprintf(stderr, "%stexel: tune: %s\n", tty ? "\r\033[K" : "", line.c_str());
      });
  if (tty) std::fprintf(stderr, "\n");
  std::printf("%-12s %-64s %10s %10s %8s %s\n", "family", "signature", "heur. us", "tuned us",
              "speedup", "point");
  for (const TunedKernel& k : r.kernels) {
    std::string sig = k.signature.size() > 64 ? k.signature.substr(0, 61) + "..." : k.signature;
    std::printf("%-12s %-64s %10.1f %10.1f %7.2fx %s\n", k.family.c_str(), sig.c_str(),
                k.heuristic_us, k.tuned_us, k.heuristic_us / k.tuned_us, k.best.c_str());
  }
  double h = 0, t = 0;
  for (const TunedKernel& k : r.kernels) h += k.heuristic_us, t += k.tuned_us;
  std::printf(
      "tuned    %zu kernels (%d not reached %s) in %.1f s: %.1f -> %.1f us summed over distinct "
      "kernels (%.2fx)\n",
      r.kernels.size(), r.skipped, r.interrupted ? "before the interrupt" : "within the budget",
      r.seconds, h, t, t > 0 ? h / t : 1.0);
  if (r.model_heuristic_ms > 0)
    std::printf("model    %.3f ms with the heuristic's points, %.3f ms tuned (%.2fx)%s%s\n",
                r.model_heuristic_ms, r.model_tuned_ms, r.model_heuristic_ms / r.model_tuned_ms,
                r.model_kept.empty() ? "" : ": kept ", r.model_kept.c_str());
  std::printf("database %s\n", r.db.c_str());
  if (r.interrupted) {
    int searched = 0;
    for (const TunedKernel& k : r.kernels) searched += k.tried > 1;
    std::fprintf(stderr,
                 "texel: tune: interrupted after %.1f s: entries stored for the %d kernels "
                 "searched\n",
                 r.seconds, searched);
    return 128 + stop_signal.load();  // as a shell reports a command ended by the signal
  }
  return 0;
}

}  // namespace

Runner AddTuneCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "tune", "Measure kernel variants of a model on a device and record the fastest");
  auto a = std::make_shared<TuneArgs>();
  cmd->add_option("model", a->model, "ONNX model or linalg fragment (.mlir)")->required();
  cmd->add_option("--budget", a->budget, "seconds to spend, import included (default 120)");
  cmd->add_option("--runs", a->runs, "timed runs per candidate (default 7)");
  cmd->add_option("--model-check", a->model_check,
                  "check the chosen points in the whole model against the heuristic's and keep "
                  "them only if faster: auto (on GPUs, where it fits half the budget), on, "
                  "off")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_flag("--log-candidates", a->log_candidates,
                "log every measured candidate's time (stderr), not only the discarded ones");
  cmd->add_option("--jobs", a->jobs,
                  "builds of candidates compiled at once, each in a process of its own (default 0: "
                  "on GPUs all the host's cores but one, at most 16; on CPUs 1)");
  cmd->add_option("--device,-d", a->device, "gpu, cpu, P:D or a name substring (env TEXEL_DEVICE)");
  AddCompilerFlags(cmd, &a->compile);
  return [a] { return RunTune(*a); };
}

}  // namespace texel::cli
