// Memory planning: the intermediate buffers of a Plan placed by liveness in one arena, so that a
// Session allocates its device memory once and a run allocates nothing.
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstdint>

#include "runtime/cl/device.h"
#include "runtime/plan.h"

namespace texel::runtime {

// Gives every planned buffer an offset (a multiple of alignment, in bytes) in one arena, such
// that two buffers whose lifetimes overlap never share a byte. A buffer's lifetime runs from the
// first to the last step that has it as an argument, both included (a step may read and write
// all its arguments). Planned are all buffers but constants, graph inputs and outputs (with
// their row counts), empty buffers and buffers no step uses. Greedy by size, as TFLite's arena
// planner: the largest buffer first, each into the smallest gap left between the buffers already
// placed that are live at the same time, else above them all; then a few passes that place first
// the buffers that ended up above the liveness lower bound, keeping the best placement. A buffer
// that is part of another (BufferDesc::alias_of) goes at its offset inside it, the whole one
// live while either is; Error(kUnsupported) where that offset is not a multiple of alignment.
MemoryPlan PlanMemory(const Plan& plan, int64_t alignment);

// Whether the runtime may use sub-buffers on the device (the arena's regions, a buffer's parts):
// not on NVIDIA's driver, whose processes crash when a sub-buffer is released (580.x, H100;
// docs/decisions.md).
bool SubBuffersUsable(const cl::DeviceInfo& device);

// The offset alignment the device demands of sub-buffers (CL_DEVICE_MEM_BASE_ADDR_ALIGN), bytes.
int64_t ArenaAlignment(const cl::DeviceInfo& device);

}  // namespace texel::runtime
