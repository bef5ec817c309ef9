// partition: assigns each node to a backend among the allowed ones (--backends) that support
// it: by default the one with the least estimated device time (Backend::Estimate), with
// --measure the least measured time, with --partition first the first in --backends order.
// Estimated or measured, a backend other than native must win by more than a kernel launch
// (5 us) to pay for the boundary with the native kernels around it: a lone tiny layer stays
// native. PassContext::deny rules ("clblast:Conv") keep an op away from a backend.
#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "backends/backend.h"
#include "core/enum_names.h"
#include "core/error.h"
#include "passes/pipeline.h"

namespace texel::passes {
namespace {

// The (backend, op) pairs of "BACKEND:Op" rules; errors name the rule and what is unknown.
std::set<std::pair<std::string, ir::OpKind>> ParseDeny(const std::vector<std::string>& rules) {
  std::set<std::pair<std::string, ir::OpKind>> out;
  for (const std::string& r : rules) {
    size_t colon = r.find(':');
    if (colon == std::string::npos)
      Fail(ErrorCode::kInvalidArgument, "deny rule '{}': expected BACKEND:Op", r);
    std::string backend = r.substr(0, colon), op = r.substr(colon + 1);
    if (!backends::FindBackend(backend))
      Fail(ErrorCode::kInvalidArgument, "deny rule '{}': unknown backend '{}'", r, backend);
    ir::OpKind kind;
    if (!ir::ParseOpKind(op, &kind))
      Fail(ErrorCode::kInvalidArgument, "deny rule '{}': unknown op '{}'", r, op);
    out.insert({backend, kind});
  }
  return out;
}

// The backends ctx allows, in preference order: --backends, or native where none is named.
std::vector<std::string> AllowedNames(const PassContext& ctx) {
  if (ctx.backends.empty()) return {std::string(backends::kNative)};
  return ctx.backends;
}

// What leaving the native kernels costs: about one kernel launch.
constexpr double kBoundarySeconds = 5e-6;

constexpr EnumName<PartitionPolicy> kPolicyNames[] = {{PartitionPolicy::kEstimate, "estimate"},
                                                      {PartitionPolicy::kMeasure, "measure"},
                                                      {PartitionPolicy::kFirst, "first"}};

}  // namespace

const char* PolicyName(PartitionPolicy p) { return NameIn(kPolicyNames, p); }

bool ParsePolicy(std::string_view s, PartitionPolicy* p) { return ParseIn(kPolicyNames, s, p); }

bool BackendMayRun(const PassContext& ctx, std::string_view backend, ir::OpKind op) {
  std::vector<std::string> names = AllowedNames(ctx);
  return std::find(names.begin(), names.end(), backend) != names.end() &&
         !ParseDeny(ctx.deny).count({std::string(backend), op});
}

Stats Partition(ir::Graph& g, const PassContext& ctx) {
  std::vector<const backends::Backend*> allowed;
  for (const auto& name : AllowedNames(ctx)) {
    const backends::Backend* b = backends::FindBackend(name);
    if (!b) Fail(ErrorCode::kInvalidArgument, "unknown backend '{}'", name);
    if (std::optional<std::string> why = b->Unavailable(); why && ctx.notice)
      ctx.notice(
          fmt::format("backend '{}' is not available ({}); the others run its nodes", name, *why));
    allowed.push_back(b);
  }
  auto deny = ParseDeny(ctx.deny);
  Stats stats;
  for (const auto& node : g.nodes()) {
    ir::Node& n = *node;
    n.backend.clear();
    if (n.outputs[0]->type.bytes() == 0) {
      // No elements: lowering makes no kernel (backends/lower.cpp), so no backend is asked
      // (kernel parameters assume at least one element).
      n.backend = std::string(allowed.front()->name());
      ++stats["nodes-" + n.backend];
      continue;
    }
    std::vector<const backends::Backend*> able;
    std::optional<Error> first_refusal;  // the first allowed backend's reason
    for (const backends::Backend* b : allowed) {
      if (deny.count({std::string(b->name()), n.op})) continue;
      backends::Support support = b->Supports(n, *ctx.device);
      if (support.ok)
        able.push_back(b);
      else if (b == allowed.front())
        first_refusal = std::move(support.refusal);
    }
    if (!able.empty()) n.backend = std::string(able.front()->name());
    if (able.size() > 1 && ctx.policy != PartitionPolicy::kFirst) {
      bool measured = ctx.policy == PartitionPolicy::kMeasure;
      TEXEL_CHECK(!measured || ctx.measure, "partition: --measure without a measuring function");
      double best = 0;
      for (const backends::Backend* b : able) {
        double t = measured ? ctx.measure(n, *b) : b->Estimate(n, *ctx.device);
        t += b->name() == backends::kNative ? 0.0 : kBoundarySeconds;
        if (b == able.front() || t < best) best = t, n.backend = std::string(b->name());
      }
      ++stats[measured ? "nodes-measured" : "nodes-estimated"];
    }
    if (n.backend.empty()) {
      // Say why in the first allowed backend's own words (which op, which dtype).
      if (first_refusal) {
        first_refusal->AddContext(fmt::format("node '{}' ({})", n.name, OpName(n.op)));
        throw *first_refusal;
      }
      Fail(ErrorCode::kUnsupported, "node '{}' ({}): no backend supports it", n.name, OpName(n.op));
    }
    ++stats["nodes-" + n.backend];
  }
  return stats;
}

}  // namespace texel::passes
