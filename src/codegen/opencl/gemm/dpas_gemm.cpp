// Intel matrix-engine GEMM kernels (kernels/dpas_gemm.cl).
#include "codegen/opencl/gemm/dpas_gemm.h"

#include <fmt/format.h>

#include "core/error.h"

namespace texel::codegen {
namespace {

// Blocks of 8 x SG per work-group: 4 x 2 (32 x 16 or 32 x 32 results a subgroup).
constexpr int kMt = 4, kNt = 2;

}  // namespace

const char* const kDpasDeclarations =
    "float8 __attribute__((overloadable)) intel_sub_group_f16_f16_matrix_mad_k16(int8 a, int8 b, "
    "float8 acc);\n"
    "float8 __attribute__((overloadable)) intel_sub_group_f16_f16_matrix_mad_k16(short8 a, int8 "
    "b, float8 acc);\n";

bool DpasApplies(const GemmProblem& g, const Target& t) {
  return (t.dpas_sub_group == 8 || t.dpas_sub_group == 16) && g.mode == ComputeMode::kFp16 &&
         (g.elem == DType::kFloat32 || g.elem == DType::kFloat16);
}

std::string DpasGemmClass(const GemmProblem& g, const Target& t) {
  return fmt::format("dpas sg{} t{}{} {} emulated{}", t.dpas_sub_group, g.trans_a, g.trans_b,
                     DTypeName(g.elem), t.mma_emulated);
}

void DpasGemmGeometry(const GemmProblem& g, const Target& t, std::vector<size_t>* global,
                      std::vector<size_t>* local) {
  int64_t sg = t.dpas_sub_group;
  *global = {static_cast<size_t>((g.n + sg * kNt - 1) / (sg * kNt) * sg),
             static_cast<size_t>((g.m + 8 * kMt - 1) / (8 * kMt)), static_cast<size_t>(g.batch)};
  *local = {static_cast<size_t>(sg), 1, 1};
}

KernelSpec GenerateDpasGemm(const GemmProblem& g, const std::string& kernel_name, const Target& t) {
  if (!DpasApplies(g, t))
    Fail(ErrorCode::kUnsupported, "texel_gemm: {} on {} elements has no Intel matrix-engine kernel",
         ComputeModeName(g.mode), DTypeName(g.elem));
  bool half = g.elem == DType::kFloat16;
  int sg = static_cast<int>(t.dpas_sub_group);
  KernelSource src(kernel_name, "dpas_gemm");
  src.Define("SG", sg).Define("MT", kMt).Define("NT", kNt);
  DefineOperandOffsets(src, g.trans_a, g.trans_b);
  src.Define("F16_STORAGE", half).Define("T_STORE", half ? "half" : "float");
  src.Define("GLOAD(p, i)", half ? "vload_half((i), (p))" : "(p)[i]");
  src.Define("GSTORE(p, i, v)", half ? "vstore_half_rte((v), (i), (p))" : "(p)[i] = (v)");
  src.Define("EMULATED", t.mma_emulated);
  src.Define("TO_F16", kernel_name + "_to_f16").Define("DPAS_EMU", kernel_name + "_dpas");
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  DpasGemmGeometry(g, t, &spec.global, &spec.local);
  spec.flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
               static_cast<double>(g.k) * static_cast<double>(g.batch);
  return spec;
}

}  // namespace texel::codegen
