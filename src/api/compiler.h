// The compiler driver: ONNX model or linalg fragment -> Graph (frontend) -> passes -> Plan
// (backends) -> Executable (runtime). The C++ API and the CLI are thin layers over it.
// Thread safety: Compile() is reentrant; see runtime/executable.h and runtime/session.h for what it
// returns.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx/importer.h"
#include "passes/pipeline.h"
#include "runtime/artifact.h"
#include "runtime/session.h"

namespace texel {

struct TuningReport;  // api/tuning_source.h
class NodeTimer;      // api/measure.h

struct CompileOptions {
  onnx_frontend::ImportOptions import;
  std::vector<std::string> backends;  // allowed, in order of preference; empty: native only
  std::vector<std::string> deny;      // "BACKEND:Op" rules (--deny clblast:Conv)
  // How to choose among the allowed backends; kMeasure times nodes with api/measure.h.
  passes::PartitionPolicy partition = passes::PartitionPolicy::kEstimate;
  passes::StoragePolicy storage = passes::StoragePolicy::kBuffer;  // --storage
  bool half_texels = false;                    // --texture-precision fp16: images with f16 channels
  ComputeMode precision = ComputeMode::kFp32;  // --precision (passes/precision.cpp)
  std::vector<std::string> disabled_passes;    // --disable-pass: passes skipped by name
  // Tuned kernel parameters (docs/tuning.md): from tuning_db, or the device's database in the
  // cache directory when empty; tuning false: the heuristics' (--no-tuning).
  bool tuning = true;
  std::string tuning_db;
  // Called once the kernels are generated: which way each tunable kernel was decided (its
  // notices have gone to on_notice).
  std::function<void(const TuningReport&)> on_tuning;
  // Called with what the user should hear of the options: an allowed backend that cannot run
  // (libclblast not loaded), texture storage falling back to buffers, a matrix engine the device
  // lacks; and of the tuning database: its damaged or foreign lines and impossible parameters.
  // Null: not told (the CLI prints them as notes).
  std::function<void(const std::string&)> on_notice;
  // With kMeasure: the timer to measure nodes with (not owned), so that a caller that shows the
  // measurements reads the ones the partition used (texel partition --measure); null: one of
  // the compile's own. A timer serves one thread at a time.
  NodeTimer* timer = nullptr;
  // Called after each pass (for --print-ir-after / --stats).
  std::function<void(const passes::Pass&, const passes::Stats&, const ir::Graph&)> after_pass;
  // False: CompiledModel::graph is null, and the graph goes before the constants are uploaded,
  // so that each constant's host copy is freed once it is on the device (a compile then holds
  // the weights about once, not twice: docs/artifact.md).
  bool keep_graph = true;
};

struct CompiledModel {
  std::unique_ptr<ir::Graph> graph;  // null when CompileOptions::keep_graph is false
  std::unique_ptr<runtime::Executable> executable;
  double compile_ms = 0;
};

// Imports a model with the frontend its content calls for: a linalg fragment (MLIR text; a
// `.mlir` file, or text that linalg_frontend::LooksLikeLinalg accepts) or an ONNX model.
std::unique_ptr<ir::Graph> ImportModelFile(const std::string& path,
                                           const onnx_frontend::ImportOptions& options);
// The same for a model in memory; base_dir: where ONNX external data files are looked up.
std::unique_ptr<ir::Graph> ImportModelBytes(const std::string& bytes, const std::string& base_dir,
                                            const onnx_frontend::ImportOptions& options);

// Frontend and device-independent passes only (no device needed): for --print-ir.
std::unique_ptr<ir::Graph> ImportAndOptimize(const std::string& model_path,
                                             const CompileOptions& options);

// Import and every pass for ctx's device, without lowering: the graph the tuner walks.
std::unique_ptr<ir::Graph> ImportAndOptimizeFor(const std::string& model_path,
                                                std::shared_ptr<cl::Context> ctx,
                                                const CompileOptions& options);

// The whole pipeline for ctx's device. The program binary cache is the default one.
CompiledModel Compile(const std::string& model_path, std::shared_ptr<cl::Context> ctx,
                      const CompileOptions& options);

// Compile for a model in memory: ONNX bytes or fragment text (for the C API).
CompiledModel CompileBytes(const std::string& bytes, std::shared_ptr<cl::Context> ctx,
                           const CompileOptions& options);

// Lowers an already imported graph (passes run here) for ctx's device.
// model_sha256: of the model's bytes, recorded in the plan (PlanInfo).
CompiledModel CompileGraph(std::unique_ptr<ir::Graph> graph, std::shared_ptr<cl::Context> ctx,
                           const CompileOptions& options, const std::string& model_sha256 = "");

// Compiles for a device that need not be present, described by its facts (cl::ReadDeviceFacts):
// the artifact that compiling on that device gives, without a program binary (no program is
// built here). Its kernels are the ones that device gets, so it runs there as a direct compile
// does, bit for bit. --partition measure needs the device and fails here.
runtime::Artifact CompileForDevice(const std::string& model_path, const cl::DeviceInfo& facts,
                                   const CompileOptions& options);
// The same for a model in memory (ONNX bytes or fragment text; external data relative to
// base_dir): the loaders' fuzz harnesses (tests/fuzz) compile through it.
runtime::Artifact CompileBytesForDevice(const std::string& bytes, const std::string& base_dir,
                                        const cl::DeviceInfo& facts, const CompileOptions& options);

}  // namespace texel
