// MatMul kernels (codegen/opencl/matmul.h) on PoCL against a double-precision host reference:
// explicit parameter sets of both kernels (edge tiles in M, N and K, K shorter than a tile,
// batch broadcasting, M = 1) in f32, f16 storage and f64; the parameters the heuristic picks for
// a GPU, run here so that what the GPU will execute is checked on every machine; and the whole
// compile path (CompileGraph) with the heuristic for this device.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/native/bound_kernels.h"
#include "backends/native/native_backend.h"
#include "codegen/opencl/gemm/model_gemm.h"
#include "codegen/opencl/gemm/warp_gemm.h"
#include "codegen/opencl/matmul.h"
#include "kernel_test_util.h"

namespace texel {
namespace {

using namespace texel::testing;
using codegen::MatMulParams;

HostTensor Random(DType t, const Shape& s, uint32_t seed) {
  HostTensor f = RandomF32(s, seed);
  if (t == DType::kFloat16) return ToF16(f);
  if (t != DType::kFloat64) return f;
  HostTensor d(DType::kFloat64, s);
  for (int64_t i = 0; i < f.size(); ++i) d.data<double>()[i] = F(f, i);
  return d;
}

codegen::Target CpuTarget() { return backends::NativeBackend::TargetOf(SharedContext()->info()); }

int split_runs = 0;  // RunKernel calls that ran a split-K pair
int warp_runs = 0;   // RunKernel calls that ran the warp-tiled kernel

// Runs the kernel GenerateMatMulWith makes for `params` (the generator's choice for `target`
// when null) on PoCL. attrs: the MatMul's (trans_a, trans_b: a and b are given as stored;
// compute_mode).
HostTensor RunKernel(const HostTensor& a, const HostTensor& b, const MatMulParams* params,
                     const codegen::Target& target, const ir::Attrs& attrs = {}) {
  ir::Graph g;
  ir::Value* av = g.AddInput("a", {a.dtype, a.shape});
  ir::Value* bv = g.AddInput("b", {b.dtype, b.shape});
  ir::Node* node = g.AddNode(ir::OpKind::kMatMul, {av, bv}, attrs, "mm");
  const ir::TensorType& yt = node->outputs[0]->type;
  std::vector<codegen::KernelSpec> specs =
      params ? codegen::GenerateMatMulWith(*node, "mm", target, *params)
             : codegen::GenerateKernel(*node, "mm", target);
  // Split-K is two kernels, unless K is too short to split.
  if (params) {
    EXPECT_EQ(specs.size(), params->kind == MatMulParams::Kind::kTiled && params->split_k > 1 &&
                                    codegen::GemmShapeOf(*node).k > params->tile_k
                                ? 2u
                                : 1u);
  }
  split_runs += SplitsK(specs);
  warp_runs += specs[0].source.find("#define MODEL 1") != std::string::npos;
  const cl::Context& ctx = *SharedContext();
  cl::Buffer da(ctx, a.bytes.size()), db(ctx, b.bytes.size()), dy(ctx, yt.bytes());
  da.Write(ctx, a.bytes.data(), a.bytes.size());
  db.Write(ctx, b.bytes.data(), b.bytes.size());
  backends::BoundKernels run(
      ctx, std::move(specs),
      [&](int id) -> const cl::Buffer& { return id == av->id   ? da
                                                : id == bv->id ? db
                                                               : dy; },
      a.dtype == DType::kFloat64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "");
  // Twice, the result cleared in between: every run writes the whole result.
  run.Launch(ctx);
  std::vector<char> ones(yt.bytes(), '\xff');  // NaN in every float type
  dy.Write(ctx, ones.data(), ones.size());
  run.Launch(ctx);
  HostTensor y(yt.dtype, yt.shape);
  dy.Read(ctx, y.bytes.data(), y.bytes.size());
  return y;
}

// |got - want| <= tol * max(|want|, 1) elementwise; the scale follows K's accumulated error.
// tol: per unit of sqrt(K), by storage type when 0.
void ExpectMatches(const HostTensor& got, const HostTensor& a, const HostTensor& b,
                   const std::string& what, double tol = 0) {
  Shape shape;
  std::vector<double> want = RefMatMulValues(a, b, &shape);
  ASSERT_EQ(got.shape, shape) << what;
  if (tol == 0)
    tol = got.dtype == DType::kFloat16 ? 4e-3 : got.dtype == DType::kFloat32 ? 2e-5 : 1e-12;
  tol *= std::sqrt(static_cast<double>(a.shape.back()));
  int bad = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    double g = got.GetDouble(i), w = want[i];
    if (!(std::fabs(g - w) <= tol * std::max(std::fabs(w), 1.0)) && ++bad <= 3)
      ADD_FAILURE() << what << " at " << i << ": got " << g << ", want " << w;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << got.size() << " elements differ";
}

struct Case {
  Shape a, b;
};

// Edge tiles in every dimension, K shorter than and not a multiple of a tile, odd K and N
// (scalar loads), batch broadcasting both ways, M = 1.
const std::vector<Case> kCases = {
    {{67, 45}, {45, 131}},      {{2, 1, 70, 64}, {3, 64, 36}},
    {{130, 20}, {20, 132}},     {{1, 200}, {200, 300}},
    {{5, 8}, {8, 12}},          {{3, 33, 7}, {7, 17}},
    {{4, 1, 96}, {1, 96, 128}}, {{2, 129, 40}, {2, 40, 64}},
};

MatMulParams Tiled(int tm, int tn, int tk, int wm, int wn) {
  MatMulParams p;
  p.tile_m = tm, p.tile_n = tn, p.tile_k = tk, p.wi_m = wm, p.wi_n = wn;
  return p;
}

// Split-K over `splits` work-groups per tile.
MatMulParams Split(MatMulParams p, int splits) {
  p.split_k = splits;
  return p;
}

// The direct kernel with ly row blocks sharing panels of pk rows of B.
MatMulParams Panel(int wm, int wn, int lx, int ly, int pk) {
  MatMulParams p;
  p.kind = MatMulParams::Kind::kDirect;
  p.wi_m = wm, p.tile_m = ly * wm, p.wi_n = p.vec_b = wn, p.tile_n = lx * wn, p.panel_k = pk;
  return p;
}

MatMulParams Direct(int wm, int wn, int lx, int split) {
  MatMulParams p;
  p.kind = MatMulParams::Kind::kDirect;
  p.tile_m = p.wi_m = wm, p.wi_n = p.vec_b = wn, p.tile_n = lx * wn, p.split_k = split;
  return p;
}

TEST(MatMulTest, ExplicitParamsAllShapes) {
  const std::vector<MatMulParams> params = {
      Tiled(128, 128, 16, 16, 8),
      Tiled(128, 128, 16, 8, 8),
      Tiled(64, 128, 16, 8, 8),
      Tiled(64, 128, 8, 4, 8),
      Tiled(64, 64, 16, 4, 4),
      Tiled(32, 64, 16, 2, 4),
      Tiled(16, 16, 16, 1, 1),
      Tiled(32, 32, 8, 4, 4),
      Split(Tiled(32, 32, 8, 4, 4), 3),
      Split(Tiled(16, 16, 16, 1, 1), 2),
      Direct(8, 4, 8, 8),
      Direct(1, 1, 32, 4),
      Direct(3, 2, 16, 1),
      Panel(4, 4, 8, 4, 16),
      Panel(2, 1, 4, 8, 5),
  };
  codegen::Target target = CpuTarget();
  // Every third (case, parameters) pair: each parameter set meets about three cases, and PoCL
  // compiles each kernel in a second or two.
  for (size_t ci = 0; ci < kCases.size(); ++ci) {
    const Case& c = kCases[ci];
    HostTensor a = Random(DType::kFloat32, c.a, 500 + 2 * static_cast<uint32_t>(ci));
    HostTensor b = Random(DType::kFloat32, c.b, 501 + 2 * static_cast<uint32_t>(ci));
    int64_t k = c.a.back(), n = c.b.back();
    for (size_t pi = 0; pi < params.size(); ++pi) {
      if ((ci + pi) % 3 != 0) continue;
      MatMulParams p = params[pi];
      if (p.kind == MatMulParams::Kind::kTiled) {
        p.vec_a = k % 4 == 0 ? 4 : 1;
        p.vec_b = n % 4 == 0 ? 4 : 1;
      } else if (n % p.vec_b != 0) {
        continue;
      }
      std::string what = fmt::format("{} x {} with {}", ShapeStr(c.a), ShapeStr(c.b), p.ToString());
      ExpectMatches(RunKernel(a, b, &p, target), a, b, what);
    }
  }
  EXPECT_GE(split_runs, 3);
}

// f16 storage and f64 through both kernels, with vector loads and edge tiles.
TEST(MatMulTest, Float16AndFloat64) {
  codegen::Target target = CpuTarget();
  MatMulParams tiled = Tiled(32, 64, 16, 2, 4);
  for (DType t : {DType::kFloat16, DType::kFloat64}) {
    for (const Case& c : {Case{{2, 37, 24}, {24, 68}}, Case{{1, 40}, {40, 20}}}) {
      HostTensor a = Random(t, c.a, 601), b = Random(t, c.b, 602);
      MatMulParams p = tiled;
      p.vec_a = p.vec_b = t == DType::kFloat64 ? 2 : 4;
      std::string what = fmt::format("{} {} x {}", DTypeName(t), ShapeStr(c.a), ShapeStr(c.b));
      ExpectMatches(RunKernel(a, b, &p, target), a, b, what + " tiled");
      ExpectMatches(RunKernel(a, b, nullptr, target), a, b, what + " heuristic");
    }
  }
}

// What the heuristic picks for a large GPU (H100-like facts): valid for every shape, tiled
// beyond 8 rows, and correct when run here.
TEST(MatMulTest, GpuHeuristicChoices) {
  codegen::Target gpu = testing::H100Target();
  codegen::Target cpu = CpuTarget();
  uint32_t seed = 700;
  for (const Case& c : kCases) {
    HostTensor a = Random(DType::kFloat32, c.a, ++seed), b = Random(DType::kFloat32, c.b, ++seed);
    ir::Graph g;
    ir::Node* node = g.AddNode(
        ir::OpKind::kMatMul,
        {g.AddInput("a", {DType::kFloat32, c.a}), g.AddInput("b", {DType::kFloat32, c.b})}, {},
        "mm");
    codegen::GemmShape s = codegen::GemmShapeOf(*node);
    MatMulParams p = codegen::ChooseMatMulParams(s, gpu);
    EXPECT_FALSE(codegen::CheckMatMulParams(p, s, gpu).has_value()) << p.ToString();
    EXPECT_EQ(p.kind == MatMulParams::Kind::kTiled, s.m > 8 && s.n >= 8) << p.ToString();
    // PoCL accepts the GPU's work-group sizes; run the GPU's choice on the CPU target.
    ExpectMatches(RunKernel(a, b, &p, cpu), a, b, "gpu choice " + p.ToString());
  }
  // Few columns (a squeeze-and-excitation block's 1x1 convolutions on one pooled pixel): the
  // direct kernel, K split across the work-group.
  for (auto [m, n, k] : {std::array<int64_t, 3>{20, 1, 480}, {1152, 1, 48}, {200, 5, 96}}) {
    HostTensor a = Random(DType::kFloat32, {m, k}, ++seed);
    HostTensor b = Random(DType::kFloat32, {k, n}, ++seed);
    MatMulParams p = codegen::ChooseMatMulParams({1, m, n, k, DType::kFloat32}, gpu);
    EXPECT_EQ(p.kind, MatMulParams::Kind::kDirect) << p.ToString();
    if (k >= 96) {
      EXPECT_GT(p.split_k, 1) << p.ToString();
    }
    ExpectMatches(RunKernel(a, b, &p, cpu), a, b, "few columns " + p.ToString());
  }
  // A small device (64 work-items, 4 KiB of local memory) still gets parameters it can run.
  codegen::Target small = gpu;
  small.max_work_group_size = 64;
  small.local_mem_bytes = 4096;
  for (codegen::GemmShape s : {codegen::GemmShape{1, 1, 1000, 2048},
                               {1, 4096, 4096, 4096},
                               {3, 129, 40, 64},
                               {1, 67, 131, 45}}) {
    for (bool is_gpu : {true, false}) {
      small.gpu = is_gpu;
      MatMulParams p = codegen::ChooseMatMulParams(s, small);
      EXPECT_FALSE(codegen::CheckMatMulParams(p, s, small).has_value()) << p.ToString();
    }
  }
  // Large square products take the largest tile; a 128-row transformer layer a smaller one.
  EXPECT_EQ(codegen::ChooseMatMulParams({1, 4096, 4096, 4096, DType::kFloat32}, gpu).tile_m, 128);
  EXPECT_LT(codegen::ChooseMatMulParams({1, 128, 3072, 768, DType::kFloat32}, gpu).tile_m, 128);
  // Split-K where few tiles meet a long K (a transformer's second FFN product, a late ResNet
  // stage's 3x3 convolution), not where the tiles alone fill the device.
  EXPECT_GT(codegen::ChooseMatMulParams({1, 128, 768, 3072, DType::kFloat32}, gpu).split_k, 1);
  EXPECT_GT(codegen::ChooseMatMulParams({1, 512, 49, 4608, DType::kFloat32}, gpu).split_k, 1);
  EXPECT_EQ(codegen::ChooseMatMulParams({1, 1024, 1024, 1024, DType::kFloat32}, gpu).split_k, 1);
  EXPECT_EQ(codegen::ChooseMatMulParams({1, 4096, 4096, 4096, DType::kFloat32}, gpu).split_k, 1);
  // Transformer layers (a side <= 256, >= 64M multiply-adds): 64 x 128 tiles, K split so that
  // the work-groups fill their last wave (docs/decisions.md), e.g. ViT's 197 x 768 x 3072 in 11
  // ranges (24 tiles x 11 = 264 work-groups, two full waves of 132).
  struct Expect {
    codegen::GemmShape shape;
    int split;
  };
  for (const Expect& e : {Expect{{1, 197, 768, 3072}, 11}, Expect{{1, 197, 2304, 768}, 5},
                          Expect{{1, 128, 768, 768}, 10}, Expect{{1, 49, 3072, 768}, 5}}) {
    MatMulParams p = codegen::ChooseMatMulParams(e.shape, gpu);
    EXPECT_EQ(p.tile_m, 64) << p.ToString();
    EXPECT_EQ(p.tile_n, 128) << p.ToString();
    EXPECT_EQ(p.split_k, e.split) << p.ToString();
  }
  // Too small to pay for a second kernel (a 256-wide decoder): the tile model's choice, which
  // keeps K ranges of at least 256.
  EXPECT_EQ(codegen::ChooseMatMulParams({1, 64, 1024, 256, DType::kFloat32}, gpu).split_k, 1);
}

// t with its last two axes swapped.
HostTensor SwapLastTwo(const HostTensor& t) {
  Shape s = t.shape;
  int64_t r = s[s.size() - 2], c = s.back(), mats = t.size() / (r * c);
  std::swap(s[s.size() - 2], s.back());
  HostTensor out(t.dtype, s);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j)
        out.data<float>()[(m * c + j) * r + i] = t.data<float>()[(m * r + i) * c + j];
  return out;
}

// Operands stored transposed (MatMul's trans_a / trans_b, which simplify makes of a Transpose
// of the last two axes): explicit parameters of both kernels, this device's heuristic and the
// GPU's, against the reference on the untransposed operands.
TEST(MatMulTest, TransposedOperands) {
  struct TransCase {
    Shape a, b;  // as multiplied
    bool ta, tb;
  };
  const std::vector<TransCase> cases = {
      {{67, 45}, {45, 131}, true, false}, {{2, 37, 24}, {2, 24, 68}, false, true},
      {{3, 33, 7}, {7, 17}, true, true},  {{1, 200}, {200, 300}, false, true},
      {{130, 20}, {20, 132}, true, true}, {{2, 1, 9, 33}, {3, 33, 20}, true, false},
  };
  codegen::Target gpu = CpuTarget();
  gpu.gpu = true;
  gpu.compute_units = 132;
  const std::vector<std::optional<MatMulParams>> params = {
      Tiled(32, 64, 16, 2, 4),
      Split(Tiled(16, 16, 16, 1, 1), 2),
      Direct(3, 2, 16, 1),
      Panel(2, 1, 4, 8, 5),
      std::nullopt,
  };
  uint32_t seed = 950;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const TransCase& c = cases[ci];
    HostTensor a = Random(DType::kFloat32, c.a, ++seed), b = Random(DType::kFloat32, c.b, ++seed);
    HostTensor sa = c.ta ? SwapLastTwo(a) : a, sb = c.tb ? SwapLastTwo(b) : b;
    ir::Attrs attrs{{"trans_a", int64_t{c.ta}}, {"trans_b", int64_t{c.tb}}};
    std::string what = fmt::format("{}{} x {}{}", ShapeStr(c.a), c.ta ? "^T" : "", ShapeStr(c.b),
                                   c.tb ? "^T" : "");
    for (size_t pi = 0; pi < params.size(); ++pi) {
      if ((ci + pi) % 2 != 0) continue;
      if (!params[pi]) {
        ExpectMatches(RunKernel(sa, sb, nullptr, CpuTarget(), attrs), a, b, what + " heuristic");
        continue;
      }
      MatMulParams p = *params[pi];
      if (p.kind == MatMulParams::Kind::kTiled) p.vec_b = c.b.back() % 4 == 0 ? 4 : 1;
      if (!c.tb && c.b.back() % p.vec_b != 0) continue;  // a plain B needs whole vectors
      ExpectMatches(RunKernel(sa, sb, &p, CpuTarget(), attrs), a, b, what + " " + p.ToString());
    }
    // The GPU's choice (a tiled kernel beyond 8 rows), run on this device.
    ir::Graph g;
    ir::Node* node = g.AddNode(ir::OpKind::kMatMul,
                               {g.AddInput("a", {DType::kFloat32, sa.shape}),
                                g.AddInput("b", {DType::kFloat32, sb.shape})},
                               attrs, "mm");
    MatMulParams p = codegen::ChooseMatMulParams(codegen::GemmShapeOf(*node), gpu);
    ExpectMatches(RunKernel(sa, sb, &p, CpuTarget(), attrs), a, b, what + " gpu " + p.ToString());
  }
}

// The warp_gemm family (ModelWarpGemmTunable): a model product on the matrix engine declares its
// tilings, the heuristic's first, every one valid on the device; each of every fifth point,
// picked as the tuner picks it (Target::tuning), computes the product (tf32x3, whose emulation
// keeps fp32 accuracy; the GPU's facts: tiles that split K and tiles that do not).
TEST(MatMulTest, EveryWarpGemmPointComputesTheProduct) {
  codegen::Target gpu = EmulatedH100Target(CpuTarget());
  HostTensor a = Random(DType::kFloat32, {67, 259}, 1400),
             b = Random(DType::kFloat32, {259, 131}, 1401);
  ir::Attrs attrs{{"compute_mode", static_cast<int64_t>(ComputeMode::kTf32x3)}};
  ir::Graph g;
  ir::Node* node = g.AddNode(
      ir::OpKind::kMatMul,
      {g.AddInput("a", {a.dtype, a.shape}), g.AddInput("b", {b.dtype, b.shape})}, attrs, "mm");
  std::optional<codegen::Tunable> t = codegen::TunableOf(*node, gpu);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->family, "warp_gemm");
  ASSERT_GT(t->candidates.size(), 20u);
  std::set<int64_t> splits;
  for (const codegen::TunePoint& p : t->candidates) splits.insert(p.at("split"));
  EXPECT_GT(splits.size(), 2u) << "whole and split K ranges";
  // Every fifth point, and the first with two warp groups along K.
  std::vector<size_t> run;
  for (size_t i = 0; i < t->candidates.size(); i += 5) run.push_back(i);
  for (size_t i = 0; i < t->candidates.size(); ++i)
    if (t->candidates[i].at("kgroups") == 2) {
      run.push_back(i);
      break;
    }
  ASSERT_GT(t->candidates[run.back()].at("kgroups"), 1) << "points with warp groups along K";
  int split_before = split_runs;
  for (size_t i : run) {
    OnePoint source(t->candidates[i]);
    codegen::Target picked = gpu;
    picked.tuning = &source;
    ExpectMatches(RunKernel(a, b, nullptr, picked, attrs), a, b,
                  "tf32x3 " + codegen::PointString(t->candidates[i]), 2e-5);
  }
  EXPECT_GT(split_runs, split_before) << "some points split K";
}

// Reduced-precision products on the warp-tiled kernel in the models' form (gemm/warp_gemm.h):
// sizes fixed, broadcast batches, transposes, edges, f16 storage, and K split where the GPU's
// tiles would not fill it; not for shallow products. PoCL runs the kernel's FMA emulation of the
// matrix engine's rounding (Target::mma_emulated); the GPU's tiling is generated for an H100
// without its PTX.
TEST(MatMulTest, WarpKernelForModels) {
  struct WarpCase {
    Shape a, b;  // as multiplied
    bool ta, tb;
  };
  const std::vector<WarpCase> cases = {
      {{67, 259}, {259, 131}, false, false},      {{2, 1, 70, 256}, {3, 256, 36}, false, true},
      {{128, 512}, {512, 96}, false, false},      {{2, 37, 300}, {2, 300, 68}, true, false},
      {{4, 5, 264}, {1, 264, 128}, false, false}, {{3, 20, 257}, {257, 17}, true, true},
  };
  codegen::Target cpu = CpuTarget(), gpu = EmulatedH100Target(cpu);
  cpu.mma_emulated = true;
  struct Mode {
    ComputeMode mode;
    DType storage;
    double tol;  // per sqrt(K): tf32 operands keep 11 significant bits
  };
  const Mode modes[] = {{ComputeMode::kTf32, DType::kFloat32, 2e-3},
                        {ComputeMode::kTf32x3, DType::kFloat32, 2e-5},
                        {ComputeMode::kFp16, DType::kFloat16, 4e-3}};
  uint32_t seed = 1200;
  int runs = 0, before = warp_runs, splits_before = split_runs;
  for (size_t mi = 0; mi < std::size(modes); ++mi)
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const Mode& m = modes[mi];
      const WarpCase& c = cases[ci];
      HostTensor a = Random(m.storage, c.a, ++seed), b = Random(m.storage, c.b, ++seed);
      bool half = m.storage == DType::kFloat16;
      HostTensor sa = c.ta ? SwapLastTwo(half ? ToF32(a) : a) : a;
      HostTensor sb = c.tb ? SwapLastTwo(half ? ToF32(b) : b) : b;
      if (half && c.ta) sa = ToF16(sa);
      if (half && c.tb) sb = ToF16(sb);
      ir::Attrs attrs{{"trans_a", int64_t{c.ta}},
                      {"trans_b", int64_t{c.tb}},
                      {"compute_mode", static_cast<int64_t>(m.mode)}};
      std::string what = fmt::format("{} {}{} x {}{}", ComputeModeName(m.mode), ShapeStr(c.a),
                                     c.ta ? "^T" : "", ShapeStr(c.b), c.tb ? "^T" : "");
      // This device's tiling or the GPU's, in turns (each build takes PoCL a while).
      const codegen::Target& t = (mi + ci) % 2 ? gpu : cpu;
      ExpectMatches(RunKernel(sa, sb, nullptr, t, attrs), a, b, what + (t.gpu ? " gpu" : ""),
                    m.tol);
      ++runs;
    }
  EXPECT_EQ(warp_runs - before, runs) << "every product ran on the warp-tiled kernel";
  // A shallow product (K < 256) keeps the scalar kernels, which measured faster there.
  HostTensor a = Random(DType::kFloat32, {64, 128}, 1300),
             b = Random(DType::kFloat32, {128, 64}, 1301);
  RunKernel(a, b, nullptr, cpu, {{"compute_mode", static_cast<int64_t>(ComputeMode::kTf32)}});
  EXPECT_EQ(warp_runs - before, runs);
  EXPECT_GT(split_runs - splits_before, 0) << "the GPU's tiling splits K somewhere";
}

// Models' fp16 products on the warpgroup kernel (gemm/wgmma_gemm.h GenerateModelWgmmaGemm), on
// the device's instruction where it has one (an H100 or H200) and elsewhere on its emulation from
// the same local-memory layout with an H100's facts: edges along M, N and K (K a multiple of 8,
// not of a step), broadcast batches, both transposes, tiles of one and two warpgroups, 32 to 256
// columns, 128-byte rows, and K split into slices added by the sum kernel. Every tiling is a
// point of the product's tunable family, picked as the tuner picks it.
TEST(MatMulTest, WarpgroupKernelForModels) {
  codegen::Target t = CpuTarget();
  if (!t.wgmma) {
    t = EmulatedH100Target(t);
    t.wgmma_emulated = true;
  }
  // The kernel's tilings are offered only where 128 x 128 tiles fill the device: a device of 1
  // compute unit, for these small products.
  codegen::GemmOperands layer;  // a transformer layer's projection at batch 1
  layer.shape.m = 128, layer.shape.n = 768, layer.shape.k = 768;
  layer.shape.dtype = DType::kFloat16, layer.shape.mode = ComputeMode::kFp16;
  EXPECT_TRUE(codegen::ModelWgmmaTilings(layer, t).empty());
  codegen::GemmOperands conv = layer;  // a convolution's image is gathered, never staged so
  conv.convolution = true;
  EXPECT_TRUE(codegen::CheckModelWgmma({64, 64, 4, 64}, conv, t).has_value());
  t.compute_units = 1;
  struct WgCase {
    Shape a, b;  // as multiplied
    bool ta, tb;
  };
  const std::vector<WgCase> cases = {
      {{197, 264}, {264, 72}, false, false},         // ViT's rows; N and K not whole tiles or steps
      {{2, 1, 64, 256}, {3, 256, 96}, false, true},  // broadcast batches, B stored [N, K]
      {{128, 512}, {512, 768}, false, false},        // a transformer layer's projection
      {{72, 320}, {320, 40}, true, false},           // A stored [K, M]
  };
  uint32_t seed = 1500;
  int runs = 0, splits_before = split_runs;
  std::set<std::string> tried;
  for (const WgCase& c : cases) {
    HostTensor a = Random(DType::kFloat16, c.a, ++seed), b = Random(DType::kFloat16, c.b, ++seed);
    HostTensor sa = c.ta ? ToF16(SwapLastTwo(ToF32(a))) : a;
    HostTensor sb = c.tb ? ToF16(SwapLastTwo(ToF32(b))) : b;
    ir::Attrs attrs{{"trans_a", int64_t{c.ta}},
                    {"trans_b", int64_t{c.tb}},
                    {"compute_mode", static_cast<int64_t>(ComputeMode::kFp16)}};
    ir::Graph g;
    ir::Node* node =
        g.AddNode(ir::OpKind::kMatMul,
                  {g.AddInput("a", {sa.dtype, sa.shape}), g.AddInput("b", {sb.dtype, sb.shape})},
                  attrs, "mm");
    std::optional<codegen::Tunable> tn = codegen::TunableOf(*node, t);
    ASSERT_TRUE(tn.has_value());
    // The warpgroup kernel's first point (the heuristic's tiling for it), and of the others each
    // that brings a kind of tiling not tried yet: rows, row bytes and split, or columns.
    std::vector<codegen::TunePoint> run;
    for (const codegen::TunePoint& p : tn->candidates) {
      if (!p.contains("wgmma")) continue;
      bool rows = tried
                      .insert(fmt::format("{} rows r{}{}", p.at("bm"), p.at("rowb"),
                                          p.at("split") > 1 ? " split" : ""))
                      .second;
      bool cols = tried.insert(fmt::format("{} columns", p.at("bn"))).second;
      if (rows || cols || run.empty()) run.push_back(p);
    }
    ASSERT_FALSE(run.empty()) << ShapeStr(c.a) << ": no warpgroup tilings";
    for (const codegen::TunePoint& p : run) {
      OnePoint source(p);
      codegen::Target picked = t;
      picked.tuning = &source;
      std::string what = fmt::format("{}{} x {}{} {}", ShapeStr(c.a), c.ta ? "^T" : "",
                                     ShapeStr(c.b), c.tb ? "^T" : "", codegen::PointString(p));
      ExpectMatches(RunKernel(sa, sb, nullptr, picked, attrs), a, b, what, 4e-3);
      ++runs;
    }
  }
  for (const char* kind : {"64 rows r64", "128 rows r64 split", "64 rows r128", "128 rows r128",
                           "32 columns", "256 columns"})
    EXPECT_TRUE(tried.contains(kind)) << kind << " not tried";
  EXPECT_GT(split_runs, splits_before) << "some tilings split K";
  EXPECT_GT(runs, 8);
}

// The tiles the GPU's products get on an H100 (docs/precision.md): a transformer layer's few rows
// take 32 x 64 tiles of 4 warps, 5 stages deep in fp16 and 3 twice as deep in tf32, split along
// K only where those still leave compute units idle (tf32x3's, of 2^30 multiply-adds or more,
// keep 128-row tiles); a convolution with few tiles 64 x 32 in every mode; a large product keeps
// 128 x 128.
TEST(MatMulTest, WarpTilesForFewRows) {
  codegen::Target gpu = H100Target();
  gpu.mma_sync = true;
  auto choose = [&](int64_t m, int64_t n, int64_t k, ComputeMode mode, bool conv = false) {
    codegen::GemmOperands g;
    g.shape.m = m, g.shape.n = n, g.shape.k = k, g.shape.mode = mode;
    g.shape.dtype = mode == ComputeMode::kFp16 ? DType::kFloat16 : DType::kFloat32;
    g.convolution = conv;
    std::optional<codegen::WarpGemmParams> p = codegen::ChooseModelWarpGemm(g, gpu);
    EXPECT_TRUE(p.has_value());
    return p.value_or(codegen::WarpGemmParams{});
  };
  EXPECT_EQ(choose(128, 3072, 768, ComputeMode::kFp16).ToString(),
            "warp 32x64x32 / 16x32 s5");                                     // 192 tiles
  codegen::WarpGemmParams proj = choose(128, 768, 768, ComputeMode::kFp16);  // 48 tiles
  EXPECT_EQ(proj.bm, 32);
  EXPECT_GT(proj.split_k, 1);
  EXPECT_EQ(choose(128, 3072, 768, ComputeMode::kTf32).ToString(), "warp 32x64x32 / 16x32 s3");
  EXPECT_EQ(choose(4096, 4096, 4096, ComputeMode::kFp16).bm, 128);
  EXPECT_EQ(choose(4096, 4096, 4096, ComputeMode::kTf32).bm, 128);
  EXPECT_EQ(choose(1024, 1024, 1024, ComputeMode::kTf32x3).bm, 128);  // 64 tiles
  for (ComputeMode mode : {ComputeMode::kFp16, ComputeMode::kTf32, ComputeMode::kTf32x3}) {
    codegen::WarpGemmParams conv = choose(256, 196, 1152, mode, true);
    EXPECT_EQ(conv.bm * 1000 + conv.bn, 64032) << conv.ToString();
    EXPECT_EQ(conv.bk * (mode == ComputeMode::kFp16 ? 2 : 4), 128) << "128-byte rows";
    EXPECT_EQ(conv.kgroups, 2) << "a convolution's small tiles take two warp groups along K";
  }
  EXPECT_EQ(proj.kgroups, 1) << "a product's do not";
  EXPECT_EQ(choose(256, 50176, 64, ComputeMode::kFp16, true).bm, 128);
}

// The warp-tiled kernel declares what it needs of the device (the plan's DeviceNeeds): PTX and
// tensor cores with the real matrix engine, nothing with its emulation or the scalar kernels.
TEST(MatMulTest, KernelsDeclareTheirDeviceNeeds) {
  ir::Graph g;
  ir::Node* node = g.AddNode(ir::OpKind::kMatMul,
                             {g.AddInput("a", {DType::kFloat32, {128, 512}}),
                              g.AddInput("b", {DType::kFloat32, {512, 96}})},
                             {{"compute_mode", static_cast<int64_t>(ComputeMode::kTf32)}}, "mm");
  // (Not this device's target: on a GPU with the engine that would be `engine`.)
  codegen::Target engine = H100Target(), emulated = H100Target(), cpu;
  engine.mma_sync = true;
  emulated.mma_emulated = true;
  for (auto [t, needs] : {std::pair{&engine, true}, {&emulated, false}, {&cpu, false}}) {
    std::vector<codegen::KernelSpec> specs = codegen::GenerateKernel(*node, "mm", *t);
    EXPECT_EQ(specs[0].source.find("#define MODEL 1") != std::string::npos, t != &cpu);
    EXPECT_EQ(specs[0].inline_ptx, needs);
    EXPECT_EQ(specs[0].tensor_cores, needs);
    // The template's text holds the PTX paths either way: the source cannot tell.
    EXPECT_EQ(specs[0].source.find("mma.sync") != std::string::npos, t != &cpu);
  }
}

// The full compile path with this device's heuristic: batch broadcast, M = 1, odd sizes, and a
// constant right operand.
TEST(MatMulTest, CompiledGraph) {
  HostTensor a = RandomF32({2, 1, 9, 33}, 801), b = RandomF32({3, 33, 20}, 802);
  HostTensor v = RandomF32({1, 64}, 803), w = RandomF32({64, 1000}, 804);
  HostTensor x = RandomF32({5, 17, 31}, 805), c = RandomF32({31, 7}, 806);
  auto g = std::make_unique<ir::Graph>();
  auto out = [&](ir::Value* l, ir::Value* r) {
    g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {l, r}, {}, "mm")->outputs[0]);
  };
  out(g->AddInput("a", {DType::kFloat32, a.shape}), g->AddInput("b", {DType::kFloat32, b.shape}));
  out(g->AddInput("v", {DType::kFloat32, v.shape}),
      g->AddConstant("w", std::make_shared<HostTensor>(w)));
  out(g->AddInput("x", {DType::kFloat32, x.shape}),
      g->AddConstant("c", std::make_shared<HostTensor>(c)));
  std::vector<HostTensor> y = CompileAndRun(std::move(g), {{"a", a}, {"b", b}, {"v", v}, {"x", x}});
  ASSERT_EQ(y.size(), 3u);
  ExpectMatches(y[0], a, b, "[2,1,9,33] x [3,33,20]");
  ExpectMatches(y[1], v, w, "[1,64] x [64,1000]");
  ExpectMatches(y[2], x, c, "[5,17,31] x [31,7]");
}

}  // namespace
}  // namespace texel
