#include "backends/native/native_backend.h"

#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::backends {

codegen::Target NativeBackend::TargetOf(const cl::DeviceInfo& device) {
  codegen::Target t;
  t.fp64 = device.fp64;
  return t;
}

bool NativeBackend::Supports(const ir::Node& node, const cl::DeviceInfo& device) const {
  try {
    codegen::GenerateKernel(node, "probe", TargetOf(device));
    return true;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return false;
    throw;
  }
}

double NativeBackend::Estimate(const ir::Node& node, const cl::DeviceInfo& device) const {
  // Roofline guess until measurements exist: flops at 1 GFLOP/s per compute unit plus launch.
  codegen::KernelSpec k = codegen::GenerateKernel(node, "probe", TargetOf(device));
  return 5e-6 + k.flops / (1e9 * std::max<uint32_t>(device.compute_units, 1));
}

std::vector<codegen::KernelSpec> NativeBackend::Lower(const ir::Node& node,
                                                      const std::string& name_prefix,
                                                      const cl::DeviceInfo& device) const {
  return {codegen::GenerateKernel(node, name_prefix, TargetOf(device))};
}

}  // namespace texel::backends
