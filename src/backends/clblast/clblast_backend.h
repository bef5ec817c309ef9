// The `clblast` backend: MatMul on CLBlast's tuned GEMM (CLBlastSgemmStridedBatched) and 2-D
// Conv (one group, symmetric padding) on its convolution-as-GEMM (CLBlastSconvgemm, plus a
// small generated kernel for the bias), enqueued on texel's queue over the plan's buffers as
// library-call steps (runtime/library_call.h, with the routines in runtime/clblast/). It
// supports nothing when CLBlast cannot be loaded (clblast_library.h) and says so once on
// stderr; its nodes then run natively. docs/backends.md walks through it as the example of
// adding a backend.
#pragma once

#include "backends/backend.h"

namespace texel::backends {

class ClblastBackend : public Backend {
 public:
  std::string_view name() const override { return "clblast"; }
  std::optional<std::string> Unavailable() const override;  // libclblast did not load
  Support Supports(const ir::Node& node, const cl::DeviceInfo& device) const override;
  double Estimate(const ir::Node& node, const cl::DeviceInfo& device) const override;
  std::vector<codegen::KernelSpec> Lower(const std::vector<const ir::Node*>& nodes,
                                         const std::string& name_prefix,
                                         const cl::DeviceInfo& device,
                                         const codegen::TuningSource* tuning) const override;
};

}  // namespace texel::backends
