// Plan: everything needed to run a compiled model, as plain data — the OpenCL program source,
// the buffers (sizes, constant contents), the graph's inputs and outputs, and the steps in
// order. Backends produce it; the runtime consumes it (and an artifact can store it).
// Thread safety: a plain value, immutable once built.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "runtime/texture_pool.h"

namespace texel::runtime {

struct BufferDesc {
  int64_t bytes = 0;
  ConstTensorPtr constant;  // uploaded once when the executable is created
  // An image (texture storage, core/texture_layout.h) when image_width > 0: RGBA texels of f32,
  // or with image_half f16; a constant image holds its texels, packed.
  int64_t image_width = 0, image_height = 0;
  bool image_half = false;
  // Zero when a session starts, and left zero by the kernels after each run (work-group arrival
  // counters): its own buffer per session, never in the arena.
  bool zeroed = false;
  // Part of another buffer: bytes [alias_offset, alias_offset + bytes) of buffer alias_of (the
  // inputs of a Concat written in place into its output, backends/lower.cpp; memory planning
  // places them there). -1: memory of its own.
  int alias_of = -1;
  int64_t alias_offset = 0;
  bool is_image() const { return image_width > 0; }
};

struct TensorBinding {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;  // for a data-dependent output: the most rows it can have
  int buffer = -1;
  int rows_buffer = -1;  // when >= 0: an i64 count of the valid leading rows of an output
};

// One step: a kernel launch, or (call not empty) a library routine (runtime/library_call.h).
struct KernelStep {
  std::string kernel;              // kernel function name in the program
  std::vector<int> buffers;        // buffer index per kernel parameter (or routine buffer argument)
  std::string call;                // a registered library routine ("clblast.sgemm"), or empty
  std::vector<int64_t> call_args;  // its integer arguments
  std::vector<size_t> global, local;
  std::string node;     // IR node name, for profiles and errors
  std::string op;       // core op name
  std::string backend;  // which backend lowered it
  double flops = 0;
  double bytes = 0;  // bytes read + written
};

// Where the intermediate buffers live: one arena, each planned buffer at an offset
// (runtime/memory_plan.h fills it in). Empty when not planned: every buffer is then its own.
struct MemoryPlan {
  int64_t alignment = 1;         // bytes; every offset is a multiple of it
  int64_t arena_bytes = 0;       // the arena's size: the plan's peak
  int64_t lower_bound = 0;       // max over steps of the bytes of the planned buffers live there
  int64_t unshared_bytes = 0;    // the planned buffers' sum: the memory without sharing
  std::vector<int64_t> offsets;  // buffer index -> offset in the arena; -1 outside it
  int64_t constant_bytes = 0;    // outside the arena: uploaded once per Executable
  // Outside the arena, one set per Session: graph inputs and outputs, and arrival counters.
  int64_t io_bytes = 0;
  // Image values live in the texture pool (runtime/texture_pool.h): buffer index -> block, -1
  // for buffers; the pool's blocks, and the bytes of the images without sharing.
  std::vector<int> texture_block;
  std::vector<TextureBlock> texture_blocks;
  int64_t texture_pool_bytes = 0, texture_unshared_bytes = 0;
};

// Where a plan came from: stored in artifacts and shown by `texel inspect`; running ignores it.
// Nothing here may vary between two compilations of the same model with the same options on the
// same device (artifacts are reproducible byte for byte).
struct PlanInfo {
  std::string texel_version;  // of the compiler that made it
  std::string options;        // the compile options, spelled as the CLI's flags
  std::string model_sha256;   // of the model's bytes (ONNX or linalg text)
  // The device it was compiled for: kernels are shaped for its facts, and program binaries are
  // valid for it alone.
  std::string device_name, device_vendor, device_type, driver_version, platform_version,
      device_version;
};

// What the program needs of a device beyond OpenCL C 1.2 and the extensions it enables: the
// union of what its kernels' generators declared (codegen KernelSpec; templates keep disabled
// PTX paths in their text, so the source alone cannot tell).
struct DeviceNeeds {
  bool inline_ptx = false;    // `__asm` PTX: NVIDIA's OpenCL
  bool tensor_cores = false;  // mma.sync: compute capability 8.0 or newer
};

// The build option of plans with divisions marked exact (passes/precision.cpp): only devices with
// CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT take it.
inline constexpr const char* kCorrectDivideOption = "-cl-fp32-correctly-rounded-divide-sqrt";

struct Plan {
  PlanInfo info;
  DeviceNeeds needs;
  std::string source;
  std::string build_options;
  std::vector<BufferDesc> buffers;
  std::vector<TensorBinding> inputs, outputs;
  std::vector<KernelStep> steps;
  MemoryPlan memory;
};

}  // namespace texel::runtime
