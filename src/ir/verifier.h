// Checks a Graph's invariants: topological order, every node's types match re-inferred types,
// constants match their types, outputs are defined. Throws Error(kInternal) naming the node.
#pragma once

#include "ir/graph.h"

namespace texel::ir {

void Verify(const Graph& g);

}  // namespace texel::ir
