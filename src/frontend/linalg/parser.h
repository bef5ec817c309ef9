// Parser of the MLIR text subset: an optional `module { }`, `#name = ...` / `!name = ...`
// aliases, and `func.func` definitions whose ops are in the custom (pretty) form of the supported
// op families: linalg structured ops (named and generic, with regions), arith/math scalar ops,
// arith.constant, tensor.empty, bufferization.to_tensor / materialize_in_destination, returns.
// It gives no meaning to what it reads (see importer.h) but names unknown dialects' ops.
// Thread safety: reentrant.
#pragma once

#include <string>

#include "frontend/linalg/ast.h"

namespace texel::linalg_frontend {

// Throws Error (kInvalidModel for malformed text, kUnsupported for constructs outside the
// subset) whose what() starts with "<source>:<line>:<col>: ".
ast::Module ParseModule(const std::string& text, const std::string& source);

}  // namespace texel::linalg_frontend
