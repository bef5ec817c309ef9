// The CPU family "window_rows" (kernels/window_rows.cl): depthwise convolution and max pooling
// vectorised along the output row. Its points are {vw: outputs per vector (4, 8 or 16), rh:
// output rows per work-item}; the heuristic takes the widest vector the row fills and as many
// rows per work-item as leave at least 64 work-items (docs/tuning.md). Thread safety: pure.
#pragma once

#include <optional>
#include <string>

#include "codegen/opencl/generator.h"
#include "codegen/opencl/tuning.h"

namespace texel::codegen {

// The family's space for node n (a depthwise Conv, a MaxPool without indices) on target t, or
// nullopt where it does not apply (GPUs, storage other than f32).
std::optional<Tunable> WindowRowsTunable(const ir::Node& n, const Target& t);

// The kernel for n at point p (a candidate of WindowRowsTunable).
KernelSpec GenerateWindowRows(const ir::Node& n, const std::string& kernel_name, const TunePoint& p,
                              const Chain& epilogue);

}  // namespace texel::codegen
