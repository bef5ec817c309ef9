// Warpgroup-MMA GEMM kernels (wgmma_gemm.h, kernels/wgmma_gemm.cl).
#include "codegen/opencl/gemm/wgmma_gemm.h"

#include <fmt/format.h>

#include "core/error.h"

namespace texel::codegen {
namespace {

// 128 x 128 tiles of two warpgroups, 3 stages of 16 KiB: on the H100 at n = 4096
// (docs/precision.md) 408-419 TFLOP/s in fp16 and 236-242 in tf32 timed product by product,
// 355-367 and 189-194 in texel_gemm_bench's sustained runs; 128 x 256 tiles in 2 stages (all
// that fits 48 KiB) 199 and 110, 64 x 128 in 4 stages 304 and 152.
constexpr int kBm = 128, kBn = 128, kStages = 3;

int ElemBytes(const GemmProblem& g) { return g.elem == DType::kFloat16 ? 2 : 4; }

// The instruction over d[kBn / 2] with descriptors da and db (operands 0 .. kBn / 2 - 1 the
// accumulators, then the descriptors and the scale-d flag); in fp16 with the flags that
// transpose an m- or n-contiguous operand.
std::string WgmmaMacro(const GemmProblem& g) {
  bool f16 = g.mode == ComputeMode::kFp16;
  std::string regs, operands;
  const int n = kBn / 2;
  for (int i = 0; i < n; ++i) {
    regs += fmt::format("{}%{}", i ? "," : "", i);
    operands += fmt::format("{}\"+f\"(d[{}])", i ? ", " : "", i);
  }
  std::string shape =
      f16 ? fmt::format("m64n{}k16.f32.f16.f16", kBn) : fmt::format("m64n{}k8.f32.tf32.tf32", kBn);
  // fp16 takes the transpose flags (1: the operand is m- or n-contiguous); tf32 has none.
  std::string tail =
      f16 ? fmt::format("p, 1, 1, {}, {}", g.trans_a ? 1 : 0, g.trans_b ? 0 : 1) : "p, 1, 1";
  return fmt::format(
      "__asm volatile(\"// sm_90a: {{ .reg .pred p; setp.ne.b32 p, %{}, 0; "
      "wgmma.mma_async.sync.aligned.{} {{{}}}, %{}, %{}, {}; }}\" : {} : \"l\"(da), \"l\"(db), "
      "\"r\"(1) : \"memory\")",
      n + 2, shape, regs, n, n + 1, tail, operands);
}

}  // namespace

bool WgmmaApplies(const GemmProblem& g, const Target& t) {
  if (!t.wgmma || g.gather_b || g.k <= 0) return false;
  bool f16 = g.mode == ComputeMode::kFp16 && g.elem == DType::kFloat16;
  // tf32 has no transposing instruction: both operands k-contiguous.
  bool tf32 = g.mode == ComputeMode::kTf32 && g.elem == DType::kFloat32 && !g.trans_a && g.trans_b;
  if (!f16 && !tf32) return false;
  int64_t chunk = 16 / ElemBytes(g);  // elements per 16 bytes
  // In fp16, enough tiles for every compute unit: at n = 1024 (64 tiles on 132 units) the
  // warp-tiled kernel's 64 x 64 tiles were faster (124 against 114 TFLOP/s on the H100). In tf32
  // this kernel was faster there too (72.9 against 65.9).
  int64_t tiles = g.m / kBm * (g.n / kBn) * g.batch;
  if (f16 && tiles < static_cast<int64_t>(t.compute_units)) return false;
  return g.m % kBm == 0 && g.n % kBn == 0 && g.k % (64 / ElemBytes(g)) == 0 &&
         Aligned(g.a_offset, g.lda, g.stride_a, g.batch, chunk) &&
         Aligned(g.b_offset, g.ldb, g.stride_b, g.batch, chunk) &&
         t.max_work_group_size >= static_cast<size_t>(kBm / 64 * 128);
}

std::string WgmmaGemmClass(const GemmProblem& g) {
  return fmt::format("wgmma {}x{} s{} {} {}{}", kBm, kBn, kStages, ComputeModeName(g.mode),
                     g.trans_a ? "t" : "n", g.trans_b ? "t" : "n");
}

void WgmmaGemmGeometry(const GemmProblem& g, std::vector<size_t>* global,
                       std::vector<size_t>* local) {
  size_t wg = kBm / 64 * 128;
  *global = {static_cast<size_t>(g.m / kBm) * wg, static_cast<size_t>(g.n / kBn),
             static_cast<size_t>(g.batch)};
  *local = {wg, 1, 1};
}

KernelSpec GenerateWgmmaGemm(const GemmProblem& g, const std::string& kernel_name,
                             const Target& t) {
  if (!WgmmaApplies(g, t))
    Fail(ErrorCode::kInvalidArgument,
         "texel_gemm: the warpgroup kernel does not take this problem");
  KernelSource src(kernel_name, "wgmma_gemm");
  src.Define("BM", kBm).Define("BN", kBn).Define("STAGES", kStages).Define("ELEM", ElemBytes(g));
  DefineStorage(src, g.elem);
  src.Define("TRANS_A", g.trans_a).Define("TRANS_B", g.trans_b);
  src.Define("WGMMA(d, da, db)", WgmmaMacro(g));
  DefineAsyncCopy(src, t);
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.inline_ptx = spec.tensor_cores = true;
  WgmmaGemmGeometry(g, &spec.global, &spec.local);
  spec.flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) *
               static_cast<double>(g.k) * static_cast<double>(g.batch);
  return spec;
}

}  // namespace texel::codegen
