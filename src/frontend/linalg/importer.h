// The linalg frontend: reads the subset of MLIR text that host frameworks hand over as
// linalg-on-tensors fragments (one func.func over memref or tensor arguments, see
// docs/linalg.md) into core IR. Pipeline: Lex (lexer.h) -> ParseModule (parser.h, an ast::Module)
// -> ImportFunction (function_importer.h, with the op lowerings of lowering.h) -> ir::Verify.
// Thread safety: functions are reentrant.
#pragma once

#include <memory>
#include <string>

#include "frontend/import_options.h"
#include "ir/graph.h"

namespace texel::linalg_frontend {

// Every error is a texel::Error whose what() reads "<source_name>:<line>:<col>: <what>":
// kInvalidModel for malformed text and type mismatches, kUnsupported for valid MLIR outside the
// subset (naming the op or construct), kInvalidArgument for options that do not fit.
// opts (ImportOptions is shared with the ONNX frontend): input_shapes may only restate an
// argument's static shape; frozen_inputs turn read arguments into constants.
std::unique_ptr<ir::Graph> ImportLinalgText(const std::string& text, const std::string& source_name,
                                            const frontend::ImportOptions& opts = {});
// The file's path is the source name; a missing file is kNotFound naming it.
std::unique_ptr<ir::Graph> ImportLinalgFile(const std::string& path,
                                            const frontend::ImportOptions& opts = {});

// Whether bytes (the start of a file is enough) read as MLIR text: after whitespace and `//`
// comments, `module`, `func.func` or a `#`/`!` alias definition. No valid ONNX protobuf starts
// so (its first byte is a field tag, and none of these characters is a tag ModelProto uses).
bool LooksLikeLinalg(const std::string& bytes_prefix);

}  // namespace texel::linalg_frontend
