// What texel accepts from a model before it allocates anything: a tensor's declared size, in
// shape inference and wherever a tensor is made in host memory (constants, external data,
// host evaluation during import and constant folding). A hostile or damaged model that declares
// more gets a clear error instead of an out-of-memory abort (docs/reliability.md). Defaults
// are raised with the environment variables TEXEL_MAX_TENSOR_BYTES and TEXEL_MAX_HOST_BYTES;
// the depth of nested subgraphs (If, Loop and Scan bodies) with TEXEL_MAX_SUBGRAPH_DEPTH.
// The device's own limits are checked when a plan is made (api/compiler.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.h"
#include "core/shape.h"

namespace texel {

struct Limits {
  uint64_t tensor_bytes = uint64_t{16} << 30;  // one tensor's type: 16 GiB
  uint64_t host_bytes = uint64_t{4} << 30;     // one tensor in host memory: 4 GiB
  // Subgraphs inside subgraphs: each level is imported recursively (real models nest 1-3).
  uint64_t subgraph_depth = 16;
};
// The defaults, or the environment's values (read once).
const Limits& CurrentLimits();

// The bytes of a `t` tensor of shape s; nullopt when a dim is negative or the count overflows.
std::optional<uint64_t> CheckedBytes(const Shape& s, DType t);

// Throws kInvalidModel naming `what` when a `t` tensor of shape s overflows or is over the
// tensor limit (host: the host limit).
void RequireWithinLimits(const Shape& s, DType t, bool host, std::string_view what);

}  // namespace texel
