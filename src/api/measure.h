// Measured partitioning (--measure): the time of one node on one backend, from running
// the backend's lowering of that node alone on zero-filled buffers of its types. Results are
// cached on disk under <program cache dir>/measure/, keyed by the device, its driver and
// platform versions, the backend and the node's printed form, so a second compile measures
// nothing. Thread safety: call from one thread at a time.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "ir/graph.h"
#include "runtime/cl/context.h"

namespace texel {

// Median seconds from enqueueing the node's steps to their completion, over 10 runs after 2
// warm-ups. With storage kTexture, the node's texture kernel (native): its main input and its
// result in images, a Conv's filters in a weight image (--storage auto with --measure).
double MeasureNode(const ir::Node& node, const backends::Backend& backend,
                   const std::shared_ptr<cl::Context>& ctx,
                   ir::Storage storage = ir::Storage::kBuffer);

}  // namespace texel
