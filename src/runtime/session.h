// Session: the buffers and kernels of one run context of an Executable, with every kernel argument
// set once. The planned buffers are sub-buffers of one arena (plan.memory), allocated when the
// Session is made, so running allocates no device memory. Inputs and outputs are the Session's own
// buffers (filled by SetInput, read by GetOutput) or the caller's memory (BindInput/BindOutput,
// runtime/external_tensor.h), which kernels then read and write in place.
//
// A run is a chain of commands on the context's queue (staging copies, kernel launches, library
// calls) with no host synchronisation in between: on an in-order queue the first command waits
// for the caller's events; on an out-of-order queue each command waits for the one before it (and
// the first also for this Session's previous run), so the run is ordered by events alone.
// Enqueue returns the event of the last command; Run and Execute wait for it, never calling
// clFinish on the queue.
//
// Lifetime: an Executable outlives its Sessions. Thread safety: a Session is used by one thread;
// several Sessions of one Executable may run from several threads on one queue.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/executable.h"
#include "runtime/external_tensor.h"

namespace texel::runtime {

struct StepTiming {
  const KernelStep* step;
  double ms;
};

class Session {
 public:
  explicit Session(const Executable& exe);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Checks names, dtypes and shapes (Error(kInvalidArgument) naming the input); copies inputs in,
  // runs, and returns outputs in plan order.
  std::vector<HostTensor> Run(const std::map<std::string, HostTensor>& inputs);
  // Copies t into the Session's own buffer for the input (ending an external binding of it).
  void SetInput(const std::string& name, const HostTensor& t);
  HostTensor GetOutput(size_t index) const;  // an output in the Session's own buffer

  // Binds the caller's memory to an input or output until bound again. Throws Error
  // (kInvalidArgument: unknown name, null or foreign memory, too few bytes, misaligned pointer;
  // kUnsupported: a kind the device lacks, or one a step cannot take) naming the tensor.
  void BindInput(const std::string& name, const ExternalTensor& t);
  void BindOutput(const std::string& name, const ExternalTensor& t);
  bool IsBound(bool output, const std::string& name) const {
    return bound_.count({output, name}) > 0;
  }

  // Enqueues one run after the events in wait; returns an event that completes when the outputs
  // are written. No host synchronisation.
  cl::Event Enqueue(const std::vector<cl_event>& wait = {});
  // Enqueues one run and waits for it; with timings (which needs a profiling queue), returns
  // per-step device times.
  void Execute(std::vector<StepTiming>* timings = nullptr);

 private:
  struct Binding;
  struct Use {  // a step's parameter that reads or writes a buffer
    size_t step;
    unsigned arg;
  };
  const Executable& exe_;
  std::vector<cl::Buffer> buffers_;     // index -> buffer (empty for constants and shared regions)
  std::vector<int> slot_;               // index -> the buffers_ entry that holds its memory
  std::vector<std::vector<Use>> uses_;  // buffer index -> its uses
  std::vector<cl::Kernel> kernels_;     // per step (empty for library calls)
  std::vector<const LibraryCall*> calls_;          // per step (null for kernels)
  std::vector<std::vector<cl_mem>> call_buffers_;  // per step: a library call's buffers
  // (is output, name) -> the caller's memory bound to that input or output
  std::map<std::pair<bool, std::string>, std::unique_ptr<Binding>> bound_;
  cl::Buffer arena_;  // the planned buffers' memory (sub-buffers keep it alive, per the spec)
  cl::Event last_;    // out-of-order queues: the previous run's final event

  const cl::Buffer& BufferAt(int index) const;
  // The cl_mem kernels use for a buffer: a bound input's or output's in place, else the
  // Session's own; null for an SVM or USM pointer.
  cl_mem MemoryOf(int buffer) const;
  static bool Overlap(const Binding& a, const Binding& b);  // caller memory shared by both
  void AwaitPreviousRun() const;  // out-of-order queues: before blocking host copies
  void Bind(const TensorBinding& tensor, bool output, const ExternalTensor& t);
  // Bind's parts: what its errors name; whether an output cannot be written in place (a
  // constant, or memory an input or another output also is); the checks of each kind of
  // memory, which set b's mode (and sub-buffer) or fail; the commit, undone where setting the
  // arguments fails.
  struct BindSite;
  bool AliasedOutput(const TensorBinding& tensor) const;
  void BindClBuffer(const BindSite& at, bool aliased, Binding& b) const;
  void CheckPointerMemory(const BindSite& at, bool aliased, const Binding& b) const;
  void Commit(std::pair<bool, std::string> key, std::unique_ptr<Binding> b);
  void Unbind(bool output, const std::string& name);
  void PointUses(int buffer);  // sets the kernel and library-call arguments of buffer's uses
  cl::Event EnqueueRun(const std::vector<cl_event>& wait, std::vector<cl::Event>* step_events);
  // One command of a run (EnqueueRun orders them): a bound tensor's staging copy; a step.
  void EnqueueStagingCopy(const Binding& b, const std::vector<cl_event>& w, cl_event* ev) const;
  void EnqueueStep(size_t i, const std::vector<cl_event>& w, cl_event* ev) const;
};

// Host wall-clock milliseconds of `repeat` (at least 1) executions of each session after
// `warmup` untimed ones, one run of each in turn (so that all see the same machine state); per
// session, sorted ascending. Profiling events are not requested, so they cost nothing here.
std::vector<std::vector<double>> TimeExecutions(const std::vector<Session*>& sessions, int warmup,
                                                int repeat);

}  // namespace texel::runtime
