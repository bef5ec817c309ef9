// Executable: a Plan made ready on one device — program built (through the on-disk program
// cache), constants uploaded. Session: the buffers and kernels of one run context, with every
// kernel argument set once; the planned buffers are sub-buffers of one arena (plan.memory),
// allocated when the Session is made, so running allocates no device memory; Run() binds inputs,
// enqueues every step on the context's in-order queue without host synchronisation in between, and
// reads outputs. Library-call steps enqueue their routine on the same queue and buffers. Lifetime:
// the Context outlives Executables; an Executable outlives its Sessions. Thread safety: an
// Executable may be shared between threads; a Session is used by one thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cl/context.h"
#include "runtime/cl/program_cache.h"
#include "runtime/library_call.h"
#include "runtime/plan.h"

namespace texel::runtime {

class Executable {
 public:
  Executable(std::shared_ptr<cl::Context> ctx, Plan plan, cl::ProgramCache* cache);
  const Plan& plan() const { return plan_; }
  cl::Context& context() const { return *ctx_; }
  // False when the program was built from source (or there is no kernel at all).
  bool program_from_cache() const { return program_ && program_->from_cache(); }
  const cl::Program* program() const { return program_.get(); }
  const cl::Buffer& constant_buffer(int index) const { return constants_.at(index); }

 private:
  std::shared_ptr<cl::Context> ctx_;
  Plan plan_;
  std::unique_ptr<cl::Program> program_;
  std::map<int, cl::Buffer> constants_;
};

struct StepTiming {
  const KernelStep* step;
  double ms;
};

class Session {
 public:
  explicit Session(const Executable& exe);
  // Checks names, dtypes and shapes (Error(kInvalidArgument) naming the input); copies inputs in,
  // runs, and returns outputs in plan order.
  std::vector<HostTensor> Run(const std::map<std::string, HostTensor>& inputs);
  void SetInput(const std::string& name, const HostTensor& t);
  // Enqueues all steps and waits for them; with timings, returns per-step device times.
  void Execute(std::vector<StepTiming>* timings = nullptr);
  HostTensor GetOutput(size_t index) const;

 private:
  const Executable& exe_;
  std::vector<cl::Buffer> buffers_;  // index -> buffer (empty for constants and shared regions)
  std::vector<int> slot_;            // index -> the buffers_ entry that holds its memory
  std::vector<cl::Kernel> kernels_;  // per step (empty for library calls)
  std::vector<const LibraryCall*> calls_;          // per step (null for kernels)
  std::vector<std::vector<cl_mem>> call_buffers_;  // per step: a library call's buffers
  cl::Buffer arena_;  // the planned buffers' memory (sub-buffers keep it alive, per the spec)
  const cl::Buffer& BufferAt(int index) const;
};

}  // namespace texel::runtime
