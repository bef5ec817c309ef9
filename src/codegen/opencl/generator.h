// The native code generator: one OpenCL C kernel per core-IR node, from the templates in
// kernels/. One generator per op family (generate_*.cpp). Throws Error(kUnsupported) for an
// op/dtype combination it has no kernel for. Thread safety: pure functions.
#pragma once

#include <string>

#include "codegen/opencl/kernel_spec.h"
#include "ir/graph.h"

namespace texel::codegen {

// The device facts generators use, filled by the backend from the device it lowers for.
struct Target {
  bool fp64 = false;  // cl_khr_fp64: float64 tensors in elementwise, movement and reductions
};

KernelSpec GenerateKernel(const ir::Node& node, const std::string& kernel_name,
                          const Target& target);

// Family generators, dispatched by op class.
KernelSpec GeneratePointwise(const ir::Node& node, const std::string& kernel_name);
KernelSpec GenerateConv(const ir::Node& node, const std::string& kernel_name);
KernelSpec GenerateConvTranspose(const ir::Node& node, const std::string& kernel_name);
KernelSpec GeneratePool(const ir::Node& node, const std::string& kernel_name);
KernelSpec GenerateMatMul(const ir::Node& node, const std::string& kernel_name);
KernelSpec GenerateReduce(const ir::Node& node, const std::string& kernel_name);
KernelSpec GenerateSoftmax(const ir::Node& node, const std::string& kernel_name);

// The pointwise body of a Resize node (generate_resize.cpp).
std::string ResizeBody(const ir::Node& node);

// Helpers shared by generators.
std::string CoordsCode(const Shape& shape);  // "long t = i; const long c1 = t % 5; ..."
// sum_d c_d * strides[d] over non-zero strides ("0" when none).
std::string OffsetExpr(const std::vector<int64_t>& strides);
size_t RoundUp(size_t x, size_t m);
void RequireFloat32(const ir::Node& node);

}  // namespace texel::codegen
