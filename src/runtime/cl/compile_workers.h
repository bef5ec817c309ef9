// Programs compiled in worker processes (`texel compile-worker DIR`). NVIDIA's OpenCL gained
// little from threads of one process, each with a context of its own, on large programs
// (ResNet-18's builds at batch 32 took about 2 s each in waves of eight), where eight processes
// each compiled ResNet-18's batch-32 model program in the time one took (H200, 9.4-10.6 s each). A
// worker's build also leaves the machine code in the driver's JIT cache, so that the parent's build
// from the worker's binary (PTX there) takes 0.3 s instead of the 4.4 s of assembling it again.
//
// The exchange is a private directory: `device` ("P:D" and the device's name, a line each),
// `count`, and per program I `I.cl` (source) and `I.opt` (build options). A worker claims a
// program by creating `I.claim` exclusively, and leaves `I.bin` (its binary, renamed into place
// when whole) or `I.err` (why it failed), and `I.sec` (the seconds it took, or its build from
// source took where it came from the program cache and the entry recorded more); `cache` names the
// program cache's directory, `parent` the starting process. A program whose worker died has
// neither. Thread safety: a CompileJob belongs to one thread; RunCompileWorker is a process's main.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/cl/device.h"

namespace texel::cl {

struct ProgramSource {
  std::string source, options;
};

// Programs being compiled by up to `processes` workers, started by the constructor (each runs
// `worker compile-worker DIR`, its stdin /dev/null and its output in the directory); Wait
// collects them. Workers look programs up in (and add them to) the program cache at
// `cache_dir` ("": none). Throws Error(kIo) when the directory or the processes cannot be made
// (nothing is left behind).
class CompileJob {
 public:
  CompileJob(const std::string& worker, const DeviceInfo& dev,
             const std::vector<ProgramSource>& programs, size_t processes,
             const std::string& cache_dir = "");
  ~CompileJob();  // stops workers still running and removes the directory
  CompileJob(const CompileJob&) = delete;
  CompileJob& operator=(const CompileJob&) = delete;

  // A program's outcome: its binary, or why there is none (the build's error, or that its
  // worker stopped first); and the seconds its build took, those of its build from source where
  // it came from the program cache (ProgramCache::BuildSeconds).
  struct Compiled {
    std::vector<uint8_t> binary;
    std::string error;
    double seconds = 0;
  };
  // Whether every worker has finished, waiting until `deadline` at most, or until `stop` says
  // so (then false).
  bool DoneBy(std::chrono::steady_clock::time_point deadline,
              const std::function<bool()>& stop = {});
  // Waits for the workers; the programs' outcomes in order. Throws Error(kDevice) with their
  // output when every worker failed (none could open the device, say). Where `stop` says so
  // while they run (a tune interrupted), the workers are killed and the programs they had not
  // finished have no binary.
  std::vector<Compiled> Wait(const std::function<bool()>& stop = {});

 private:
  void Stop();  // kills the workers still running and reaps them
  std::string dir_;
  size_t count_ = 0;
  std::vector<pid_t> pids_;
  int failed_ = 0, finished_ = 0;  // workers that exited other than with 0, and in all
};

// The worker: compiles DIR's unclaimed programs one after another on a context of its own,
// dying with its parent. Returns the process's exit code (0; 2 when DIR is unreadable or names
// another device, or the device cannot be opened).
int RunCompileWorker(const std::string& dir);

}  // namespace texel::cl
