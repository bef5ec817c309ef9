// Type inference: the output types of a core op from its input types and attributes.
// Used when nodes are built and again by the verifier. Throws Error(kInvalidModel).
#pragma once

#include <vector>

#include "ir/graph.h"

namespace texel::ir {

std::vector<TensorType> InferTypes(OpKind op, const std::vector<TensorType>& inputs,
                                   const Attrs& attrs);

// Output spatial size of a window op (conv/pool): floor((in + pb + pe - d*(k-1) - 1) / s) + 1.
int64_t WindowOutSize(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe);

}  // namespace texel::ir
