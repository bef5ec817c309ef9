// The kernels generated for one node, built and bound to buffers outside any plan: for kernel
// benchmarks and tests that run a generator's output with explicit parameters. Value ids map to
// buffers through `buffer_of`; scratch ids get buffers of their own, zeroed where the specs ask
// (KernelSpec::zeroed_scratch). Thread safety: one thread at a time.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/opencl/kernel_spec.h"
#include "runtime/cl/context.h"

namespace texel::backends {

struct BoundKernels {
  std::vector<codegen::KernelSpec> specs;
  std::vector<cl::Buffer> scratch;
  std::vector<cl::Kernel> kernels;

  // `prelude` goes before the kernels' source (an extension pragma); `options` are the build
  // options.
  BoundKernels(const cl::Context& ctx, std::vector<codegen::KernelSpec> generated,
               const std::function<const cl::Buffer&(int id)>& buffer_of,
               const std::string& prelude = "", const std::string& options = "")
      : specs(std::move(generated)) {
    std::string source = prelude;
    for (const auto& spec : specs) source += spec.source;
    cl::Program program(ctx, source, options, nullptr);
    for (int64_t bytes : specs[0].scratch_bytes) scratch.emplace_back(ctx, bytes);
    for (int s : specs[0].zeroed_scratch) scratch.at(s).Zero(ctx);
    for (const auto& spec : specs) {
      kernels.emplace_back(program.get(), spec.name);
      for (size_t i = 0; i < spec.args.size(); ++i) {
        int id = spec.args[i];
        kernels.back().SetArg(static_cast<unsigned>(i),
                              id < 0 ? scratch.at(-1 - id) : buffer_of(id));
      }
    }
  }

  // Enqueues one run.
  void Launch(const cl::Context& ctx) {
    for (size_t i = 0; i < specs.size(); ++i)
      cl::Launch(ctx, kernels[i], specs[i].global, specs[i].local);
  }
};

}  // namespace texel::backends
