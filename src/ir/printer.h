// Text form of a Graph, for `texel compile --print-ir` and golden tests:
//   graph(%input: f32[1x3x8x8]) -> (%out) {
//     %y = Conv(%input, %w) {dilations=[1, 1], group=1, ...} : f32[1x4x8x8]
//   }
// Constants print as "const %w: f32[4x3x3x3]" lines before the body.
#pragma once

#include <string>

#include "ir/graph.h"

namespace texel::ir {

std::string PrintGraph(const Graph& g);

}  // namespace texel::ir
