// Evaluates one core op on host tensors, for constant folding. Returns nullopt for ops (or
// dtype combinations) it does not evaluate; those stay in the graph and run on the device.
// Thread safety: pure function.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace texel::ir {

std::optional<HostTensor> EvaluateOnHost(OpKind op, const Attrs& attrs,
                                         const std::vector<const HostTensor*>& inputs,
                                         const TensorType& out_type);

// Strides of `in` seen from `out` under numpy broadcasting (0 on broadcast dims), in out's rank.
std::vector<int64_t> BroadcastStrides(const Shape& in, const Shape& out);

}  // namespace texel::ir
