// Types of the linalg subset: element types, `tensor<...>` and `memref<...>` with static or
// dynamic ('?', kept as -1 for the importer to report) dims, and `!alias` references.
#pragma once

#include "frontend/linalg/ast.h"
#include "frontend/linalg/cursor.h"

namespace texel::linalg_frontend {

// Throws kUnsupported for types texel does not have (vector<>, bf16, layouts, unranked tensors,
// zero-sized dims, more than 2^32 elements) and kInvalidModel for malformed text.
ast::Type ParseType(Cursor& c);

}  // namespace texel::linalg_frontend
