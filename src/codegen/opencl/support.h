// What a backend asks of the native generator before lowering, answered from a node's op, types,
// attributes and shapes without generating its kernels (partition asks of every node; lowering
// then generates each kernel once). The generators run the same checks before they emit
// anything, so a refusal is the generator's own; refusals of a chosen point (a tuned or forced
// attention or GEMM tiling) are not the node's and are not checked here.
// Thread safety: pure functions.
#pragma once

#include "codegen/opencl/generator.h"

namespace texel::codegen {

// Throws the Error(kUnsupported) that generating node's kernels on target would (which op, which
// dtype, which attribute); returns when the native generator has a kernel for it.
void CheckNode(const ir::Node& node, const Target& target);

// The declared cost of a node's kernels: the arithmetic (flops, as KernelSpec::flops counts it)
// and whether the product gathers its B operand element by element (a transposed B, an im2col
// window), which costs about a third more (NativeBackend::Estimate).
struct KernelTraits {
  double flops = 0;
  bool gathers_b = false;
};
KernelTraits TraitsOf(const ir::Node& node, const Target& target);

}  // namespace texel::codegen
