#include "backends/native/native_backend.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "codegen/opencl/generator.h"
#include "codegen/opencl/support.h"
#include "core/error.h"

namespace texel::backends {

codegen::Target NativeBackend::TargetOf(const cl::DeviceInfo& device) {
  codegen::Target t;
  t.fp64 = device.fp64;
  t.fp16 = device.fp16;
  t.gpu = device.kind == cl::DeviceKind::kGpu;
  t.compute_units = std::max<uint32_t>(device.compute_units, 1);
  if (device.local_mem_bytes > 0) t.local_mem_bytes = device.local_mem_bytes;
  if (device.max_work_group_size > 0) t.max_work_group_size = device.max_work_group_size;
  t.warp_size = device.nv_warp_size;
  t.ptx = device.nv_warp_size > 0;
  t.mma_sync = t.ptx && device.nv_cc_major >= 8;
  // sm_90a's instructions are Hopper's alone: later architectures do not run them.
  t.wgmma = t.ptx && device.nv_cc_major == 9 && device.nv_cc_minor == 0;
  // The extension's functions need the device's smallest subgroup size, which is 8 or 16.
  if (device.HasExtension("cl_intel_subgroup_matrix_multiply_accumulate") &&
      !device.intel_sub_group_sizes.empty()) {
    size_t sg =
        *std::min_element(device.intel_sub_group_sizes.begin(), device.intel_sub_group_sizes.end());
    if (sg == 8 || sg == 16) t.dpas_sub_group = static_cast<uint32_t>(sg);
  }
  // Hand-over between work-groups needs a device-wide fence: PTX's, or a CPU's coherent caches.
  t.group_handoff = device.kind == cl::DeviceKind::kCpu || t.ptx;
  // TEXEL_TARGET=gpu:CU generates the kernels a GPU with CU compute units would get, so that
  // tests check the GPU's choices on a CPU device (docs/decisions.md); gpu:CU:handoff one whose
  // work-groups hand results over (NVIDIA's), on a device that runs them one at a time
  // (oclgrind); a trailing :mma (or TEXEL_TARGET=mma) runs reduced-precision products on the
  // matrix-engine kernels with their FMA emulation; :wgmma (after :mma if both) also offers
  // Hopper's warpgroup kernel, emulated, wherever it would take a problem on an H100 (texel_gemm,
  // the tuner's points for large fp16 products). TEXEL_TARGET=cpu generates a CPU's kernels on
  // any device: oclgrind's simulated device is a GPU, and this checks the CPU kernels there.
  if (const char* env = std::getenv("TEXEL_TARGET")) {
    std::string s = env;
    auto take_suffix = [&](std::string_view suffix) {
      if (s != suffix.substr(1) && !s.ends_with(suffix)) return false;
      s.resize(s.size() == suffix.size() - 1 ? 0 : s.size() - suffix.size());
      return true;
    };
    t.wgmma_emulated = take_suffix(":wgmma");
    t.mma_emulated = take_suffix(":mma") || t.wgmma_emulated;
    if (take_suffix(":handoff")) t.group_handoff = true;
    if (s == "cpu") {
      t.gpu = false;
    } else if (!s.empty()) {
      if (s.rfind("gpu:", 0) != 0 || s.size() < 5 ||
          s.find_first_not_of("0123456789", 4) != std::string::npos)
        Fail(ErrorCode::kInvalidArgument,
             "TEXEL_TARGET='{}': expected gpu:COMPUTE_UNITS[:handoff][:mma][:wgmma], cpu, mma or "
             "wgmma",
             env);
      t.gpu = true;
      t.compute_units = static_cast<uint32_t>(std::max(1, std::atoi(s.c_str() + 4)));
    }
  }
  return t;
}

// Support and cost come from the node's declared checks and traits (codegen/opencl/support.h):
// no kernel is generated until Lower.
Support NativeBackend::Supports(const ir::Node& node, const cl::DeviceInfo& device) const {
  try {
    codegen::CheckNode(node, TargetOf(device));
    return Support::Yes();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return Support::No(e);
    throw;
  }
}

double NativeBackend::Estimate(const ir::Node& node, const cl::DeviceInfo& device) const {
  // Measured GEMM efficiency (docs/backends.md): about 70% of peak for large products on an
  // H100, 15% on PoCL; an operand gathered one element at a time (a transposed B, an im2col
  // window) costs about a third more.
  codegen::KernelTraits k = codegen::TraitsOf(node, TargetOf(device));
  double efficiency =
      (device.kind == cl::DeviceKind::kGpu ? 0.7 : 0.15) / (k.gathers_b ? 1.3 : 1.0);
  return RooflineSeconds(k.flops, efficiency, device);
}

std::vector<codegen::KernelSpec> NativeBackend::Lower(const std::vector<const ir::Node*>& nodes,
                                                      const std::string& name_prefix,
                                                      const cl::DeviceInfo& device,
                                                      const codegen::TuningSource* tuning) const {
  codegen::Target target = TargetOf(device);
  target.tuning = tuning;
  return codegen::GenerateGroup(nodes, name_prefix, target);
}

}  // namespace texel::backends
