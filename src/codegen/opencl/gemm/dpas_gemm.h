// texel_gemm's fp16 mode on Intel's matrix engine (kernels/dpas_gemm.cl), through
// cl_intel_subgroup_matrix_multiply_accumulate's intel_sub_group_f16_f16_matrix_mad_k16: the same
// problems and kernel arguments as the warp-tiled GEMM (warp_gemm.h). Written against the
// extension's specification without a device that has it: its selection and its source are
// tested (the source through an OpenCL C front end with the extension's declarations, and run on
// a CPU with the function emulated from its definition). Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "codegen/opencl/gemm/warp_gemm.h"

namespace texel::codegen {

// Whether g runs on the device's Intel matrix engine: fp16 mode (f32 or f16 storage) on a target
// with Target::dpas_sub_group.
bool DpasApplies(const GemmProblem& g, const Target& t);

// g's shape class (the facts the kernel's source depends on) and its kernel; MT x NT blocks of
// 8 x subgroup-size per work-group (one subgroup).
std::string DpasGemmClass(const GemmProblem& g, const Target& t);
KernelSpec GenerateDpasGemm(const GemmProblem& g, const std::string& kernel_name, const Target& t);
void DpasGemmGeometry(const GemmProblem& g, const Target& t, std::vector<size_t>* global,
                      std::vector<size_t>* local);

// The OpenCL C declarations of the extension's fp16 functions (both subgroup sizes), for
// compiling the kernel's source where the extension is absent (tests).
extern const char* const kDpasDeclarations;

}  // namespace texel::codegen
