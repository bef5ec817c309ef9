// partition: assigns each node to the first allowed backend that supports it (the native
// backend supports everything it can generate). Cost-driven choice comes with more backends.
#include "backends/backend.h"
#include "core/error.h"
#include "passes/pipeline.h"

namespace texel::passes {

Stats Partition(ir::Graph& g, const PassContext& ctx) {
  std::vector<std::string> names =
      ctx.backends.empty() ? std::vector<std::string>{"native"} : ctx.backends;
  std::vector<const backends::Backend*> allowed;
  for (const auto& name : names) {
    const backends::Backend* b = backends::FindBackend(name);
    if (!b) Fail(ErrorCode::kInvalidArgument, "unknown backend '{}'", name);
    allowed.push_back(b);
  }
  Stats stats;
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    n.backend.clear();
    for (const backends::Backend* b : allowed) {
      if (b->Supports(n, *ctx.device)) {
        n.backend = std::string(b->name());
        break;
      }
    }
    if (n.backend.empty()) {
      // Say why in the native backend's own words (which op, which dtype).
      try {
        allowed.front()->Lower({&n}, "probe", *ctx.device);
      } catch (Error& e) {
        e.AddContext(fmt::format("node '{}' ({})", n.name, OpName(n.op)));
        throw;
      }
      Fail(ErrorCode::kUnsupported, "node '{}' ({}): no backend supports it", n.name, OpName(n.op));
    }
    ++stats["nodes-" + n.backend];
  }
  return stats;
}

}  // namespace texel::passes
