// texel_gemm's operand packing (gemm_pack.h, kernels/gemm_pack.cl).
#include "codegen/opencl/gemm/gemm_pack.h"

#include <fmt/format.h>

#include "codegen/opencl/generator.h"

namespace texel::codegen {
namespace {

// The pack of one operand stored rows x k (k_major: as [k][rows]) into kp-long rows, batch entries
// apart by stride (0: one entry for the whole batch).
GemmPack PackOf(bool k_major, int64_t rows, const GemmProblem& g, int64_t kp, int64_t offset,
                int64_t ld, int64_t stride) {
  GemmPack p;
  p.k_major = k_major, p.rows = rows, p.k = g.k, p.kp = kp;
  p.elem_bytes = static_cast<int>(DTypeSize(g.elem));
  p.batch = g.batch > 1 && stride == 0 ? 1 : g.batch;
  p.offset = offset, p.ld = ld, p.stride = stride;
  return p;
}

}  // namespace

int64_t GemmPacking::elements() const { return (a ? a->elements() : 0) + (b ? b->elements() : 0); }

std::optional<GemmPacking> PackForWgmma(const GemmProblem& g) {
  bool f16 = g.mode == ComputeMode::kFp16 && g.elem == DType::kFloat16;
  bool tf32 = g.mode == ComputeMode::kTf32 && g.elem == DType::kFloat32;
  if ((!f16 && !tf32) || g.gather_b || g.k <= 0) return std::nullopt;
  // The instruction's step is 64 bytes of K; operands 16-byte aligned.
  const int64_t eb = f16 ? 2 : 4, step = 64 / eb, chunk = 16 / eb;
  bool whole = g.k % step == 0;
  int64_t kp = CeilDiv(g.k, step) * step;
  // An m- or n-contiguous operand: tf32 has no transposing instruction, and fp16's needs whole
  // tiles (a 16-byte chunk along M or N would straddle the edge).
  bool mn_ok = f16 && g.m % 128 == 0 && g.n % 128 == 0;
  bool a_fits =
      whole && (!g.trans_a || mn_ok) && Aligned(g.a_offset, g.lda, g.stride_a, g.batch, chunk);
  bool b_fits =
      whole && (g.trans_b || mn_ok) && Aligned(g.b_offset, g.ldb, g.stride_b, g.batch, chunk);
  if (a_fits && b_fits) return std::nullopt;
  GemmPacking r;
  GemmProblem& p = r.packed;
  p = g;
  if (!a_fits) {
    r.a = PackOf(g.trans_a, g.m, g, kp, g.a_offset, g.lda, g.stride_a);
    p.trans_a = false, p.a_offset = 0, p.lda = kp, p.stride_a = r.a->batch > 1 ? g.m * kp : 0;
  }
  if (!b_fits) {
    r.b = PackOf(!g.trans_b, g.n, g, kp, g.b_offset, g.ldb, g.stride_b);
    p.trans_b = true, p.b_offset = r.a ? r.a->elements() : 0, p.ldb = kp;
    p.stride_b = r.b->batch > 1 ? g.n * kp : 0;
  }
  // The zeros past K add nothing: the packed problem runs over whole steps.
  p.k = kp;
  return r;
}

// On the H200 (docs/precision.md) tf32 products packed ran faster than on the warp-tiled kernel
// from n = 512 up (16.8 against 14.5 TFLOP/s; 1.19x at 1024, 1.5-2x from 2048). fp16 ones
// (packed only for K off the step, misalignment, or m- or n-contiguous operands off the tile)
// were slower up to n = 1024 (1024 x 1024 x 1000: 84 against 103), even at 2000 (203 against
// 200) and faster from 3000 (246 against 175).
bool PackingPays(const GemmProblem& g) {
  double macs = static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
                static_cast<double>(g.batch);
  return macs >= static_cast<double>(int64_t{1} << (g.mode == ComputeMode::kTf32 ? 27 : 33));
}

std::string GemmPackClass(const GemmPack& p) {
  return fmt::format("pack k_major{} bytes{}", int{p.k_major}, p.elem_bytes);
}

KernelSpec GenerateGemmPack(const GemmPack& p, const std::string& kernel_name) {
  KernelSource src(kernel_name, "gemm_pack");
  src.Define("K_MAJOR", p.k_major).Define("T", p.elem_bytes == 2 ? "ushort" : "uint");
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
