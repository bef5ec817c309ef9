// texel_gemm's engine (api/gemm.h) and the warp-tiled GEMM (codegen/opencl/gemm/warp_gemm.h) on
// this device, against a double-precision host reference: fp32 for real; tf32, tf32x3 and fp16
// through the kernel's emulation of the matrix engine's rounding (the PTX fragments run on the
// GPU only). Problems with transposes, odd sizes, leading dimensions past the row, offsets,
// strided batches, alpha and beta, f32 and f16 storage.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "api/gemm.h"
#include "backends/native/native_backend.h"
#include "codegen/opencl/gemm/dpas_gemm.h"
#include "codegen/opencl/gemm/wgmma_gemm.h"
#include "core/error.h"
#include "core/tensor.h"
#include "kernel_test_util.h"
#include "runtime/cl/fault_injection.h"
#include "runtime/cl/ptx_sm90a.h"

namespace texel {
namespace {

using codegen::GemmProblem;
using codegen::WarpGemmParams;

// cvt.rna.tf32.f32 on the host.
float RoundTf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &u, 4);
  return x;
}

// The operand value the mode computes with.
double AsComputed(float x, ComputeMode mode, bool raw_tf32) {
  if (mode == ComputeMode::kTf32 && raw_tf32) {  // the engine truncating the mantissa
    uint32_t u;
    std::memcpy(&u, &x, 4);
    u &= 0xffffe000u;
    std::memcpy(&x, &u, 4);
    return x;
  }
  if (mode == ComputeMode::kTf32) return RoundTf32(x);
  if (mode == ComputeMode::kFp16) return HalfToFloat(FloatToHalf(x));
  return x;
}

// A buffer of `count` elements of g.elem, random in [-1, 1] (exactly representable in f16 when
// stored as f16), and its float values.
struct Operand {
  std::vector<float> values;
  cl::Buffer buffer;
};

Operand MakeOperand(const cl::Context& ctx, int64_t count, DType elem, uint32_t seed) {
  Operand op;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  op.values.resize(static_cast<size_t>(count));
  std::vector<uint16_t> half(op.values.size());
  for (size_t i = 0; i < op.values.size(); ++i) {
    float v = dist(rng);
    half[i] = FloatToHalf(v);
    op.values[i] = elem == DType::kFloat16 ? HalfToFloat(half[i]) : v;
  }
  size_t eb = DTypeSize(elem);
  op.buffer = cl::Buffer(ctx, op.values.size() * eb);
  op.buffer.Write(ctx,
                  elem == DType::kFloat16 ? static_cast<const void*>(half.data())
                                          : static_cast<const void*>(op.values.data()),
                  op.values.size() * eb);
  return op;
}

std::vector<float> ReadBack(const cl::Context& ctx, const cl::Buffer& b, size_t count, DType elem) {
  std::vector<float> out(count);
  if (elem == DType::kFloat16) {
    std::vector<uint16_t> h(count);
    b.Read(ctx, h.data(), count * 2);
    for (size_t i = 0; i < count; ++i) out[i] = HalfToFloat(h[i]);
  } else {
    b.Read(ctx, out.data(), count * 4);
  }
  return out;
}

// Runs g through the engine (on `target`) and checks every element of C against the host:
// |got - want| <= tol * sum_k |a b| (+ half's rounding of the result with f16 storage), with
// want from the operands as the mode computes with them. Returns the largest error relative to
// sum |a b| against the exact fp32 operands, to show that a rounding mode did round.
double RunAndCheck(const GemmProblem& g, float alpha, float beta, const codegen::Target& target,
                   const WarpGemmParams* params, const std::string& what, double rel = 2e-6,
                   std::string* wgmma_failure = nullptr,
                   const codegen::WgmmaTiling* wgmma = nullptr) {
  const auto& ctx = testing::SharedContext();
  int64_t a_rows = g.trans_a ? g.k : g.m, b_rows = g.trans_b ? g.n : g.k;
  auto extent = [&](int64_t off, int64_t rows, int64_t ld, int64_t stride) {
    return off + (g.batch - 1) * stride + rows * ld;
  };
  Operand a = MakeOperand(*ctx, extent(g.a_offset, a_rows, g.lda, g.stride_a), g.elem, 11);
  Operand b = MakeOperand(*ctx, extent(g.b_offset, b_rows, g.ldb, g.stride_b), g.elem, 12);
  Operand c = MakeOperand(*ctx, extent(g.c_offset, g.m, g.ldc, g.stride_c), g.elem, 13);
  if (beta == 0) {  // beta 0 must not read C: NaNs there stay out of the result
    std::vector<uint8_t> nan(c.buffer.bytes(), 0xff);
    c.buffer.Write(*ctx, nan.data(), nan.size());
  }
  api::GemmKernels kernels(ctx);
  api::GemmOperands ops{a.buffer.mem(), b.buffer.mem(), c.buffer.mem(), alpha, beta};
  codegen::Target check = target;
  check.mma_sync = true;  // the emulation stands in for the matrix engine
  api::CheckGemm(g, ops, check);
  // beta 0: twice, so that split K's arrival counters, which each product leaves at 0 for the
  // next, would show if they were not.
  for (int run = 0; run < (beta == 0 ? 2 : 1); ++run) {
    cl::Event done;
    kernels.Enqueue(g, ops, nullptr, {}, done.out(), target, params, wgmma);
    done.Wait();
  }
  if (wgmma_failure) *wgmma_failure = kernels.wgmma_failure();
  const std::string ran = kernels.KernelClass(g, target, params, wgmma);
  std::vector<float> got = ReadBack(*ctx, c.buffer, c.values.size(), g.elem);
  // The warpgroup kernel reads tf32 operands from local memory as stored: the engine truncates.
  const bool raw = params ? params->raw_tf32 : ran.starts_with("wgmma");
  double worst_exact = 0;
  int bad = 0;
  for (int64_t bi = 0; bi < g.batch; ++bi)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double want = 0, exact = 0, scale = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          int64_t ai = g.a_offset + bi * g.stride_a + (g.trans_a ? kk * g.lda + i : i * g.lda + kk);
          int64_t bj = g.b_offset + bi * g.stride_b + (g.trans_b ? j * g.ldb + kk : kk * g.ldb + j);
          float x = a.values[ai], y = b.values[bj];
          want += AsComputed(x, g.mode, raw) * AsComputed(y, g.mode, raw);
          exact += double{x} * y;
          scale += std::fabs(double{x} * y);
        }
        int64_t ci = g.c_offset + bi * g.stride_c + i * g.ldc + j;
        double old = beta == 0 ? 0 : beta * double{c.values[ci]};
        want = alpha * want + old;
        exact = alpha * exact + old;
        scale = std::fabs(alpha) * scale + std::fabs(old) + 1e-30;
        double tol = rel * scale + (g.elem == DType::kFloat16 ? 1e-3 * std::fabs(want) : 0);
        double err = std::fabs(got[ci] - want);
        if (!(err <= tol) && bad++ < 5)
          ADD_FAILURE() << what << ": C[" << bi << "][" << i << "][" << j << "] = " << got[ci]
                        << ", want " << want << " (tolerance " << tol << ")";
        worst_exact = std::max(worst_exact, std::fabs(got[ci] - exact) / scale);
      }
  // Elements of C before its offset are untouched.
  for (int64_t ci = 0; ci < g.c_offset; ++ci)
    if (beta != 0) {
      EXPECT_EQ(got[ci], c.values[ci]) << what << ": C[" << ci << "] written";
    }
  EXPECT_EQ(bad, 0) << what;
  return worst_exact;
}

codegen::Target Emulated() {
  codegen::Target t = backends::NativeBackend::TargetOf(testing::SharedContext()->info());
  t.mma_sync = false;
  return t;
}

TEST(GemmTest, Fp32EveryLayout) {
  WarpGemmParams small{32, 32, 16, 16, 16};
  struct Case {
    bool ta, tb;
    DType elem;
  };
  for (Case cs : {Case{false, false, DType::kFloat32}, Case{true, false, DType::kFloat32},
                  Case{false, true, DType::kFloat16}, Case{true, true, DType::kFloat32}}) {
    GemmProblem g;
    g.m = 37, g.n = 45, g.k = 29, g.batch = 2;
    g.trans_a = cs.ta, g.trans_b = cs.tb, g.elem = cs.elem, g.mode = ComputeMode::kFp32;
    g.lda = (cs.ta ? g.m : g.k) + 3, g.ldb = (cs.tb ? g.k : g.n) + 1, g.ldc = g.n + 2;
    g.a_offset = 5, g.b_offset = 0, g.c_offset = 7;
    g.stride_a = (cs.ta ? g.k : g.m) * g.lda + 4, g.stride_b = 0;  // B broadcast over the batch
    g.stride_c = g.m * g.ldc;
    RunAndCheck(
        g, 0.75f, cs.ta ? 0.0f : -0.5f, Emulated(), &small,
        fmt::format("fp32 {}{} {}", cs.ta ? "T" : "N", cs.tb ? "T" : "N", DTypeName(cs.elem)));
  }
}

// k = 0: C = beta C, and A is not read (its buffer may hold nothing: A transposed is 0 x m).
TEST(GemmTest, EmptyDepthScalesC) {
  GemmProblem g;
  g.m = 9, g.n = 7, g.k = 0, g.trans_a = true, g.lda = g.m + 2, g.ldb = g.n, g.ldc = g.n;
  g.mode = ComputeMode::kFp32;
  RunAndCheck(g, 1.0f, 0.5f, Emulated(), nullptr, "k = 0");
}

// The heuristic on a device with little local memory and small work-groups falls back to
// tiles that fit, and they compute the same.
TEST(GemmTest, HeuristicFitsSmallDevices) {
  codegen::Target small = Emulated();
  small.compute_units = 4, small.local_mem_bytes = 16 * 1024, small.max_work_group_size = 128;
  GemmProblem g;
  g.m = 300, g.n = 260, g.k = 40, g.lda = 40, g.ldb = 260, g.ldc = 260, g.mode = ComputeMode::kFp32;
  WarpGemmParams p = codegen::ChooseWarpGemmParams(g, small);
  EXPECT_FALSE(codegen::CheckWarpGemmParams(p, g, small)) << p.ToString();
  RunAndCheck(g, 1.0f, 0.0f, small, nullptr, "small device " + p.ToString());
}

TEST(GemmTest, HeuristicTilesOnAnEvenProblem) {
  GemmProblem g;
  g.m = 128, g.n = 256, g.k = 48, g.lda = 48, g.ldb = 256, g.ldc = 256;
  g.mode = ComputeMode::kFp32;
  RunAndCheck(g, 1.0f, 0.0f, Emulated(), nullptr, "fp32 even");
}

// Tiles for an H100 (132 compute units): 128 x 128 where they fill it; where they do not (n =
// 1024), fp16 takes 64 x 64 tiles for texel_gemm and 128 x 64 for a model's product (whose
// few tiles ChooseModelWarpGemm refines), tf32 128 x 64.
TEST(GemmTest, HeuristicTilesByProblemSize) {
  codegen::Target t = testing::H100Target();
  t.mma_sync = true;
  auto chosen = [&](int64_t n, ComputeMode mode, bool model) {
    GemmProblem g;
    g.m = g.n = g.k = g.lda = g.ldb = g.ldc = n;
    g.mode = mode, g.elem = mode == ComputeMode::kFp16 ? DType::kFloat16 : DType::kFloat32;
    return codegen::ChooseWarpGemmParams(g, t, model).ToString();
  };
  EXPECT_EQ(chosen(4096, ComputeMode::kFp16, false), "warp 128x128x32 / 64x32");
  EXPECT_EQ(chosen(1024, ComputeMode::kFp16, false), "warp 64x64x32 / 32x32 s4");
  EXPECT_EQ(chosen(1024, ComputeMode::kFp16, true), "warp 128x64x32 / 64x32 s3");
  EXPECT_EQ(chosen(1024, ComputeMode::kTf32, false), "warp 128x64x16 / 64x32 s3");
}

// Split K in texel_gemm's kernel (warp_gemm.cl FIXUP): each range's work-group stores its
// slice, the tile's last adds them up in order and applies alpha and beta. Odd sizes, every
// layout, batches, offsets, f32 and f16 storage, every mode (the engine's through the emulation).
TEST(GemmTest, SplitKAddedUpByTheLastWorkGroup) {
  codegen::Target t = Emulated();
  if (!t.group_handoff) GTEST_SKIP() << "this device's work-groups do not hand results over";
  for (ComputeMode mode :
       {ComputeMode::kFp32, ComputeMode::kTf32, ComputeMode::kTf32x3, ComputeMode::kFp16})
    for (int layout = 0; layout < 4; ++layout) {
      GemmProblem g;
      g.mode = mode, g.trans_a = layout & 1, g.trans_b = layout >> 1;
      g.elem = mode == ComputeMode::kFp16 && layout % 2 ? DType::kFloat16 : DType::kFloat32;
      g.m = 37, g.n = 45, g.k = 300, g.batch = 2;
      g.lda = (g.trans_a ? g.m : g.k) + 1, g.ldb = (g.trans_b ? g.k : g.n) + 2, g.ldc = g.n + 3;
      g.a_offset = 3, g.c_offset = 5;
      g.stride_a = (g.trans_a ? g.k : g.m) * g.lda, g.stride_b = 0, g.stride_c = g.m * g.ldc + 1;
      WarpGemmParams p{32, 32, 16, 16, 16};
      p.split_k = 3;  // ranges of 112, 112 and 76
      ASSERT_FALSE(codegen::CheckGemmSplit(g, p, t));
      RunAndCheck(
          g, 1.25f, layout == 1 ? 0.5f : 0.0f, t, &p,
          fmt::format("{} {} layout {} split 3", ComputeModeName(mode), DTypeName(g.elem), layout),
          1e-5);
    }
}

// The heuristic splits K where the tiles leave compute units idle and K is deep (a transformer
// layer's 128 rows on an H100: 96 steps or more), into as many ranges as K then makes; not
// without hand-over between work-groups, not where the tiles fill the device, not for shallow K.
TEST(GemmTest, HeuristicSplitsDeepProblemsOfFewTiles) {
  codegen::Target t = testing::H100Target();
  t.mma_sync = t.group_handoff = true;
  auto chosen = [&](int64_t m, int64_t n, int64_t k, const codegen::Target& target) {
    GemmProblem g;
    g.m = m, g.n = n, g.k = k, g.lda = k, g.ldb = n, g.ldc = n, g.mode = ComputeMode::kTf32;
    WarpGemmParams p = codegen::ChooseWarpGemmParams(g, target);
    EXPECT_FALSE(codegen::CheckGemmSplit(g, p, target)) << p.ToString();
    return p;
  };
  WarpGemmParams p = chosen(128, 768, 3072, t);
  EXPECT_GT(p.split_k, 4) << p.ToString();
  EXPECT_GE(12 * p.split_k, 66) << "half the compute units at least";
  EXPECT_EQ(chosen(128, 3072, 768, t).split_k, 1) << "48 steps of 16";
  EXPECT_EQ(chosen(4096, 4096, 4096, t).split_k, 1);
  EXPECT_EQ(chosen(1024, 1024, 1024, t).split_k, 1) << "128 tiles on 132 units";
  codegen::Target no_handoff = t;
  no_handoff.group_handoff = false;
  EXPECT_EQ(chosen(128, 768, 3072, no_handoff).split_k, 1);
  // On this device: a one-tile problem splits over its compute units and computes.
  codegen::Target here = Emulated();
  GemmProblem g;
  g.m = 40, g.n = 40, g.k = 2100, g.lda = 2100, g.ldb = 40, g.ldc = 40;
  g.mode = ComputeMode::kFp32;
  WarpGemmParams mine = codegen::ChooseWarpGemmParams(g, here);
  if (here.group_handoff && here.compute_units > 1) {
    EXPECT_GT(mine.split_k, 1);
  }
  RunAndCheck(g, 1.0f, 0.0f, here, nullptr, "heuristic " + mine.ToString(), 1e-5);
}

// A split problem's scratch is the queue's: the same product on nine in-order queues (one more
// than texel keeps scratch for) gives the same bits on each; an out-of-order queue does not
// split, and refuses a split asked for.
TEST(GemmTest, SplitKScratchPerQueue) {
  const auto& ctx = testing::SharedContext();
  codegen::Target t = Emulated();
  if (!t.group_handoff || t.compute_units < 2) GTEST_SKIP() << "no split on this device";
  GemmProblem g;
  g.m = 40, g.n = 40, g.k = 2048, g.lda = 2048, g.ldb = 40, g.ldc = 40;
  g.mode = ComputeMode::kFp32;
  Operand a = MakeOperand(*ctx, g.m * g.k, g.elem, 1), b = MakeOperand(*ctx, g.k * g.n, g.elem, 2);
  api::GemmKernels kernels(ctx);
  auto run = [&](cl_command_queue q, const WarpGemmParams* p = nullptr) {
    cl::Buffer c(*ctx, g.m * g.n * 4);
    api::GemmOperands ops{a.buffer.mem(), b.buffer.mem(), c.mem(), 1.0f, 0.0f};
    cl::Event done;
    kernels.Enqueue(g, ops, q, {}, done.out(), t, p);
    done.Wait();
    return ReadBack(*ctx, c, g.m * g.n, g.elem);
  };
  std::vector<float> want = run(nullptr);
  auto queue = [&](cl_command_queue_properties props) {
    cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, props, 0};
    cl_int err = CL_SUCCESS;
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx->context(), ctx->device(), list, &err);
    return err == CL_SUCCESS ? q : nullptr;
  };
  for (int i = 0; i < 9; ++i) {
    cl_command_queue q = queue(0);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(run(q), want) << "queue " << i;
    clReleaseCommandQueue(q);  // texel holds its own reference while it keeps the scratch
  }
  cl_command_queue ooo = queue(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  if (ooo == nullptr) GTEST_SKIP() << "no out-of-order queues on this device";
  std::vector<float> got = run(ooo);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
  WarpGemmParams split{64, 64, 16, 32, 32};
  split.split_k = 2;
  try {
    run(ooo, &split);
    ADD_FAILURE() << "split K accepted on an out-of-order queue";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("out-of-order"), std::string::npos) << e.what();
  }
  clReleaseCommandQueue(ooo);
}

// The matrix-engine modes as the kernel emulates them: tf32 and fp16 match the host with the
// operands rounded as the engine rounds them and differ from exact fp32 by their rounding;
// tf32x3 matches exact fp32.
TEST(GemmTest, MatrixEngineModesEmulated) {
  WarpGemmParams small{32, 32, 16, 16, 16};
  for (ComputeMode mode : {ComputeMode::kTf32, ComputeMode::kTf32x3, ComputeMode::kFp16}) {
    GemmProblem g;
    g.m = 33, g.n = 40, g.k = 70, g.lda = 70, g.ldb = 40, g.ldc = 40, g.mode = mode;
    double off_exact = RunAndCheck(g, 1.0f, 0.0f, Emulated(), &small, ComputeModeName(mode));
    if (mode == ComputeMode::kFp16) {  // f16 storage: copied to local memory as it is
      g.elem = DType::kFloat16, g.trans_b = true, g.ldb = 70;
      RunAndCheck(g, -1.5f, 0.25f, Emulated(), &small, "fp16 on f16 storage");
    }
    if (mode == ComputeMode::kTf32x3)
      EXPECT_LT(off_exact, 2e-6) << "tf32x3 should keep fp32 accuracy";
    else
      EXPECT_GT(off_exact, 1e-5) << ComputeModeName(mode) << " should round its operands";
  }
  // tf32 operands passed raw: the engine truncates them (checked against truncated operands;
  // rounded ones differ by far more than the tolerance).
  WarpGemmParams raw = small;
  raw.raw_tf32 = true;
  GemmProblem g;
  g.m = 33, g.n = 40, g.k = 70, g.lda = 70, g.ldb = 40, g.ldc = 40, g.mode = ComputeMode::kTf32;
  EXPECT_GT(RunAndCheck(g, 1.0f, 0.0f, Emulated(), &raw, "tf32 raw"), 1e-5);
}

// The asynchronous-copy layouts the GPU's engine reads (tiles as stored, A transposed or not, B
// transposed or not), copied synchronously by the emulation: each layout against the host, over
// more steps than stages, on whole tiles and on edge tiles (zero-filled chunks past M, N and K;
// rows past M and columns past N feed only results that are not stored, so the K tail is what
// the edges check here; the GPU test below runs the real cp.async on edge tiles).
TEST(GemmTest, AsyncTileLayoutsEmulated) {
  codegen::Target t = Emulated();
  t.mma_emulated = true;
  for (ComputeMode mode : {ComputeMode::kTf32, ComputeMode::kTf32x3, ComputeMode::kFp16}) {
    const bool f16 = mode == ComputeMode::kFp16;
    // Also with 2 warp groups along K (tf32: fewer chunks per tile than work-items).
    for (int kgroups : {1, 2})
      for (bool even : {true, false})
        for (int layout = 0; layout < 4; ++layout) {  // NN, NT, TN, TT
          if ((even || mode == ComputeMode::kTf32x3 || kgroups > 1) && layout > 0) continue;
          if (layout == 3 && mode != ComputeMode::kFp16) continue;  // TT: once
          WarpGemmParams p =
              f16 ? WarpGemmParams{64, 64, 32, 32, 32, 3} : WarpGemmParams{32, 32, 16, 16, 16, 3};
          p.kgroups = kgroups;
          GemmProblem g;
          g.m = even ? 64 : 88, g.n = even ? 128 : 72, g.k = even ? 160 : 104, g.batch = 2;
          g.mode = mode, g.elem = f16 ? DType::kFloat16 : DType::kFloat32;
          g.trans_a = layout >= 2, g.trans_b = layout % 2 == 1;
          g.lda = g.trans_a ? g.m : g.k, g.ldb = g.trans_b ? g.k : g.n, g.ldc = g.n;
          g.stride_a = g.m * g.k, g.stride_b = g.k * g.n, g.stride_c = g.m * g.n;
          std::string what = fmt::format("{} layout {} {} {}", ComputeModeName(mode), layout,
                                         even ? "even" : "edges", p.ToString());
          ASSERT_FALSE(codegen::CheckWarpGemmParams(p, g, t)) << what;
          EXPECT_TRUE(codegen::AsyncCopies(g, p, t)) << what;
          RunAndCheck(g, 0.5f, f16 ? 0.0f : 2.0f, t, &p, what);
        }
  }
}

// Intel's matrix engine (codegen/opencl/gemm/dpas_gemm.h), which no device here has: chosen from
// the extension and the device's smallest subgroup size, for fp16 only.
TEST(GemmTest, IntelMatrixEngineSelection) {
  cl::DeviceInfo d = testing::SharedContext()->info();
  auto target = [&](std::vector<std::string> ext, std::vector<size_t> sizes) {
    d.extensions = std::move(ext);
    d.intel_sub_group_sizes = std::move(sizes);
    return backends::NativeBackend::TargetOf(d).dpas_sub_group;
  };
  const std::string mad = "cl_intel_subgroup_matrix_multiply_accumulate";
  EXPECT_EQ(target({mad}, {8, 16, 32}), 8u);
  EXPECT_EQ(target({mad}, {16, 32}), 16u);
  EXPECT_EQ(target({mad}, {32}), 0u);  // the functions exist for 8 and 16 only
  EXPECT_EQ(target({}, {8, 16, 32}), 0u);
  EXPECT_EQ(target({mad}, {}), 0u);
  codegen::Target t = Emulated();
  t.dpas_sub_group = 16;
  GemmProblem g;
  g.m = g.n = g.k = g.lda = g.ldb = g.ldc = 8;
  for (ComputeMode mode : {ComputeMode::kFp32, ComputeMode::kTf32, ComputeMode::kTf32x3})
    EXPECT_FALSE(codegen::DpasApplies((g.mode = mode, g), t)) << ComputeModeName(mode);
  g.mode = ComputeMode::kFp16;
  EXPECT_TRUE(codegen::DpasApplies(g, t));
  EXPECT_FALSE(codegen::DpasApplies(g, Emulated()));
  // texel_gemm accepts fp16 there and still refuses tf32, naming both engines.
  const auto& ctx = testing::SharedContext();
  cl::Buffer buf(*ctx, 64 * 4);
  api::GemmOperands ops{buf.mem(), buf.mem(), buf.mem(), 1, 0};
  api::CheckGemm(g, ops, t);
  g.mode = ComputeMode::kTf32;
  try {
    api::CheckGemm(g, ops, t);
    ADD_FAILURE() << "tf32 accepted without a tensor-core device";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("cl_intel_subgroup_matrix_multiply_accumulate"),
              std::string::npos)
        << e.what();
  }
}

// The Intel kernel's source for each subgroup size, storage and transpose passes an OpenCL C
// front end (PoCL's clang, compile only) with the extension's declarations; and with the
// extension's function emulated from its definition it computes what the host does.
TEST(GemmTest, IntelMatrixEngineKernels) {
  const auto& ctx = testing::SharedContext();
  for (uint32_t sg : {8u, 16u})
    for (DType elem : {DType::kFloat32, DType::kFloat16})
      for (int layout = 0; layout < 4; ++layout) {
        codegen::Target t = Emulated();
        t.dpas_sub_group = sg;
        GemmProblem g;
        g.mode = ComputeMode::kFp16, g.elem = elem;
        g.trans_a = layout & 1, g.trans_b = layout >> 1;
        g.m = 45, g.n = 37, g.k = 50, g.batch = 2;
        g.lda = (g.trans_a ? g.m : g.k) + 2, g.ldb = (g.trans_b ? g.k : g.n) + 1, g.ldc = g.n;
        g.stride_a = (g.trans_a ? g.k : g.m) * g.lda, g.stride_b = 0, g.stride_c = g.m * g.ldc;
        std::string what = fmt::format("sg {} {} layout {}", sg, DTypeName(elem), layout);
        // The real source: compiled, not linked (the functions exist only on Intel's driver).
        std::string src = std::string(codegen::kDpasDeclarations) +
                          codegen::GenerateDpasGemm(g, "dpas", t).source;
        const char* text = src.c_str();
        cl_int err = CL_SUCCESS;
        cl_program prog = clCreateProgramWithSource(ctx->context(), 1, &text, nullptr, &err);
        ASSERT_EQ(err, CL_SUCCESS) << what;
        cl_device_id dev = ctx->device();
        err = clCompileProgram(prog, 1, &dev, "", 0, nullptr, nullptr, nullptr, nullptr);
        if (err != CL_SUCCESS) {
          size_t n = 0;
          clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
          std::string log(n, '\0');
          clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
          ADD_FAILURE() << what << ": " << log;
        }
        clReleaseProgram(prog);
        // Emulated: run, for one storage type per layout (each build takes PoCL a while).
        if ((layout + (elem == DType::kFloat16)) % 2 == 0) {
          t.mma_emulated = true;
          RunAndCheck(g, 1.25f, layout == 1 ? 0.5f : 0.0f, t, nullptr, "emulated " + what, 1e-5);
        }
      }
}

// On a device with a matrix engine (the H100 run, not CI's PoCL): every mode on the tensor
// cores, f32 and f16 storage, each transpose, odd sizes with offsets and batches (the checked
// edges) and whole aligned tiles (asynchronous copies). The engine's own fp32 accumulation
// rounds less carefully than FMAs: tf32 and fp16 get 3e-5 of sum |a b|.
TEST(GemmTest, MatrixEngineOnThisDevice) {
  codegen::Target t = backends::NativeBackend::TargetOf(testing::SharedContext()->info());
  if (!t.mma_sync) GTEST_SKIP() << "no matrix engine on this device";
  for (ComputeMode mode : {ComputeMode::kTf32, ComputeMode::kTf32x3, ComputeMode::kFp16})
    for (DType elem : {DType::kFloat32, DType::kFloat16})
      for (int layout = 0; layout < 4; ++layout)
        for (bool even : {false, true}) {
          GemmProblem g;
          g.mode = mode, g.elem = elem, g.trans_a = layout & 1, g.trans_b = layout >> 1;
          g.m = even ? 256 : 77, g.n = even ? 256 : 45, g.k = even ? 96 : 70;
          g.batch = even ? 1 : 2;
          g.lda = (g.trans_a ? g.m : g.k) + (even ? 0 : 3);
          g.ldb = (g.trans_b ? g.k : g.n) + (even ? 0 : 1);
          g.ldc = g.n, g.a_offset = even ? 0 : 5, g.c_offset = even ? 0 : 2;
          g.stride_a = (g.trans_a ? g.k : g.m) * g.lda + (even ? 0 : 1), g.stride_b = 0;
          g.stride_c = g.m * g.ldc;
          double rel = mode == ComputeMode::kTf32x3 ? 3e-6 : 3e-5;
          std::string what = fmt::format("{} {} layout {} {}", ComputeModeName(mode),
                                         DTypeName(elem), layout, even ? "even" : "odd");
          RunAndCheck(g, 1.25f, even ? 0.0f : 0.5f, t, nullptr, what, rel);
          if (even) {
            // A transformer layer's shape, few tiles and deep K: the heuristic splits K.
            GemmProblem d = g;
            d.m = 128, d.n = 128, d.k = 3072, d.batch = 1;
            d.lda = g.trans_a ? d.m : d.k, d.ldb = g.trans_b ? d.k : d.n, d.ldc = d.n;
            codegen::WarpGemmParams p = codegen::ChooseWarpGemmParams(d, t);
            EXPECT_GT(p.split_k, 1) << what << " " << p.ToString();
            RunAndCheck(d, 1.0f, 0.0f, t, nullptr, what + " deep " + p.ToString(), 3 * rel);
          }
          if (!even) {
            // Edge tiles on the asynchronous path: sizes off the tiles, operands aligned (their
            // contiguous dimensions multiples of 16 bytes), so cp.async zero-fills the edges.
            GemmProblem e = g;
            e.m = 200, e.n = 72, e.k = 104, e.a_offset = 0, e.c_offset = 0;
            e.lda = g.trans_a ? e.m : e.k, e.ldb = g.trans_b ? e.k : e.n, e.ldc = e.n;
            e.stride_a = e.m * e.k, e.stride_b = 0, e.stride_c = e.m * e.n;
            EXPECT_TRUE(codegen::AsyncCopies(e, codegen::ChooseWarpGemmParams(e, t), t) ||
                        (elem == DType::kFloat32) == (mode == ComputeMode::kFp16))
                << what;
            RunAndCheck(e, 1.0f, 0.0f, t, nullptr, what + " aligned edges", rel);
            continue;
          }
          // The large-problem tilings: 8 warps of 64 x 32, 4 of 64 x 64 (also 8 deep, 4 stages),
          // 3 stages of 128 x 64; and the small convolution tiles' 2 warp groups along K.
          int bk = mode == ComputeMode::kFp16 ? 32 : 16;
          WarpGemmParams two_groups{64, 32, 2 * bk, 32, 16, 3};
          two_groups.kgroups = 2;
          for (WarpGemmParams p :
               {WarpGemmParams{128, 128, bk, 64, 32, 2}, WarpGemmParams{128, 128, bk, 64, 64, 2},
                WarpGemmParams{128, 128, 8, 64, 64, 4}, WarpGemmParams{128, 64, bk, 64, 32, 3},
                two_groups})
            if (!codegen::CheckWarpGemmParams(p, g, t))
              RunAndCheck(g, 1.0f, 0.0f, t, &p, what + " " + p.ToString(), rel);
        }
}

// Hopper's warpgroup kernel takes whole 128 x 128 tiles of operands 16-byte aligned, in fp16 on
// f16 (every transpose) or tf32 on f32 (k-contiguous operands), where the device has it; the
// rest stays on the warp-tiled kernel.
TEST(GemmTest, WarpgroupKernelSelection) {
  codegen::Target t;
  t.gpu = t.ptx = t.mma_sync = t.wgmma = true;
  t.max_work_group_size = 1024;
  t.compute_units = 6;  // the 2 x 3 tiles below fill them
  GemmProblem g;
  g.mode = ComputeMode::kFp16, g.elem = DType::kFloat16, g.trans_b = true;
  g.m = 256, g.n = 384, g.k = 64, g.lda = 72, g.ldb = 64, g.ldc = 384;
  EXPECT_TRUE(codegen::WgmmaApplies(g, t));
  GemmProblem tf32 = g;
  tf32.mode = ComputeMode::kTf32, tf32.elem = DType::kFloat32, tf32.k = 48, tf32.lda = 52;
  EXPECT_TRUE(codegen::WgmmaApplies(tf32, t));
  auto refused = [&](auto change, const char* why) {
    GemmProblem h = g;
    change(h);
    EXPECT_FALSE(codegen::WgmmaApplies(h, t)) << why;
  };
  for (int layout = 0; layout < 4; ++layout) {
    GemmProblem h = g;
    h.trans_a = layout & 1, h.trans_b = layout >> 1;
    h.lda = h.trans_a ? 264 : 72, h.ldb = h.trans_b ? 64 : 392;
    EXPECT_TRUE(codegen::WgmmaApplies(h, t)) << "fp16 layout " << layout;
    h.mode = ComputeMode::kTf32, h.elem = DType::kFloat32;
    EXPECT_EQ(codegen::WgmmaApplies(h, t), layout == 2) << "tf32 layout " << layout;
  }
  // Edge tiles where both operands are k-contiguous (chunks past M and N copied as zeros),
  // whole tiles otherwise (a 16-byte chunk along M or N would straddle the edge).
  for (auto [m, n] : {std::pair{200, 384}, {256, 320}}) {
    GemmProblem h = g;
    h.m = m, h.n = n, h.ldc = n;
    EXPECT_TRUE(codegen::WgmmaApplies(h, t)) << m << " x " << n;
    EXPECT_NE(codegen::WgmmaGemmClass(h, codegen::ChooseWgmmaTiling(h, t), t).find("edges"),
              std::string::npos);
    h.trans_a = true, h.lda = 264;
    EXPECT_TRUE(codegen::CheckWgmmaTiling({128, 128, 3, 64}, h, t)) << "m-contiguous A, edges";
  }
  refused([](GemmProblem& h) { h.k = 48; }, "depth off the 32-half step");
  refused([](GemmProblem& h) { h.lda = 68; }, "lda off 16 bytes");
  refused([](GemmProblem& h) { h.b_offset = 4; }, "B's offset off 16 bytes");
  refused([](GemmProblem& h) { h.batch = 2, h.stride_a = 256 * 72 + 4; }, "batch stride");
  refused([](GemmProblem& h) { h.elem = DType::kFloat32; }, "fp16 on f32 storage");
  refused([](GemmProblem& h) { h.n = 128; }, "fp16 tiles for fewer than 3/4 of the units");
  // Too few 128 x 128 tiles for the units, or columns in 64s: 128 x 64 tiles in 4 stages.
  GemmProblem narrow = g;
  narrow.n = 192;
  EXPECT_TRUE(codegen::WgmmaApplies(narrow, t));
  EXPECT_EQ(codegen::ChooseWgmmaTiling(narrow, t).ToString(), "128x64 s4");
  narrow.n = 256;
  EXPECT_EQ(codegen::ChooseWgmmaTiling(narrow, t).ToString(), "128x64 s4") << "4 tiles, 6 units";
  EXPECT_EQ(codegen::ChooseWgmmaTiling(g, t).ToString(), "128x128 s3");
  GemmProblem few = tf32;
  few.n = 256, few.ldc = 256;
  EXPECT_TRUE(codegen::WgmmaApplies(few, t)) << "tf32 takes it with fewer tiles too";
  refused([](GemmProblem& h) { h.mode = ComputeMode::kTf32x3, h.elem = DType::kFloat32; },
          "tf32x3");
  codegen::Target ampere = t;
  ampere.wgmma = false;
  EXPECT_FALSE(codegen::WgmmaApplies(g, ampere));
  // The source hides each sm_90a instruction for the runtime, in the mode's shape.
  for (const GemmProblem& p : {g, tf32}) {
    codegen::WgmmaTiling w = codegen::ChooseWgmmaTiling(p, t);
    codegen::KernelSpec spec = codegen::GenerateWgmmaGemm(p, "texel_gemm", t, w);
    EXPECT_TRUE(cl::NeedsSm90a(spec.source));
    EXPECT_NE(spec.source.find(p.mode == ComputeMode::kFp16 ? "m64n128k16.f32.f16.f16"
                                                            : "m64n128k8.f32.tf32.tf32"),
              std::string::npos);
    EXPECT_EQ(spec.local, (std::vector<size_t>{256, 1, 1}));
    EXPECT_EQ(spec.global, (std::vector<size_t>{2 * 256, 3, 1}));  // down M first
  }
  EXPECT_THROW(codegen::GenerateWgmmaGemm(g, "texel_gemm", ampere, {}), Error);
  // Explicit tilings are checked.
  EXPECT_FALSE(codegen::CheckWgmmaTiling({64, 64, 6, 64}, g, t));
  EXPECT_FALSE(codegen::CheckWgmmaTiling({64, 64, 3, 128}, g, t));
  EXPECT_FALSE(codegen::CheckWgmmaTiling({128, 256, 3, 32}, g, t)) << "36 KiB in 32-byte rows";
  EXPECT_FALSE(codegen::CheckWgmmaTiling({256, 128, 3, 32}, g, t)) << "four warpgroups";
  EXPECT_FALSE(codegen::CheckWgmmaTiling({128, 256, 4, 32}, g, t)) << "48 KiB: the cap";
  EXPECT_TRUE(codegen::CheckWgmmaTiling({128, 256, 5, 32}, g, t)) << "60 KiB";
  EXPECT_TRUE(codegen::CheckWgmmaTiling({192, 128, 3, 32}, g, t)) << "three warpgroups";
  EXPECT_TRUE(codegen::CheckWgmmaTiling({128, 256, 3, 64}, g, t)) << "72 KiB of local memory";
  EXPECT_TRUE(codegen::CheckWgmmaTiling({96, 128, 3, 64}, g, t)) << "rows not whole warpgroups";
  EXPECT_FALSE(codegen::CheckWgmmaTiling({128, 256, 2, 64}, g, t)) << "384 columns: edge tiles";
  EXPECT_TRUE(codegen::CheckWgmmaTiling({64, 64, 3, 128}, tf32, t)) << "K 48: not whole steps";
  GemmProblem mn = g;
  mn.trans_b = false, mn.ldb = 384;
  EXPECT_TRUE(codegen::CheckWgmmaTiling({64, 64, 3, 128}, mn, t)) << "n-contiguous B";
  EXPECT_FALSE(codegen::CheckWgmmaTiling({64, 64, 3, 64}, mn, t));
  EXPECT_TRUE(codegen::CheckWgmmaTiling({128, 256, 2, 64}, mn, t)) << "n-contiguous B, edges";
}

// A driver that does not build the warpgroup kernel leaves its problems to the warp-tiled
// kernel, and says why; running out of resources on the way is an error instead. The build's
// failure is injected before the driver sees the source (PoCL's compiler aborts on the
// kernel's PTX): its second build call, clBuildProgram after clCreateProgramWithSource.
TEST(GemmTest, WarpgroupKernelFallsBackWhenNotBuilt) {
  codegen::Target t = Emulated();
  t.wgmma = true, t.compute_units = 1;
  GemmProblem g;
  g.mode = ComputeMode::kFp16, g.elem = DType::kFloat16, g.trans_b = true;
  g.m = 128, g.n = 256, g.k = 64, g.lda = 64, g.ldb = 64, g.ldc = 256;
  ASSERT_TRUE(codegen::WgmmaApplies(g, t));
  std::string why;
  cl::ArmFault(cl::FaultPoint::kBuild, 2, CL_BUILD_PROGRAM_FAILURE);
  RunAndCheck(g, 0.5f, 0.0f, t, nullptr, "fp16 after the fallback", 2e-6, &why);
  EXPECT_TRUE(cl::FaultInjected());
  cl::DisarmFaults();
  EXPECT_NE(why.find("OpenCL build failed"), std::string::npos) << why;

  cl::ArmFault(cl::FaultPoint::kBuild, 2);  // CL_OUT_OF_HOST_MEMORY
  try {
    RunAndCheck(g, 0.5f, 0.0f, t, nullptr, "not reached");
    ADD_FAILURE() << "a build out of host memory should fail the product";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDevice) << e.what();
  }
  cl::DisarmFaults();
}

// The PTX rewrite that makes the hidden instructions live.
TEST(GemmTest, Sm90aRewrite) {
  std::string ptx =
      ".version 8.8\n.target sm_90, texmode_independent\n.address_size 64\n"
      "\t// begin inline asm\n\t// sm_90a: wgmma.fence.sync.aligned;\n\t// end inline asm\n";
  std::optional<std::string> out = cl::ActivateSm90a(ptx);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out,
            ".version 8.8\n.target sm_90a, texmode_independent\n.address_size 64\n"
            "\t// begin inline asm\n\twgmma.fence.sync.aligned;\n\t// end inline asm\n");
  EXPECT_EQ(*cl::ActivateSm90a(".target sm_90\n// sm_90a: a;// sm_90a: b;"),
            ".target sm_90a\na;b;");
  EXPECT_FALSE(cl::ActivateSm90a(".target sm_80\n// sm_90a: x;"));  // another device
  EXPECT_FALSE(cl::ActivateSm90a(".target sm_90a\n"));              // already raised
  EXPECT_FALSE(cl::ActivateSm90a(".target sm_900\n"));
  EXPECT_FALSE(
      cl::ActivateSm90a("\x7f"
                        "ELF binary"));
  EXPECT_FALSE(cl::NeedsSm90a("__kernel void k() {}"));
}

// The warpgroup kernel against the host: batches, offsets, leading dimensions past the row, alpha
// and beta, in both modes. On a Hopper GPU the instruction; elsewhere its emulation from the same
// local-memory layout (Target::wgmma_emulated: the staging, swizzles and epilogue, not the
// descriptors), on fewer problems.
TEST(GemmTest, WarpgroupKernelOnThisDevice) {
  codegen::Target t = backends::NativeBackend::TargetOf(testing::SharedContext()->info());
  bool emulated = !t.wgmma;
  if (emulated) {
    t = testing::EmulatedH100Target(t);
    t.wgmma_emulated = true;
  }
  t.compute_units = 1;  // these problems of a few tiles take the warpgroup kernel too
  for (int layout = 0; layout < 5; ++layout) {
    // fp16 in the four layouts, tf32 with k-contiguous operands.
    ComputeMode mode = layout < 4 ? ComputeMode::kFp16 : ComputeMode::kTf32;
    bool half = mode == ComputeMode::kFp16;
    GemmProblem g;
    g.mode = mode, g.elem = half ? DType::kFloat16 : DType::kFloat32;
    g.trans_a = layout < 4 && (layout & 1), g.trans_b = layout == 4 || (layout >> 1);
    g.m = 256, g.n = 384, g.k = 320, g.batch = 2;
    if (emulated) g.m = 128, g.n = 128, g.k = 160;
    int64_t chunk = half ? 8 : 4;
    g.lda = (g.trans_a ? g.m : g.k) + chunk, g.ldb = (g.trans_b ? g.k : g.n) + 2 * chunk;
    g.ldc = g.n + 3;
    g.a_offset = chunk, g.b_offset = 3 * chunk, g.c_offset = 5;
    g.stride_a = (g.trans_a ? g.k : g.m) * g.lda + chunk, g.stride_b = 0;
    g.stride_c = g.m * g.ldc + 7;
    ASSERT_TRUE(codegen::WgmmaApplies(g, t)) << layout;
    std::string what = fmt::format("wgmma {} layout {}", ComputeModeName(mode), layout);
    RunAndCheck(g, 1.25f, 0.5f, t, nullptr, what, 3e-5);
    g.batch = 1, g.k = emulated ? 512 : 2048, g.a_offset = g.b_offset = g.c_offset = 0;
    g.lda = g.trans_a ? g.m : g.k, g.ldb = g.trans_b ? g.k : g.n;
    RunAndCheck(g, 1.0f, 0.0f, t, nullptr, what + " deep", 3e-5);
    // 32-byte rows take k-contiguous operands only (layouts 2 and 4).
    bool k_contiguous = !g.trans_a && g.trans_b;
    for (codegen::WgmmaTiling w : {codegen::WgmmaTiling{64, 64, 3, 32}, {256, 64, 3, 32}}) {
      std::optional<std::string> why = codegen::CheckWgmmaTiling(w, g, t);
      EXPECT_EQ(!why, k_contiguous) << what << " " << w.ToString();
      if (why) {
        EXPECT_NE(why->find("k-contiguous"), std::string::npos) << *why;
      }
    }
    // Explicit tilings: one warpgroup, narrow tiles, 128- and 32-byte rows (k-contiguous
    // operands), four warpgroups (256 columns emulated took PoCL minutes to build); emulated, in
    // fp16 with B stored [N, K] (such rows need k-contiguous operands) and in tf32 only (PoCL
    // builds each kernel in seconds).
    if (emulated && layout != 2 && layout != 4) continue;
    std::vector<codegen::WgmmaTiling> tilings = {{64, 128, 4, 64}, {128, 64, 4, 64},
                                                 {64, 64, 3, 128}, {128, 64, 2, 128},
                                                 {64, 64, 3, 32},  {256, 64, 3, 32}};
    if (!emulated) tilings.insert(tilings.end(), {{128, 256, 3, 32}, {256, 128, 3, 32}});
    for (const codegen::WgmmaTiling& w : tilings) {
      if (codegen::CheckWgmmaTiling(w, g, t)) continue;
      RunAndCheck(g, 0.75f, 0.5f, t, nullptr, fmt::format("{} {}", what, w.ToString()), 3e-5,
                  nullptr, &w);
    }
  }
}

// tf32 operands the warpgroup kernel cannot read as stored (m- or n-contiguous, off 16 bytes, K
// off the 16-element step) are packed into k-contiguous scratch first: every layout, a broadcast
// B, offsets and K off the step against the host, through an explicit tiling (the heuristic packs
// only products of 2^30 multiply-adds and more, too slow for the emulation); the heuristic's
// choice on an H100's facts; an explicit tiling that would pack on an out-of-order queue refused.
TEST(GemmTest, PackedOperandsForTheWarpgroupKernel) {
  codegen::Target t = backends::NativeBackend::TargetOf(testing::SharedContext()->info());
  if (!t.wgmma) {
    t = testing::EmulatedH100Target(t);
    t.wgmma_emulated = true;
  }
  const codegen::WgmmaTiling w{128, 64, 2, 64};  // 24 KiB of local memory: oclgrind's has 32
  struct Case {
    bool ta, tb;
    int64_t k;
    bool aligned;  // offsets and leading dimensions 16-byte multiples
    int64_t m = 128, n = 128;
    bool f16 = false;  // fp16 on f16 storage, else tf32
  };
  // tf32: NN, TN, NT (one B for the batch), TT, NN with K off the step and edge tiles, NT aligned
  // (nothing packed), the same with edge tiles. fp16 (native transposes): NN with K off the
  // step, TN aligned with edge tiles (A and B packed: m- and n-contiguous operands need whole
  // tiles), NT aligned with edge tiles (nothing packed).
  const Case cases[] = {{false, false, 96, false},
                        {true, false, 96, false},
                        {false, true, 96, false},
                        {true, true, 96, false},
                        {false, false, 150, false, 100, 72},
                        {false, true, 96, true},
                        {false, true, 96, true, 130, 20},
                        {false, false, 72, true, 128, 128, true},
                        {true, false, 64, true, 100, 136, true},
                        {false, true, 64, true, 100, 136, true}};
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& e = cases[i];
    GemmProblem g;
    g.mode = e.f16 ? ComputeMode::kFp16 : ComputeMode::kTf32;
    g.elem = e.f16 ? DType::kFloat16 : DType::kFloat32;
    g.trans_a = e.ta, g.trans_b = e.tb;
    g.m = e.m, g.n = e.n, g.k = e.k, g.batch = 2;
    int64_t pad = e.aligned ? 0 : 1, chunk = e.f16 ? 8 : 4;
    g.lda = (g.trans_a ? g.m : g.k) + 3 * pad, g.ldb = (g.trans_b ? g.k : g.n) + pad;
    if (e.aligned)
      g.lda = codegen::CeilDiv(g.lda, chunk) * chunk,
      g.ldb = codegen::CeilDiv(g.ldb, chunk) * chunk;
    g.ldc = g.n + 2;
    g.a_offset = e.aligned ? chunk : 5, g.c_offset = 3;
    g.stride_a = (g.trans_a ? g.k : g.m) * g.lda + (e.aligned ? chunk : 1);
    g.stride_b = i == 2 ? 0 : (g.trans_b ? g.n : g.k) * g.ldb;
    g.stride_c = g.m * g.ldc;
    std::string what = fmt::format("{} packed case {}", ComputeModeName(g.mode), i);
    auto pack = codegen::PackForWgmma(g);
    bool packs = !e.aligned || g.k % (e.f16 ? 32 : 16) != 0 || (e.f16 && e.ta);
    ASSERT_EQ(bool(pack), packs) << what;
    if (packs) {
      EXPECT_TRUE(pack->a) << what;
      EXPECT_TRUE(pack->b) << what;
      EXPECT_EQ(pack->b->batch, i == 2 ? 1 : 2) << what;
      EXPECT_EQ(pack->packed.k % (e.f16 ? 32 : 16), 0) << what;
    }
    EXPECT_FALSE(codegen::CheckWgmmaTiling(w, packs ? pack->packed : g, t)) << what;
    RunAndCheck(g, 1.25f, i == 1 ? 0.0f : 0.5f, t, nullptr, what, 3e-5, nullptr, &w);
  }
  // The heuristic's choice on an H100: tf32 from n = 512 on the warpgroup kernel, with B (and a
  // transposed A) packed, n = 256 on the warp-tiled kernel; fp16 with K off the step packed from
  // about n = 2048 (3000 x 3072 x 3000: edge tiles, both operands packed; not 2000^3).
  // (Where the device's largest allocation holds the packs four times over: not oclgrind's.)
  codegen::Target h100 = testing::H100Target();
  h100.mma_sync = h100.group_handoff = h100.wgmma = true;
  api::GemmKernels kernels(testing::SharedContext());
  const uint64_t max_alloc = testing::SharedContext()->info().max_alloc_bytes;
  for (int64_t n : {1024, 512, 256}) {
    if (max_alloc < (uint64_t{512} << 20)) break;
    GemmProblem g;
    g.mode = ComputeMode::kTf32, g.elem = DType::kFloat32;
    g.m = g.n = g.k = g.lda = g.ldb = g.ldc = n;
    std::string cls = kernels.KernelClass(g, h100);
    if (n >= 512) {
      EXPECT_TRUE(cls.starts_with("wgmma")) << cls;
      EXPECT_TRUE(cls.ends_with("packed b")) << cls;
      g.trans_a = true;
      EXPECT_TRUE(kernels.KernelClass(g, h100).ends_with("packed ab"));
    } else {
      EXPECT_TRUE(cls.starts_with("warp")) << cls;
    }
  }
  GemmProblem f16;
  f16.mode = ComputeMode::kFp16, f16.elem = DType::kFloat16;
  f16.m = 3000, f16.k = f16.lda = f16.ldb = 3000, f16.n = f16.ldc = 3072;
  std::string cls = kernels.KernelClass(f16, h100);
  if (max_alloc >= (uint64_t{512} << 20)) {
    EXPECT_TRUE(cls.starts_with("wgmma") && cls.ends_with("edges packed ab")) << cls;
  }
  f16.m = f16.n = f16.k = f16.lda = f16.ldb = f16.ldc = 2000;
  EXPECT_TRUE(kernels.KernelClass(f16, h100).starts_with("warp"));
  // Not where the packs would take over a quarter of the largest allocation (B: 4 GiB).
  GemmProblem big;
  big.mode = ComputeMode::kTf32, big.elem = DType::kFloat32;
  big.m = big.n = big.k = big.lda = big.ldb = big.ldc = 32768;
  if (max_alloc < (uint64_t{16} << 30)) {
    EXPECT_TRUE(kernels.KernelClass(big, h100).starts_with("warp"));
  }
  // Out of order: an explicit tiling that packs is refused.
  const auto& ctx = testing::SharedContext();
  cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};
  cl_int err = CL_SUCCESS;
  cl_command_queue ooo =
      clCreateCommandQueueWithProperties(ctx->context(), ctx->device(), list, &err);
  if (ooo == nullptr) GTEST_SKIP() << "no out-of-order queues on this device";
  GemmProblem g;
  g.mode = ComputeMode::kTf32, g.elem = DType::kFloat32;
  g.m = g.n = 128, g.k = 64, g.lda = 64, g.ldb = 128, g.ldc = 128;
  cl::Buffer a(*ctx, 128 * 64 * 4), b(*ctx, 128 * 64 * 4), c(*ctx, 128 * 128 * 4);
  api::GemmOperands ops{a.mem(), b.mem(), c.mem(), 1.0f, 0.0f};
  try {
    kernels.Enqueue(g, ops, ooo, {}, nullptr, t, nullptr, &w);
    ADD_FAILURE() << "packing accepted on an out-of-order queue";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("in-order"), std::string::npos) << e.what();
  }
  clReleaseCommandQueue(ooo);
}

// Sizes, strides and scalars are arguments: problems of one shape class share a kernel.
TEST(GemmTest, OneKernelPerShapeClass) {
  const auto& ctx = testing::SharedContext();
  cl::Buffer a(*ctx, 4096 * 4), b(*ctx, 4096 * 4), c(*ctx, 4096 * 4);
  api::GemmKernels kernels(ctx);
  codegen::Target t = Emulated();
  WarpGemmParams small{32, 32, 16, 16, 16};
  for (int64_t m : {5, 17, 30}) {
    GemmProblem g;
    g.m = m, g.n = 2 * m, g.k = m + 3, g.lda = g.k, g.ldb = g.n + 1, g.ldc = g.n;
    g.mode = ComputeMode::kFp32;
    api::GemmOperands ops{a.mem(), b.mem(), c.mem(), 1.0f, m * 0.5f};
    api::CheckGemm(g, ops, t);
    kernels.Enqueue(g, ops, nullptr, {}, nullptr, t, &small);
  }
  ctx->Finish();
  EXPECT_EQ(kernels.built(), 1u);
}

// texel_gemm finds its kernels by WarpGemmClass without generating them: two problems share a
// class exactly when their kernels' sources are equal (over sizes, offsets, leading dimensions,
// strides, modes, element types, transposes and a target with and without mma.sync).
TEST(GemmTest, ShapeClassIsTheSource) {
  std::vector<std::pair<std::string, std::string>> seen;  // class, source
  codegen::Target ptx = testing::H100Target();
  ptx.mma_sync = ptx.group_handoff = true;
  for (const codegen::Target& t : {Emulated(), ptx})
    for (ComputeMode mode : {ComputeMode::kFp32, ComputeMode::kTf32, ComputeMode::kFp16})
      for (DType elem : {DType::kFloat32, DType::kFloat16})
        for (int64_t size : {64, 128, 130})
          for (int64_t shift : {0, 1, 4})
            for (bool trans : {false, true}) {
              GemmProblem g;
              g.m = g.n = g.k = size;
              g.lda = g.ldb = g.ldc = size + shift;
              g.a_offset = shift, g.batch = 2, g.stride_a = g.stride_b = g.stride_c = size * 200;
              g.trans_b = trans, g.mode = mode, g.elem = elem;
              for (int split : {1, 2}) {
                WarpGemmParams p{64, 64, 32, 32, 32};
                p.split_k = split;
                if (codegen::CheckWarpGemmParams(p, g, t) || codegen::CheckGemmSplit(g, p, t))
                  continue;
                seen.emplace_back(codegen::WarpGemmClass(g, t, p),
                                  codegen::GenerateWarpGemm(g, "k", t, p).source);
              }
            }
  ASSERT_GT(seen.size(), 100u);
  std::set<std::string> classes;
  for (const auto& [c, src] : seen) classes.insert(c);
  EXPECT_GT(classes.size(), 20u);
  for (const auto& [c1, s1] : seen)
    for (const auto& [c2, s2] : seen) ASSERT_EQ(c1 == c2, s1 == s2) << c1 << " / " << c2;
}

TEST(GemmTest, BadArguments) {
  const auto& ctx = testing::SharedContext();
  cl::Buffer a(*ctx, 64 * 4), b(*ctx, 64 * 4), c(*ctx, 64 * 4);
  codegen::Target t = Emulated();
  auto check = [&](GemmProblem g, api::GemmOperands ops, ErrorCode code, const char* needle) {
    try {
      api::CheckGemm(g, ops, t);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  GemmProblem ok;
  ok.m = 8, ok.n = 8, ok.k = 8, ok.lda = 8, ok.ldb = 8, ok.ldc = 8, ok.mode = ComputeMode::kFp32;
  api::GemmOperands ops{a.mem(), b.mem(), c.mem(), 1, 0};
  api::CheckGemm(ok, ops, t);
  GemmProblem g = ok;
  g.lda = 7;
  check(g, ops, ErrorCode::kInvalidArgument, "lda = 7");
  g = ok, g.ldc = 4;
  check(g, ops, ErrorCode::kInvalidArgument, "ldc = 4");
  g = ok, g.k = 9, g.lda = 9;
  check(g, ops, ErrorCode::kInvalidArgument, "a holds 256 bytes");
  g = ok, g.batch = 2, g.stride_c = 64;
  check(g, ops, ErrorCode::kInvalidArgument, "c holds 256 bytes");
  g = ok, g.m = -1;
  check(g, ops, ErrorCode::kInvalidArgument, "m = -1");
  g = ok, g.c_offset = 1;
  check(g, ops, ErrorCode::kInvalidArgument, "c holds");
  g = ok, g.elem = DType::kInt32;
  check(g, ops, ErrorCode::kInvalidArgument, "element type i32");
  api::GemmOperands no_b = ops;
  no_b.b = nullptr;
  check(ok, no_b, ErrorCode::kInvalidArgument, "b is NULL");
  g = ok, g.mode = ComputeMode::kTf32;
  check(g, ops, ErrorCode::kUnsupported, "compute mode tf32 needs a matrix engine");
  // A split asked for that leaves a range empty, or where work-groups cannot hand over.
  g = ok, g.k = 100;
  WarpGemmParams p{32, 32, 16, 16, 16};
  p.split_k = 8;
  auto why = codegen::CheckGemmSplit(g, p, t);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("makes 7 ranges, not 8"), std::string::npos) << *why;
  p.split_k = 2;
  codegen::Target no_handoff = t;
  no_handoff.group_handoff = false;
  why = codegen::CheckGemmSplit(g, p, no_handoff);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("hand results over"), std::string::npos) << *why;
}

}  // namespace
}  // namespace texel
