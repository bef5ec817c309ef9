// What the kernel benchmarks (gemm_bench, attention_bench) share: timing back-to-back runs on
// a device, and a main() that reports texel's errors as one line.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include "backends/native/bound_kernels.h"
#include "core/error.h"
#include "runtime/cl/context.h"

namespace texel::bench {

// Seconds per call of `launch` (which enqueues one run): warm-up, then enough back-to-back runs
// for about `seconds`, timed from the first enqueue to clFinish.
template <typename F>
double TimeRuns(const cl::Context& ctx, double seconds, F&& launch) {
  using Clock = std::chrono::steady_clock;
  launch();
  ctx.Finish();
  auto t0 = Clock::now();
  launch();
  ctx.Finish();
  double once = std::chrono::duration<double>(Clock::now() - t0).count();
  int reps = static_cast<int>(std::clamp(seconds / std::max(once, 1e-6), 3.0, 500.0));
  t0 = Clock::now();
  for (int r = 0; r < reps; ++r) launch();
  ctx.Finish();
  return std::chrono::duration<double>(Clock::now() - t0).count() / reps;
}

// Reads argv's flags in order: handle(flag, value) for each, where value() takes the argument
// after the flag (failing when there is none); a flag that handle returns false for fails.
using FlagValue = std::function<std::string()>;
inline void ForEachFlag(int argc, char** argv,
                        const std::function<bool(const std::string&, const FlagValue&)>& handle) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    FlagValue value = [&]() -> std::string {
      if (i + 1 >= argc) Fail(ErrorCode::kInvalidArgument, "{} needs a value", arg);
      return argv[++i];
    };
    if (!handle(arg, value)) Fail(ErrorCode::kInvalidArgument, "unknown argument '{}'", arg);
  }
}

// Runs main_fn; an exception becomes "PROGRAM: error: ..." and exit status 1.
inline int GuardedMain(const char* program, int (*main_fn)(int, char**), int argc, char** argv) {
  try {
    return main_fn(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace texel::bench
