// The native backend: one generated OpenCL C kernel per node (src/codegen/opencl).
#pragma once

#include "backends/backend.h"
#include "codegen/opencl/generator.h"

namespace texel::backends {

class NativeBackend : public Backend {
 public:
  std::string_view name() const override { return kNative; }
  Support Supports(const ir::Node& node, const cl::DeviceInfo& device) const override;
  double Estimate(const ir::Node& node, const cl::DeviceInfo& device) const override;
  bool FusesEpilogues() const override { return true; }
  std::vector<codegen::KernelSpec> Lower(const std::vector<const ir::Node*>& nodes,
                                         const std::string& name_prefix,
                                         const cl::DeviceInfo& device,
                                         const codegen::TuningSource* tuning) const override;
  // The device's facts; TEXEL_TARGET=gpu:CU makes them a GPU's with CU compute units.
  static codegen::Target TargetOf(const cl::DeviceInfo& device);
};

}  // namespace texel::backends
