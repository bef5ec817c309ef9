// The CPU family "window_rows": depthwise convolution and max pooling vectorised along the output
// row, in one of two kernels (`shift`): kernels/window_rows.cl (0; it also serves conv_blocked's
// variant along the row) takes vectors whose windows stay inside the row and the outputs near its
// ends one at a time; kernels/window_shift.cl (1; stride 1 or 2) takes whole rows in chunks of vw
// outputs, shifting the lanes near the row's ends in from the neighbouring chunks. Its points are
// {rh: output rows per work-item, shift, vw: outputs per vector (4, 8 or 16)}; the heuristic takes
// the shift kernel where it applies, with the narrowest vector that covers a row of up to 16
// (else 16), and as many rows per work-item as leave at least 64 work-items (docs/tuning.md).
// Thread safety: pure.
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

// The same kernel for a (dense or grouped) Conv n with constant filters, packed by blocks of wm
// output channels: wm output channels x vw pixels per work-item, one row (conv_blocked.h's
// variant along the row).
KernelSpec GenerateConvRows(const ir::Node& n, const std::string& kernel_name, int64_t vw,
                            int64_t wm, const Chain& epilogue);

}  // namespace texel::codegen
