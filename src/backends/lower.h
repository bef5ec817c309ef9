// Lowering: a partitioned Graph -> runtime::Plan. Every value gets a buffer (views such as
// Reshape share their input's buffer), every node the kernels of its backend.
#pragma once

#include "ir/graph.h"
#include "runtime/cl/device.h"
#include "runtime/plan.h"

namespace texel::backends {

runtime::Plan LowerToPlan(const ir::Graph& graph, const cl::DeviceInfo& device);

}  // namespace texel::backends
