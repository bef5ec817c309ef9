// ONNX frontend: reads a model with the official ONNX library and lowers it into core IR.
// Opsets 1-17 of the default domain. Dynamic dims are fixed from ImportOptions.input_shapes;
// a symbolic first (batch) dim defaults to 1. Shape arithmetic is folded while importing.
// Thread safety: functions are reentrant.
#pragma once

#include <memory>
#include <string>

#include "frontend/import_options.h"
#include "ir/graph.h"

namespace texel::onnx_frontend {

using ImportOptions = frontend::ImportOptions;

// Throws Error naming the file (kNotFound, kInvalidModel), the node and op (kUnsupported,
// kInvalidModel).
std::unique_ptr<ir::Graph> ImportOnnxFile(const std::string& path, const ImportOptions& opts);
// base_dir: where external data files are looked up.
std::unique_ptr<ir::Graph> ImportOnnxBytes(const std::string& bytes, const std::string& base_dir,
                                           const ImportOptions& opts);

}  // namespace texel::onnx_frontend
