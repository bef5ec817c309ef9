// The CPU convolution family "conv_blocked" (kernels/conv_blocked.cl): register-blocked direct
// loops over filters packed at compile time by blocks of output channels. Its points are
// {voc: output channels per vector (8 or 16), rw: output pixels per work-item along the row};
// the heuristic takes one 16-wide vector (one AVX-512 register; two AVX2 ones) and the row
// block of 6 to 14 pixels that wastes least of the row (docs/tuning.md). Thread safety: pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/opencl/generator.h"
#include "codegen/opencl/tuning.h"

namespace texel::codegen {

// The family's space for Conv node n on target t, or nullopt where it does not apply (GPUs,
// depthwise convolutions, filters that are not constants, storage other than f32).
std::optional<Tunable> ConvBlockedTunable(const ir::Node& n, const Target& t);

// The kernel for n at point p (a candidate of ConvBlockedTunable).
KernelSpec GenerateConvBlocked(const ir::Node& n, const std::string& kernel_name,
                               const TunePoint& p, const Chain& epilogue);

}  // namespace texel::codegen
