// The pass pipeline. Each pass has a stable name, a one-line summary and statistics; the
// verifier runs after every pass. `texel compile --print-ir-after=NAME` prints the IR after it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/precision.h"
#include "ir/graph.h"
#include "runtime/cl/device.h"

namespace texel::backends {
class Backend;
}

namespace texel::passes {

using Stats = std::map<std::string, int64_t>;

// How partition chooses among the allowed backends that support a node (--partition).
enum class PartitionPolicy {
  kEstimate,  // the least estimated time (Backend::Estimate), the default
  kMeasure,   // the least measured time (PassContext::measure; --measure)
  kFirst,     // the first in --backends order: every node a backend takes goes to it
};
const char* PolicyName(PartitionPolicy p);                 // "estimate", "measure", "first"
bool ParsePolicy(std::string_view s, PartitionPolicy* p);  // false when unknown

// Where values live (--storage; passes/assign_storage.cpp).
enum class StoragePolicy { kBuffer, kTexture, kAuto };
const char* StoragePolicyName(StoragePolicy p);                 // "buffer", "texture", "auto"
bool ParseStoragePolicy(std::string_view s, StoragePolicy* p);  // false when unknown

struct PassContext {
  const cl::DeviceInfo* device = nullptr;  // null: device-independent passes only
  std::vector<std::string> backends;       // allowed backends, in preference order
  std::vector<std::string> deny;           // "BACKEND:Op": keep Op away from BACKEND (--deny)
  PartitionPolicy policy = PartitionPolicy::kEstimate;
  // What the user should hear of the options (an allowed backend that cannot run, texture
  // storage falling back to buffers); null: not told.
  std::function<void(const std::string&)> notice;
  StoragePolicy storage = StoragePolicy::kBuffer;
  bool half_texels = false;  // images with f16 channels (--texture-precision fp16)
  ComputeMode precision = ComputeMode::kFp32;  // --precision (passes/precision.cpp)
  // Passes skipped by name (--disable-pass; comparisons and tests of what a pass buys).
  std::vector<std::string> disabled;
  // With kAuto and --measure: device seconds of `node` (native) alone with its main input and
  // result in `storage`; auto then puts a group in images where its anchor measured faster so.
  std::function<double(const ir::Node& node, ir::Storage storage)> measure_storage;
  // With kMeasure: device seconds of `node` lowered by `backend` alone.
  std::function<double(const ir::Node& node, const backends::Backend& backend)> measure;
};

struct Pass {
  const char* name;
  const char* summary;
  std::function<Stats(ir::Graph&, const PassContext&)> run;
};

// Whether ctx lets `backend` compute `op`: the backend is allowed (--backends; native where none
// is named) and no deny rule keeps `op` from it. Throws kInvalidArgument on a malformed rule.
bool BackendMayRun(const PassContext& ctx, std::string_view backend, ir::OpKind op);

// Every pass, in pipeline order.
const std::vector<Pass>& Pipeline();

// Runs the pipeline; after_each (if set) sees each pass's name, stats and the graph.
void RunPipeline(
    ir::Graph& g, const PassContext& ctx,
    const std::function<void(const Pass&, const Stats&, const ir::Graph&)>& after_each = nullptr);

// The passes (one file each).
Stats FoldConstants(ir::Graph& g, const PassContext& ctx);
Stats Simplify(ir::Graph& g, const PassContext& ctx);
Stats MergeProjections(ir::Graph& g, const PassContext& ctx);
Stats MatchAttention(ir::Graph& g, const PassContext& ctx);
Stats MatchNorm(ir::Graph& g, const PassContext& ctx);
Stats Views(ir::Graph& g, const PassContext& ctx);
Stats FoldConvAffine(ir::Graph& g, const PassContext& ctx);
Stats ApplyPrecision(ir::Graph& g, const PassContext& ctx);
// The multiply-adds of a MatMul or Conv: one per output element and step of its depth.
int64_t ProductMacs(const ir::Node& n);
Stats ChannelsLast(ir::Graph& g, const PassContext& ctx);
Stats Partition(ir::Graph& g, const PassContext& ctx);
Stats Fuse(ir::Graph& g, const PassContext& ctx);
Stats AssignStorage(ir::Graph& g, const PassContext& ctx);

}  // namespace texel::passes
