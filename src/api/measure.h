// Measured partitioning (--measure): the time of one node on one backend, from running
// the backend's lowering of that node alone on zero-filled buffers of its types. Results are
// cached on disk under <program cache dir>/measure/, keyed by the device, its driver and
// platform versions, the backend and the node's printed form, so a second compile measures
// nothing, and in the timer's memory, so that a model's equal nodes are timed once even with
// the disk cache off. Thread safety: a timer belongs to one compile (one thread at a time);
// compiles on other threads make their own, and the disk cache is safe across them.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "ir/graph.h"
#include "runtime/cl/context.h"
#include "runtime/cl/program_cache.h"

namespace texel {

class NodeTimer {
 public:
  explicit NodeTimer(std::shared_ptr<cl::Context> ctx);

  // Median seconds from enqueueing the node's steps to their completion, over 10 runs after 2
  // warm-ups. With storage kTexture, the node's texture kernel (native): its main input and
  // its result in images, a Conv's filters in a weight image (--storage auto with --measure).
  double Seconds(const ir::Node& node, const backends::Backend& backend,
                 ir::Storage storage = ir::Storage::kBuffer);
  // How many distinct nodes (with their backend and storage) it has timed.
  size_t timed() const { return memo_.size(); }

 private:
  std::shared_ptr<cl::Context> ctx_;
  cl::ProgramCache cache_;
  std::map<std::string, double> memo_;  // key (below) -> seconds
};

}  // namespace texel
