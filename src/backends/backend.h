// The bring-your-own-codegen interface. A Backend lowers the nodes the partition pass gives it
// into kernel steps that share texel's program, context, queue and buffers. Backends are
// registered by name; `native` (generated OpenCL C) is always present.
// Thread safety: backends are stateless after registration and may be used from any thread.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/opencl/kernel_spec.h"
#include "codegen/opencl/tuning.h"
#include "core/error.h"
#include "ir/graph.h"
#include "runtime/cl/device.h"

namespace texel::backends {

// Whether a backend can run a node, and when it cannot, why (an Error(kUnsupported) in the
// backend's words: which op, which dtype), so that no one generates again to explain.
struct Support {
  bool ok = false;
  std::optional<Error> refusal;  // set when !ok
  static Support Yes() { return {true, std::nullopt}; }
  static Support No(Error why) { return {false, std::move(why)}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Why the backend can run nothing in this process (a library that did not load), or nullopt.
  virtual std::optional<std::string> Unavailable() const { return std::nullopt; }
  // Whether the backend can run node on device; never throws for "no".
  virtual Support Supports(const ir::Node& node, const cl::DeviceInfo& device) const = 0;
  // Estimated device time in seconds (used to choose between backends).
  virtual double Estimate(const ir::Node& node, const cl::DeviceInfo& device) const = 0;
  // Whether the backend computes an elementwise chain fused after an anchor in the anchor's
  // kernel (passes/fuse.cpp groups nodes only for backends that do).
  virtual bool FusesEpilogues() const { return false; }
  // The kernels that compute `nodes`: one node, or a fusion group (an anchor or elementwise node
  // and the elementwise chain consuming its result). Kernel names start with name_prefix and
  // are unique. Tunable kernels take their parameters from tuning where it names them
  // (codegen/opencl/tuning.h; nullptr: the heuristic's).
  virtual std::vector<codegen::KernelSpec> Lower(const std::vector<const ir::Node*>& nodes,
                                                 const std::string& name_prefix,
                                                 const cl::DeviceInfo& device,
                                                 const codegen::TuningSource* tuning) const = 0;
};

// Roofline estimates (Backend::Estimate): a kernel launch plus flops at a fraction
// `efficiency` of the device's nominal float32 peak (compute units x clock x FMA lanes x 2,
// lanes guessed from the device type: 128 per NVIDIA SM, 64 per other GPU compute unit, 16 per
// CPU core). The peak is only a shared scale: partition compares backends' estimates, so their
// efficiencies (measured, in docs/backends.md) are what decides.
inline double RooflineSeconds(double flops, double efficiency, const cl::DeviceInfo& device) {
  double lanes = device.kind != cl::DeviceKind::kGpu ? 16 : device.nv_warp_size > 0 ? 128 : 64;
  double peak = std::max<uint32_t>(device.compute_units, 1) *
                std::max<uint32_t>(device.max_clock_mhz, 100) * 1e6 * lanes * 2;
  return 5e-6 + flops / (peak * efficiency);
}

// The name of texel's own kernels' backend, which a node with no backend assigned runs on.
inline constexpr std::string_view kNative = "native";
// The backend node n runs on: its own, or kNative where none is assigned.
inline std::string_view BackendOf(const ir::Node& n) {
  return n.backend.empty() ? kNative : std::string_view(n.backend);
}

// Registry. Names are lower-case identifiers ("native", "clblast").
void RegisterBackend(std::unique_ptr<Backend> backend);
const Backend* FindBackend(std::string_view name);  // nullptr when unknown

}  // namespace texel::backends
