// Lowering: a partitioned Graph -> runtime::Plan. Every value gets a buffer (views such as
// Reshape share their input's buffer; a constant only where a kernel binds it unpacked), every
// node the kernels of its backend, tunable ones with tuning's points (nullptr: heuristics).
#pragma once

#include "codegen/opencl/tuning.h"
#include "ir/graph.h"
#include "runtime/cl/device.h"
#include "runtime/plan.h"

namespace texel::backends {

runtime::Plan LowerToPlan(const ir::Graph& graph, const cl::DeviceInfo& device,
                          const codegen::TuningSource* tuning = nullptr);

}  // namespace texel::backends
