// Imports one parsed function: memref arguments that bufferization.to_tensor reads become graph
// inputs named after them ("%arg0" -> "arg0"), tensor arguments are inputs too, memref arguments
// written by bufferization.materialize_in_destination become graph outputs named after them,
// and returned tensors become outputs "result0", "result1", ... (after the written arguments).
// Thread safety: reentrant.
#pragma once

#include <memory>
#include <string>

#include "frontend/import_options.h"
#include "frontend/linalg/ast.h"
#include "ir/graph.h"

namespace texel::linalg_frontend {

// opts.input_shapes may only restate an argument's static shape; opts.frozen_inputs bind read
// arguments to constants. Throws Error positioned at "<source>:<line>:<col>".
std::unique_ptr<ir::Graph> ImportFunction(const ast::Function& f, const std::string& source,
                                          const frontend::ImportOptions& opts);

}  // namespace texel::linalg_frontend
