// texel_gemm's operand packing (gemm_pack.h, kernels/gemm_pack.cl).
#include "codegen/opencl/gemm/gemm_pack.h"

#include <fmt/format.h>

#include "codegen/opencl/generator.h"

namespace texel::codegen {
namespace {

// The tf32 instruction's step: 64 bytes of K, 16 f32 elements; operands 16-byte aligned.
constexpr int64_t kStep = 16, kChunk = 4;

// The pack of one operand stored rows x k (k_major: as [k][rows]) into kp-long rows, batch entries
// apart by stride (0: one entry for the whole batch).
GemmPack PackOf(bool k_major, int64_t rows, const GemmProblem& g, int64_t kp, int64_t offset,
                int64_t ld, int64_t stride) {
  GemmPack p;
  p.k_major = k_major, p.rows = rows, p.k = g.k, p.kp = kp;
  p.batch = g.batch > 1 && stride == 0 ? 1 : g.batch;
  p.offset = offset, p.ld = ld, p.stride = stride;
  return p;
}

}  // namespace

int64_t GemmPacking::elements() const { return (a ? a->elements() : 0) + (b ? b->elements() : 0); }

std::optional<GemmPacking> PackForWgmma(const GemmProblem& g) {
  if (g.mode != ComputeMode::kTf32 || g.elem != DType::kFloat32 || g.gather_b || g.k <= 0)
    return std::nullopt;
  bool whole = g.k % kStep == 0;
  int64_t kp = CeilDiv(g.k, kStep) * kStep;
  // Readable as stored: k-contiguous, 16-byte aligned, K whole steps.
  bool a_fits = whole && !g.trans_a && Aligned(g.a_offset, g.lda, g.stride_a, g.batch, kChunk);
  bool b_fits = whole && g.trans_b && Aligned(g.b_offset, g.ldb, g.stride_b, g.batch, kChunk);
  if (a_fits && b_fits) return std::nullopt;
  GemmPacking r;
  GemmProblem& p = r.packed;
  p = g;
  p.trans_a = false, p.trans_b = true, p.k = g.k;
  if (!a_fits) {
    r.a = PackOf(g.trans_a, g.m, g, kp, g.a_offset, g.lda, g.stride_a);
    p.a_offset = 0, p.lda = kp, p.stride_a = r.a->batch > 1 ? g.m * kp : 0;
  }
  if (!b_fits) {
    r.b = PackOf(!g.trans_b, g.n, g, kp, g.b_offset, g.ldb, g.stride_b);
    p.b_offset = r.a ? r.a->elements() : 0, p.ldb = kp;
    p.stride_b = r.b->batch > 1 ? g.n * kp : 0;
  }
  // The zeros past K add nothing: the packed problem runs over whole steps.
  p.k = kp;
  return r;
}

bool PackingPays(const GemmProblem& g) {
  return static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
             static_cast<double>(g.batch) >=
         static_cast<double>(int64_t{1} << 30);
}

std::string GemmPackClass(bool k_major) { return fmt::format("pack k_major{}", k_major); }

KernelSpec GenerateGemmPack(bool k_major, const std::string& kernel_name) {
  KernelSource src(kernel_name, "gemm_pack");
  src.Define("K_MAJOR", k_major);
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.local = {32, 8, 1};
  return spec;
}

void GemmPackGeometry(const GemmPack& p, std::vector<size_t>* global, std::vector<size_t>* local) {
  *global = {static_cast<size_t>(CeilDiv(p.kp, 32) * 32),
             static_cast<size_t>(CeilDiv(p.rows, 32) * 8), static_cast<size_t>(p.batch)};
  *local = {32, 8, 1};
}

}  // namespace texel::codegen
