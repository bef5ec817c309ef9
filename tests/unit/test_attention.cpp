// The attention and normalize passes and their kernels, end to end on PoCL: graphs written the
// ways exporters write attention and normalisation, checked against a float64 reference, with
// the fused node counted; near-misses that must stay unfused, checked against the same graph
// compiled without the passes. Also IndexMap, the views the attention kernel reads through.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "backends/native/bound_kernels.h"
#include "backends/native/native_backend.h"
#include "codegen/opencl/generator.h"
#include "ir/index_map.h"
#include "kernel_test_util.h"

namespace texel {
namespace {

using ir::OpKind;
using testing::F;
using Ints = std::vector<int64_t>;
using Builder = std::function<void(ir::Graph&)>;

ir::Value* Op(ir::Graph& g, OpKind op, std::vector<ir::Value*> in, ir::Attrs attrs = {}) {
  return g.AddNode(op, std::move(in), std::move(attrs), "n")->outputs[0];
}
ir::Value* Scalar(ir::Graph& g, double v) {
  auto t = std::make_shared<HostTensor>(DType::kFloat32, Shape{});
  t->SetDouble(0, v);
  return g.AddConstant("c", t);
}
ir::Value* Reshape(ir::Graph& g, ir::Value* x, Ints s) {
  return Op(g, OpKind::kReshape, {x}, {{"shape", s}});
}
ir::Value* Transpose(ir::Graph& g, ir::Value* x, Ints perm) {
  return Op(g, OpKind::kTranspose, {x}, {{"perm", perm}});
}
ir::Value* Softmax(ir::Graph& g, ir::Value* x, int64_t axis) {
  return Op(g, OpKind::kSoftmax, {x}, {{"axis", axis}});
}

struct Result {
  std::vector<HostTensor> fused, plain;
  int attentions = 0, norms = 0, transposes = 0, matmuls = 0, slices = 0;
};

// Compiles the graph twice (with and without the pattern passes) and runs both on `inputs`.
Result CompileBoth(const Builder& build, const std::map<std::string, HostTensor>& inputs) {
  Result r;
  for (bool fused : {true, false}) {
    auto g = std::make_unique<ir::Graph>();
    build(*g);
    CompileOptions opts;
    if (!fused) opts.disabled_passes = {"merge-projections", "attention", "normalize", "views"};
    CompiledModel m = CompileGraph(std::move(g), testing::SharedContext(), opts);
    runtime::Session s(*m.executable);
    (fused ? r.fused : r.plain) = s.Run(inputs);
    if (!fused) continue;
    for (const auto& n : m.graph->nodes()) {
      r.attentions += n->op == OpKind::kAttention;
      r.norms += n->op == OpKind::kLayerNorm;
      r.transposes += n->op == OpKind::kTranspose;
      r.matmuls += n->op == OpKind::kMatMul;
      r.slices += n->op == OpKind::kSlice;
    }
  }
  return r;
}

// softmax(scale * q kᵀ + bias(b, i, j)) v over q [B, Sq, D], k [B, Sk, D], v [B, Sk, Dv], in
// float64; bias may return -inf.
HostTensor RefAttention(const HostTensor& q, const HostTensor& k, const HostTensor& v, double scale,
                        const std::function<double(int64_t, int64_t, int64_t)>& bias) {
  int64_t b = q.shape[0], sq = q.shape[1], d = q.shape[2], sk = k.shape[1], dv = v.shape[2];
  HostTensor out(DType::kFloat32, {b, sq, dv});
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < sq; ++i) {
      std::vector<double> s(sk);
      double m = -INFINITY;
      for (int64_t j = 0; j < sk; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < d; ++c)
          acc += F(q, (n * sq + i) * d + c) * F(k, (n * sk + j) * d + c);
        s[j] = scale * acc + bias(n, i, j);
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - m));
      for (int64_t c = 0; c < dv; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < sk; ++j) acc += s[j] / sum * F(v, (n * sk + j) * dv + c);
        out.data<float>()[(n * sq + i) * dv + c] = static_cast<float>(acc);
      }
    }
  return out;
}

HostTensor Reshaped(HostTensor t, Shape s) {
  t.shape = std::move(s);
  return t;
}

// [B, S, H*D] -> [B*H, S, D] on the host (heads split).
HostTensor SplitHeads(const HostTensor& x, int64_t h) {
  int64_t b = x.shape[0], s = x.shape[1], d = x.shape[2] / h;
  HostTensor out(DType::kFloat32, {b * h, s, d});
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < s; ++i)
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t c = 0; c < d; ++c)
          out.data<float>()[((n * h + hh) * s + i) * d + c] =
              F(x, (n * s + i) * h * d + hh * d + c);
  return out;
}

TEST(AttentionTest, PlainBatchedWithBiasOddShapes) {
  // [2, 37, 20] (D not a multiple of 4: scalar lanes), Sk 45, Dv 12, bias [1, 37, 45] + scale.
  HostTensor q = testing::RandomF32({2, 37, 20}, 1), k = testing::RandomF32({2, 45, 20}, 2),
             v = testing::RandomF32({2, 45, 12}, 3), bias = testing::RandomF32({1, 37, 45}, 4);
  Builder build = [&](ir::Graph& g) {
    ir::Value* s = Op(
        g, OpKind::kMatMul,
        {g.AddInput("q", {DType::kFloat32, q.shape}), g.AddInput("k", {DType::kFloat32, k.shape})},
        {{"trans_b", int64_t{1}}});
    s = Op(g, OpKind::kDiv, {s, Scalar(g, std::sqrt(20.0))});
    s = Op(g, OpKind::kAdd, {g.AddInput("bias", {DType::kFloat32, bias.shape}), s});
    g.AddOutput(
        Op(g, OpKind::kMatMul, {Softmax(g, s, 2), g.AddInput("v", {DType::kFloat32, v.shape})}));
  };
  Result r = CompileBoth(build, {{"q", q}, {"k", k}, {"v", v}, {"bias", bias}});
  EXPECT_EQ(r.attentions, 1);
  HostTensor want = RefAttention(q, k, v, 1 / std::sqrt(20.0), [&](int64_t, int64_t i, int64_t j) {
    return F(bias, i * 45 + j);
  });
  testing::ExpectClose(r.fused.at(0), want, "attention");
  testing::ExpectClose(r.plain.at(0), want, "unfused");
}

// The GPU's tiled kernel in each of its layouts (32 or 64 rows per work-group, 4 or 8 per
// work-item) split over the keys, merged by a second kernel or by the last work-group of each
// row block (NVIDIA's way), causal or not, each run twice with the result cleared in between:
// the arrival counters must be back at zero after a run.
TEST(AttentionTest, TiledKernelSplitsMergedBothWays) {
  HostTensor q = testing::RandomF32({3, 70, 64}, 11), k = testing::RandomF32({3, 70, 64}, 12),
             v = testing::RandomF32({3, 70, 64}, 13);
  const cl::Context& ctx = *testing::SharedContext();
  cl::Buffer dq(ctx, q.bytes.size()), dk(ctx, k.bytes.size()), dv(ctx, v.bytes.size()),
      dout(ctx, q.bytes.size());
  dq.Write(ctx, q.bytes.data(), q.bytes.size());
  dk.Write(ctx, k.bytes.data(), k.bytes.size());
  dv.Write(ctx, v.bytes.data(), v.bytes.size());
  struct Variant {
    int rows, rm, causal;
    bool handoff, async = false;
  };
  for (Variant var :
       {Variant{64, 4, 0, false}, Variant{64, 4, 1, true}, Variant{64, 8, 1, false},
        Variant{64, 8, 0, true}, Variant{32, 4, 0, true}, Variant{32, 4, 1, false},
        Variant{32, 8, 1, true}, Variant{32, 8, 0, false}, Variant{64, 4, 0, true, true},
        Variant{64, 4, 1, false, true}, Variant{32, 4, 1, true, true}}) {
    const int causal = var.causal;
    const bool handoff = var.handoff;
    ir::Graph g;
    ir::Value* in[3] = {g.AddInput("q", {DType::kFloat32, q.shape}),
                        g.AddInput("k", {DType::kFloat32, k.shape}),
                        g.AddInput("v", {DType::kFloat32, v.shape})};
    ir::Node* node = g.AddNode(OpKind::kAttention, {in[0], in[1], in[2]},
                               {{"scale", 0.125}, {"causal", int64_t{causal}}}, "attention");
    codegen::Target target = backends::NativeBackend::TargetOf(ctx.info());
    target.gpu = true;
    target.group_handoff = handoff;
    codegen::AttentionParams p;
    p.tiled = true;
    p.bq = var.rows;
    p.rm = var.rm;
    p.splits = 2;
    p.async_copy = var.async;  // PoCL: a plain copy in cp.async's place, the same schedule
    std::vector<codegen::KernelSpec> specs =
        codegen::GenerateAttentionWith(*node, "att", target, &p);
    EXPECT_EQ(specs[0].source.find("#define ASYNC 1") != std::string::npos, var.async);
    EXPECT_EQ(specs.size(), handoff ? 1u : 2u);
    backends::BoundKernels run(ctx, std::move(specs), [&](int id) -> const cl::Buffer& {
      return id == in[0]->id ? dq : id == in[1]->id ? dk : id == in[2]->id ? dv : dout;
    });
    std::vector<char> nan(q.bytes.size(), '\xff');
    for (int r = 0; r < 2; ++r) {
      dout.Write(ctx, nan.data(), nan.size());
      run.Launch(ctx);
    }
    HostTensor got(DType::kFloat32, q.shape);
    dout.Read(ctx, got.bytes.data(), got.bytes.size());
    HostTensor want = RefAttention(q, k, v, 0.125, [&](int64_t, int64_t i, int64_t j) {
      return causal && j > i ? -INFINITY : 0.0;
    });
    testing::ExpectClose(got, want,
                         fmt::format("{}x{} causal {} handoff {} async {}", var.rows, var.rm,
                                     causal, handoff, var.async));
  }
}

// The attention family (AttentionTunable): the heuristic's point first, and every third point
// of the space (some splitting the keys) computes the reference, for the kernels a CPU, a GPU (the
// tiled kernel, its own merge of the splits or a merge kernel) and a GPU with a matrix engine (f16,
// emulated here) get.
TEST(AttentionTest, EveryAttentionPointComputesTheReference) {
  const cl::Context& ctx = *testing::SharedContext();
  struct Case {
    const char* what;
    DType t;
    int64_t sk, d, dv;
    bool gpu, handoff, engine;
  };
  // Keys enough for two splits of two tiles each (32 keys a tile, 64 on the engine).
  for (const Case& c :
       {Case{"cpu", DType::kFloat32, 70, 64, 64, false, false, false},
        Case{"gpu tiled", DType::kFloat32, 140, 64, 64, true, true, false},
        Case{"gpu tiled, merge kernel", DType::kFloat32, 140, 64, 64, true, false, false},
        Case{"gpu engine", DType::kFloat16, 260, 48, 32, true, false, true}}) {
    const int64_t b = 3, sq = 70;
    HostTensor q = testing::RandomF32({b, sq, c.d}, 31), k = testing::RandomF32({b, c.sk, c.d}, 32),
               v = testing::RandomF32({b, c.sk, c.dv}, 33);
    bool half = c.t == DType::kFloat16;
    HostTensor qs = half ? testing::ToF16(q) : q, ks = half ? testing::ToF16(k) : k,
               vs = half ? testing::ToF16(v) : v;
    size_t out_bytes = static_cast<size_t>(b * sq * c.dv) * (half ? 2 : 4);
    cl::Buffer dq(ctx, qs.bytes.size()), dk(ctx, ks.bytes.size()), dv(ctx, vs.bytes.size()),
        dout(ctx, out_bytes);
    dq.Write(ctx, qs.bytes.data(), qs.bytes.size());
    dk.Write(ctx, ks.bytes.data(), ks.bytes.size());
    dv.Write(ctx, vs.bytes.data(), vs.bytes.size());
    ir::Graph g;
    ir::Value* in[3] = {g.AddInput("q", {c.t, qs.shape}), g.AddInput("k", {c.t, ks.shape}),
                        g.AddInput("v", {c.t, vs.shape})};
    ir::Node* node = g.AddNode(OpKind::kAttention, {in[0], in[1], in[2]},
                               {{"scale", 0.125}, {"causal", int64_t{1}}}, "attention");
    codegen::Target target = backends::NativeBackend::TargetOf(ctx.info());
    target.gpu = c.gpu;
    target.group_handoff = c.handoff;
    target.mma_emulated = c.engine && !target.mma_sync;
    target.local_mem_bytes = std::min<uint64_t>(target.local_mem_bytes, 48 * 1024);
    std::optional<codegen::Tunable> t = codegen::TunableOf(*node, target);
    ASSERT_TRUE(t.has_value()) << c.what;
    EXPECT_EQ(t->family, "attention");
    EXPECT_EQ(t->candidates[0].at("kernel"), c.engine ? 2 : c.gpu ? 1 : 0) << c.what;
    ASSERT_GE(t->candidates.size(), 4u) << c.what;
    // The reference on the inputs as stored (f16: rounded), the causal mask's upper triangle.
    HostTensor want = RefAttention(
        half ? testing::ToF32(qs) : q, half ? testing::ToF32(ks) : k, half ? testing::ToF32(vs) : v,
        0.125,
        [&](int64_t, int64_t i, int64_t j) { return j > i + (c.sk - sq) ? -INFINITY : 0.0; });
    std::set<int64_t> splits;
    for (const codegen::TunePoint& p : t->candidates) splits.insert(p.at("splits"));
    EXPECT_EQ(splits.size(), c.gpu ? 2u : 1u) << c.what;
    testing::ExpectPointsChangeTheKernel(*node, target, t->candidates, c.what);
    for (size_t i = 0; i < t->candidates.size(); i += 3) {
      testing::OnePoint source(t->candidates[i]);
      codegen::Target picked = target;
      picked.tuning = &source;
      backends::BoundKernels run(
          ctx, codegen::GenerateKernel(*node, "att", picked), [&](int id) -> const cl::Buffer& {
            return id == in[0]->id ? dq : id == in[1]->id ? dk : id == in[2]->id ? dv : dout;
          });
      std::vector<char> nan(out_bytes, '\xff');
      dout.Write(ctx, nan.data(), nan.size());
      run.Launch(ctx);
      HostTensor got(c.t, {b, sq, c.dv});
      dout.Read(ctx, got.bytes.data(), got.bytes.size());
      testing::ExpectClose(half ? testing::ToF32(got) : got, want,
                           fmt::format("{} {}", c.what, codegen::PointString(t->candidates[i])),
                           half ? 2e-2f : 1e-4f);
    }
  }
}

// What the heuristic picks on an H100-like GPU at the shapes measured in docs/attention.md.
// With K and V copied by cp.async (compute capability 8.0 and later): 32-row blocks split
// about 4 per compute unit, but 64-row blocks for causal attention with enough of them (1024).
// With register staging: BERT's sequence of 128 in 32-row blocks, ViT's 197 and 1024 in 64-row
// blocks split 2 (4 causal), Swin's 49-token windows unsplit.
TEST(AttentionTest, GpuChoicesAtTransformerShapes) {
  struct Case {
    int64_t sq, batch, d;
    bool causal;
    int rows, splits;
  };
  for (bool async : {true, false}) {
    codegen::Target gpu = testing::H100Target();
    gpu.mma_sync = async;
    std::vector<Case> cases =
        async ? std::vector<Case>{{128, 12, 64, false, 32, 2},  {197, 12, 64, false, 32, 2},
                                  {1024, 12, 64, false, 32, 2}, {1024, 12, 64, true, 64, 4},
                                  {256, 12, 64, true, 32, 4},   {49, 192, 32, false, 32, 1}}
              : std::vector<Case>{{128, 12, 64, false, 32, 2},
                                  {197, 12, 64, false, 64, 2},
                                  {1024, 12, 64, false, 64, 2},
                                  {1024, 12, 64, true, 64, 4},
                                  {49, 192, 32, false, 64, 1}};
    for (Case c : cases) {
      codegen::AttentionParams p = codegen::ChooseAttentionParams(c.sq, c.sq, c.batch, c.d, c.d,
                                                                  DType::kFloat32, c.causal, gpu);
      std::string what =
          fmt::format("seq {} x {} d {} causal {} async {}", c.sq, c.batch, c.d, c.causal, async);
      EXPECT_TRUE(p.tiled && p.warp_sync && p.fast_exp) << what;
      EXPECT_EQ(p.async_copy, async) << what;
      EXPECT_EQ(p.bq, c.rows) << what;
      EXPECT_EQ(p.rm, 4) << what;
      EXPECT_EQ(p.splits, c.splits) << what;
    }
  }
}

// The f16 matrix-engine kernel (attention_mma.cl): on PoCL through its emulation (each work-item
// computes its lane's mma entries with FMAs), on a GPU with mma.sync on the engine: 1, 2
// and 4 warps, key tiles of 16 to 64, head dims 48 and 32 (Q·Kᵀ and P·V of different depths),
// more keys than queries, causal with the diagonal offset, a bias, split over the keys and merged.
// Inputs are rounded to f16 and the reference computed on the rounded values; the kernel rounds
// P to f16 as the engine reads it.
TEST(AttentionTest, MatrixEngineKernelEmulated) {
  const int64_t b = 3, sq = 70, sk = 90, d = 48, dv = 32;
  HostTensor q = testing::ToF16(testing::RandomF32({b, sq, d}, 21)),
             k = testing::ToF16(testing::RandomF32({b, sk, d}, 22)),
             v = testing::ToF16(testing::RandomF32({b, sk, dv}, 23)),
             bias = testing::ToF16(testing::RandomF32({1, sq, sk}, 24));
  const cl::Context& ctx = *testing::SharedContext();
  cl::Buffer dq(ctx, q.bytes.size()), dk(ctx, k.bytes.size()), dv_(ctx, v.bytes.size()),
      db(ctx, bias.bytes.size()), dout(ctx, static_cast<size_t>(b * sq * dv * 2));
  dq.Write(ctx, q.bytes.data(), q.bytes.size());
  dk.Write(ctx, k.bytes.data(), k.bytes.size());
  dv_.Write(ctx, v.bytes.data(), v.bytes.size());
  db.Write(ctx, bias.bytes.data(), bias.bytes.size());
  struct Variant {
    int warps, bkv, splits, causal;
    bool bias;
  };
  for (Variant var :
       {Variant{1, 64, 1, 0, false}, Variant{2, 32, 1, 1, false}, Variant{4, 16, 1, 0, true},
        Variant{4, 64, 2, 1, true}, Variant{1, 32, 3, 0, true}, Variant{2, 16, 2, 1, false}}) {
    ir::Graph g;
    std::vector<ir::Value*> in = {g.AddInput("q", {DType::kFloat16, q.shape}),
                                  g.AddInput("k", {DType::kFloat16, k.shape}),
                                  g.AddInput("v", {DType::kFloat16, v.shape})};
    if (var.bias) in.push_back(g.AddInput("bias", {DType::kFloat16, bias.shape}));
    ir::Node* node = g.AddNode(OpKind::kAttention, in,
                               {{"scale", 0.2}, {"causal", int64_t{var.causal}}}, "attention");
    codegen::Target target = backends::NativeBackend::TargetOf(ctx.info());
    target.gpu = true;
    target.mma_emulated = !target.mma_sync;
    target.local_mem_bytes = std::min<uint64_t>(target.local_mem_bytes, 48 * 1024);
    codegen::AttentionParams p;
    p.mma = true;
    p.bq = 16 * var.warps;
    p.bk = var.bkv;
    p.splits = var.splits;
    std::vector<codegen::KernelSpec> specs =
        codegen::GenerateAttentionWith(*node, "att", target, &p);
    ASSERT_NE(specs[0].source.find("texel-kernel: att"), std::string::npos);
    EXPECT_NE(specs[0].source.find(fmt::format("#define MMA_PTX {}", int{target.mma_sync})),
              std::string::npos);
    EXPECT_EQ(specs.size(), var.splits > 1 ? 2u : 1u);
    backends::BoundKernels run(ctx, std::move(specs), [&](int id) -> const cl::Buffer& {
      return id == in[0]->id               ? dq
             : id == in[1]->id             ? dk
             : id == in[2]->id             ? dv_
             : var.bias && id == in[3]->id ? db
                                           : dout;
    });
    std::vector<char> nan(static_cast<size_t>(b * sq * dv * 2), '\xff');
    dout.Write(ctx, nan.data(), nan.size());
    run.Launch(ctx);
    HostTensor got(DType::kFloat16, {b, sq, dv});
    dout.Read(ctx, got.bytes.data(), got.bytes.size());
    HostTensor bias32 = testing::ToF32(bias);
    HostTensor want =
        RefAttention(testing::ToF32(q), testing::ToF32(k), testing::ToF32(v), 0.2,
                     [&](int64_t, int64_t i, int64_t j) {
                       if (var.causal && j > i + (sk - sq)) return -double{INFINITY};
                       return var.bias ? static_cast<double>(F(bias32, i * sk + j)) : 0.0;
                     });
    testing::ExpectClose(testing::ToF32(got), want,
                         fmt::format("{} warps, {} keys a tile, split {}, causal {}, bias {}",
                                     var.warps, var.bkv, var.splits, var.causal, var.bias),
                         2e-3f);
  }
}

// What the heuristic picks for f16 on an H100 (mma.sync) and on its emulation: the matrix-engine
// kernel with warps halved while the work-groups are fewer than half the compute units (BERT's
// 128 x 12 heads: 1 warp, 96 groups; ViT's 197: 2 warps, 84 groups; 1024 x 12: 4 warps), split
// over the keys only below that (256 x 2: 32 groups of 1 warp, 2 splits of 2 tiles), and key
// tiles of 32 for head dims of 128 (two tiles of K and V in 48 KiB); head dims off the 16 grid or
// f32 storage keep the fp32-arithmetic kernels.
TEST(AttentionTest, MatrixEngineChoices) {
  for (bool emulated : {false, true}) {
    codegen::Target gpu = testing::H100Target();
    gpu.mma_sync = !emulated;
    gpu.mma_emulated = emulated;
    auto choose = [&](int64_t sq, int64_t batch, int64_t d, DType t) {
      return codegen::ChooseAttentionParams(sq, sq, batch, d, d, t, false, gpu);
    };
    codegen::AttentionParams bert = choose(128, 12, 64, DType::kFloat16);
    EXPECT_TRUE(bert.mma && !bert.tiled);
    EXPECT_EQ(bert.bq, 16);
    EXPECT_EQ(bert.bk, 64);
    EXPECT_EQ(bert.splits, 1);
    codegen::AttentionParams vit = choose(197, 12, 64, DType::kFloat16);
    EXPECT_EQ(vit.bq, 32);
    EXPECT_EQ(vit.splits, 1);
    codegen::AttentionParams longer = choose(1024, 12, 64, DType::kFloat16);
    EXPECT_EQ(longer.bq, 64);
    EXPECT_EQ(longer.splits, 1);
    codegen::AttentionParams few = choose(256, 2, 64, DType::kFloat16);
    EXPECT_EQ(few.bq, 16);
    EXPECT_EQ(few.splits, 2);
    codegen::AttentionParams wide = choose(256, 12, 128, DType::kFloat16);
    EXPECT_TRUE(wide.mma);
    EXPECT_EQ(wide.bk, 32);
    EXPECT_FALSE(choose(128, 12, 40, DType::kFloat16).mma);
    EXPECT_FALSE(choose(128, 12, 64, DType::kFloat32).mma);
  }
}

TEST(AttentionTest, HeadsAsViewsWithCausalMask) {
  // GPT-2's form: one projection [1, S, 3*H*D] sliced into q, k, v, heads split by Reshape +
  // Transpose, K transposed by the Transpose (no trans_b), scale on q, a constant causal mask
  // through Where, heads merged by Transpose + Reshape. S 19, H 3, D 16.
  const int64_t s = 19, h = 3, d = 16, e = h * d;
  HostTensor x = testing::RandomF32({1, s, 3 * e}, 5);
  auto tril = std::make_shared<HostTensor>(DType::kBool, Shape{s, s});
  for (int64_t i = 0; i < s; ++i)
    for (int64_t j = 0; j < s; ++j) tril->data<uint8_t>()[i * s + j] = j <= i;
  Builder build = [&](ir::Graph& g) {
    ir::Value* xv = g.AddInput("x", {DType::kFloat32, x.shape});
    auto part = [&](int64_t p, Ints perm) {
      ir::Value* sl =
          Op(g, OpKind::kSlice, {xv},
             {{"starts", Ints{0, 0, p * e}}, {"steps", Ints{1, 1, 1}}, {"sizes", Ints{1, s, e}}});
      return Transpose(g, Reshape(g, sl, {1, s, h, d}), perm);
    };
    ir::Value* q = Op(g, OpKind::kMul, {part(0, {0, 2, 1, 3}), Scalar(g, 0.25)});
    ir::Value* sc = Op(g, OpKind::kMatMul, {q, part(1, {0, 2, 3, 1})});
    sc =
        Op(g, OpKind::kWhere, {g.AddConstant("tril", tril), sc, Scalar(g, -3.4028234663852886e38)});
    ir::Value* o = Op(g, OpKind::kMatMul, {Softmax(g, sc, 3), part(2, {0, 2, 1, 3})});
    g.AddOutput(Reshape(g, Transpose(g, o, {0, 2, 1, 3}), {1, s, e}));
  };
  Result r = CompileBoth(build, {{"x", x}});
  EXPECT_EQ(r.attentions, 1);
  EXPECT_EQ(r.transposes, 0) << "heads split and merged through views";
  // Reference on [H, S, D] operands.
  HostTensor q(DType::kFloat32, {1, s, e}), k(DType::kFloat32, {1, s, e}),
      v(DType::kFloat32, {1, s, e});
  for (int64_t i = 0; i < s; ++i)
    for (int64_t c = 0; c < e; ++c)
      for (auto [t, p] : {std::pair{&q, 0}, std::pair{&k, 1}, std::pair{&v, 2}})
        t->data<float>()[i * e + c] = F(x, i * 3 * e + p * e + c);
  HostTensor ref =
      RefAttention(SplitHeads(q, h), SplitHeads(k, h), SplitHeads(v, h), 0.25,
                   [](int64_t, int64_t i, int64_t j) { return j <= i ? 0 : -INFINITY; });
  HostTensor want(DType::kFloat32, {1, s, e});  // heads merged
  for (int64_t hh = 0; hh < h; ++hh)
    for (int64_t i = 0; i < s; ++i)
      for (int64_t c = 0; c < d; ++c)
        want.data<float>()[i * e + hh * d + c] = F(ref, (hh * s + i) * d + c);
  testing::ExpectClose(r.fused.at(0), want, "causal attention");
  testing::ExpectClose(r.plain.at(0), want, "unfused");
  // In fp16 on the (emulated) matrix engine: its kernel reads q, k and v through the same views
  // of the projection (row stride 3 x 48) and writes the heads merged.
  testing::ScopedEnv env("TEXEL_TARGET", "gpu:132:mma");
  auto g = std::make_unique<ir::Graph>();
  build(*g);
  CompileOptions opts;
  opts.precision = ComputeMode::kFp16;
  CompiledModel m = CompileGraph(std::move(g), testing::SharedContext(), opts);
  EXPECT_NE(m.executable->plan().source.find("texel-kernel: k"), std::string::npos);
  EXPECT_NE(m.executable->plan().source.find("#define BKV "), std::string::npos)
      << "the matrix-engine attention kernel";
  runtime::Session session(*m.executable);
  testing::ExpectClose(session.Run({{"x", x}}).at(0), want, "fp16 matrix engine", 5e-3f);
}

TEST(AttentionTest, HeadsGatheredFromPackedProjection) {
  // Newer torch.nn.MultiheadAttention exports: the packed projection [S, B, 3*E] reshaped to
  // [S, B, 3, E], moved to [3, S, B, E] and q, k, v taken by Gather at 0, 1, 2 (a Transpose
  // kernel and three Gathers per layer without views). S 21, B 1, H 2, D 8.
  const int64_t s = 21, h = 2, d = 8, e = h * d;
  HostTensor x = testing::RandomF32({s, 1, 3 * e}, 15);
  Builder build = [&](ir::Graph& g) {
    ir::Value* packed = Transpose(
        g, Reshape(g, g.AddInput("x", {DType::kFloat32, x.shape}), {s, 1, 3, e}), {2, 0, 1, 3});
    auto part = [&](int64_t p) {
      auto idx = std::make_shared<HostTensor>(DType::kInt64, Shape{});
      idx->data<int64_t>()[0] = p;
      ir::Value* t =
          Op(g, OpKind::kGather, {packed, g.AddConstant("i", idx)}, {{"axis", int64_t{0}}});
      return Transpose(g, Reshape(g, t, {s, h, d}), {1, 0, 2});  // [H, S, D]
    };
    ir::Value* sc = Op(g, OpKind::kMatMul, {part(0), part(1)}, {{"trans_b", int64_t{1}}});
    ir::Value* o = Op(g, OpKind::kMatMul, {Softmax(g, sc, 2), part(2)});
    g.AddOutput(Reshape(g, Transpose(g, o, {1, 0, 2}), {s, 1, e}));
  };
  Result r = CompileBoth(build, {{"x", x}});
  EXPECT_EQ(r.attentions, 1);
  EXPECT_EQ(r.transposes, 0) << "the packed projection read through views";
  testing::ExpectClose(r.fused.at(0), r.plain.at(0), "gathered heads");
}

TEST(AttentionTest, SeparateProjectionsMergedIntoOneProduct) {
  // Hugging Face BERT's form: query, key and value as three Linear layers of one input (bias
  // first in the Add), heads split by Reshape + Transpose. S 23, H 2, D 16.
  const int64_t s = 23, h = 2, d = 16, e = h * d;
  HostTensor x = testing::RandomF32({1, s, e}, 16);
  Builder build = [&](ir::Graph& g) {
    ir::Value* xv = g.AddInput("x", {DType::kFloat32, x.shape});
    auto proj = [&](uint32_t seed, Ints perm) {
      auto w = std::make_shared<HostTensor>(testing::RandomF32({e, e}, seed));
      auto b = std::make_shared<HostTensor>(testing::RandomF32({e}, seed + 1));
      ir::Value* y = Op(g, OpKind::kMatMul, {xv, g.AddConstant("w", w)});
      y = Op(g, OpKind::kAdd, {g.AddConstant("b", b), y});
      return Transpose(g, Reshape(g, y, {1, s, h, d}), perm);
    };
    ir::Value* q = proj(20, {0, 2, 1, 3});
    ir::Value* k = proj(22, {0, 2, 3, 1});
    ir::Value* v = proj(24, {0, 2, 1, 3});
    ir::Value* sc = Op(g, OpKind::kDiv, {Op(g, OpKind::kMatMul, {q, k}), Scalar(g, 4)});
    ir::Value* o = Op(g, OpKind::kMatMul, {Softmax(g, sc, 3), v});
    g.AddOutput(Reshape(g, Transpose(g, o, {0, 2, 1, 3}), {1, s, e}));
  };
  Result r = CompileBoth(build, {{"x", x}});
  EXPECT_EQ(r.attentions, 1);
  EXPECT_EQ(r.matmuls, 1) << "one product for q, k and v";
  EXPECT_EQ(r.transposes, 0);
  testing::ExpectClose(r.fused.at(0), r.plain.at(0), "merged projections");
}

TEST(AttentionTest, PaddingMaskInputAsBias) {
  // BERT's form: a mask input [B, 1, 1, Sk] turned into (1 - m) * min and added; Where with a
  // run-time condition. B 2, H 2, S 33, D 8.
  const int64_t b = 2, h = 2, s = 33, d = 8;
  HostTensor q = testing::RandomF32({b, h, s, d}, 6), k = testing::RandomF32({b, h, s, d}, 7),
             v = testing::RandomF32({b, h, s, d}, 8);
  HostTensor mask(DType::kBool, {b, 1, 1, s});
  for (int64_t i = 0; i < b * s; ++i) mask.data<uint8_t>()[i] = i % s < s - 5 - 7 * (i / s);
  Builder build = [&](ir::Graph& g) {
    ir::Value* sc = Op(
        g, OpKind::kMatMul,
        {g.AddInput("q", {DType::kFloat32, q.shape}), g.AddInput("k", {DType::kFloat32, k.shape})},
        {{"trans_b", int64_t{1}}});
    sc = Op(g, OpKind::kMul, {Scalar(g, 0.5), sc});
    sc = Op(g, OpKind::kWhere,
            {g.AddInput("mask", {DType::kBool, mask.shape}), sc, Scalar(g, -INFINITY)});
    g.AddOutput(
        Op(g, OpKind::kMatMul, {Softmax(g, sc, 3), g.AddInput("v", {DType::kFloat32, v.shape})}));
  };
  Result r = CompileBoth(build, {{"q", q}, {"k", k}, {"v", v}, {"mask", mask}});
  EXPECT_EQ(r.attentions, 1);
  HostTensor want =
      RefAttention(Reshaped(q, {b * h, s, d}), Reshaped(k, {b * h, s, d}),
                   Reshaped(v, {b * h, s, d}), 0.5, [&](int64_t n, int64_t, int64_t j) {
                     return mask.data<uint8_t>()[(n / h) * s + j] ? 0.0 : -INFINITY;
                   });
  testing::ExpectClose(r.fused.at(0), Reshaped(want, {b, h, s, d}), "masked attention");
}

// Near-misses: attention-like graphs that must stay unfused (and agree with the unfused
// compile, which the ONNX conformance tests check).
void ExpectUnfused(const std::string& what,
                   const std::function<ir::Value*(ir::Graph&, ir::Value*)>& middle,
                   int64_t softmax_axis = 2) {
  HostTensor q = testing::RandomF32({2, 9, 8}, 9), k = testing::RandomF32({2, 9, 8}, 10),
             v = testing::RandomF32({2, 9, 8}, 11);
  Builder build = [&](ir::Graph& g) {
    ir::Value* s = Op(
        g, OpKind::kMatMul,
        {g.AddInput("q", {DType::kFloat32, q.shape}), g.AddInput("k", {DType::kFloat32, k.shape})},
        {{"trans_b", int64_t{1}}});
    s = middle(g, s);
    g.AddOutput(Op(g, OpKind::kMatMul,
                   {Softmax(g, s, softmax_axis), g.AddInput("v", {DType::kFloat32, v.shape})}));
  };
  Result r = CompileBoth(build, {{"q", q}, {"k", k}, {"v", v}});
  EXPECT_EQ(r.attentions, 0) << what;
  testing::ExpectClose(r.fused.at(0), r.plain.at(0), what);
}

TEST(AttentionTest, NearMissesStayUnfused) {
  ExpectUnfused(
      "softmax on another axis", [](ir::Graph&, ir::Value* s) { return s; }, 1);
  ExpectUnfused("scale that is not a scalar", [](ir::Graph& g, ir::Value* s) {
    ir::Value* w = g.AddConstant("w", std::make_shared<HostTensor>(testing::RandomF32({9}, 12)));
    return Op(g, OpKind::kMul, {s, w});
  });
  ExpectUnfused(
      "mask of an unexpected shape (it broadcasts the scores up)",
      [](ir::Graph& g, ir::Value* s) {
        ir::Value* m =
            g.AddConstant("m", std::make_shared<HostTensor>(testing::RandomF32({2, 1, 9, 9}, 13)));
        return Op(g, OpKind::kAdd, {s, m});  // [2, 2, 9, 9]
      },
      3);
  ExpectUnfused("Where whose fill is a finite score", [](ir::Graph& g, ir::Value* s) {
    auto c = std::make_shared<HostTensor>(DType::kBool, Shape{9, 9});
    for (int64_t i = 0; i < 81; ++i) c->data<uint8_t>()[i] = i % 3 != 0;
    return Op(g, OpKind::kWhere, {g.AddConstant("c", c), s, Scalar(g, -5)});
  });
  ExpectUnfused("scores also read elsewhere", [](ir::Graph& g, ir::Value* s) {
    g.AddOutput(s);
    return s;
  });
  ExpectUnfused("a scale after the bias", [](ir::Graph& g, ir::Value* s) {
    ir::Value* b = g.AddConstant("b", std::make_shared<HostTensor>(testing::RandomF32({9}, 14)));
    return Op(g, OpKind::kMul, {Op(g, OpKind::kAdd, {s, b}), Scalar(g, 0.3)});
  });
}

// Layer normalisation as exporters write it: x [3, 5, 48] over the last axis (with Pow and
// Div, then scale and bias), RMS norm (Mul and Reciprocal), and GroupNorm's form over two axes.
TEST(NormalizeTest, DecomposedFormsBecomeOneKernel) {
  HostTensor x = testing::RandomF32({3, 5, 48}, 20);
  auto scale = std::make_shared<HostTensor>(testing::RandomF32({48}, 21));
  for (int form = 0; form < 3; ++form) {
    Builder build = [&](ir::Graph& g) {
      ir::Value* xv = g.AddInput("x", {DType::kFloat32, x.shape});
      Ints axes = form == 2 ? Ints{1, 2} : Ints{2};
      ir::Attrs keep = {{"axes", axes}, {"keepdims", int64_t{1}}};
      ir::Value* dv = xv;
      if (form != 1) dv = Op(g, OpKind::kSub, {xv, Op(g, OpKind::kReduceMean, {xv}, keep)});
      ir::Value* sq =
          form == 0 ? Op(g, OpKind::kPow, {dv, Scalar(g, 2)}) : Op(g, OpKind::kMul, {dv, dv});
      ir::Value* sd =
          Op(g, OpKind::kSqrt,
             {Op(g, OpKind::kAdd, {Op(g, OpKind::kReduceMean, {sq}, keep), Scalar(g, 1e-5)})});
      ir::Value* y = form == 0 ? Op(g, OpKind::kDiv, {dv, sd})
                               : Op(g, OpKind::kMul, {Op(g, OpKind::kReciprocal, {sd}), dv});
      y = Op(g, OpKind::kAdd,
             {Op(g, OpKind::kMul, {y, g.AddConstant("s", scale)}), Scalar(g, 0.1)});
      g.AddOutput(y);
    };
    Result r = CompileBoth(build, {{"x", x}});
    EXPECT_EQ(r.norms, 1) << "form " << form;
    // float64 reference.
    int64_t rows = form == 2 ? 3 : 15, n = form == 2 ? 240 : 48;
    HostTensor want(DType::kFloat32, x.shape);
    for (int64_t row = 0; row < rows; ++row) {
      double mean = 0, var = 0;
      if (form != 1)
        for (int64_t c = 0; c < n; ++c) mean += F(x, row * n + c) / n;
      for (int64_t c = 0; c < n; ++c) var += std::pow(F(x, row * n + c) - mean, 2) / n;
      for (int64_t c = 0; c < n; ++c) {
        int64_t i = row * n + c;
        want.data<float>()[i] = static_cast<float>(
            (F(x, i) - mean) / std::sqrt(var + 1e-5) * scale->data<float>()[i % 48] + 0.1);
      }
    }
    testing::ExpectClose(r.fused.at(0), want, "norm form " + std::to_string(form));
  }
}

TEST(NormalizeTest, ChannelsOfNchwReadThroughTheTranspose) {
  // ConvNeXt's form: x [1, C, H, W] permuted to [1, H, W, C], normalised over C, scaled.
  HostTensor x = testing::RandomF32({1, 12, 5, 7}, 32);
  auto scale = std::make_shared<HostTensor>(testing::RandomF32({12}, 33));
  Builder build = [&](ir::Graph& g) {
    ir::Value* t = Transpose(g, g.AddInput("x", {DType::kFloat32, x.shape}), {0, 2, 3, 1});
    ir::Attrs keep = {{"axes", Ints{3}}, {"keepdims", int64_t{1}}};
    ir::Value* d = Op(g, OpKind::kSub, {t, Op(g, OpKind::kReduceMean, {t}, keep)});
    ir::Value* var = Op(g, OpKind::kReduceMean, {Op(g, OpKind::kMul, {d, d})}, keep);
    ir::Value* sd = Op(g, OpKind::kSqrt, {Op(g, OpKind::kAdd, {var, Scalar(g, 1e-6)})});
    g.AddOutput(Op(g, OpKind::kMul, {Op(g, OpKind::kDiv, {d, sd}), g.AddConstant("s", scale)}));
  };
  Result r = CompileBoth(build, {{"x", x}});
  EXPECT_EQ(r.norms, 1);
  EXPECT_EQ(r.transposes, 0) << "the LayerNorm reads through the Transpose";
  testing::ExpectClose(r.fused.at(0), r.plain.at(0), "channels-last LayerNorm");
}

// A post-norm layer's "Add & Norm": MatMul + bias + residual, then LayerNorm with its scale and
// shift, becomes two kernels (the product's slices, and the LayerNorm summing them with bias and
// residual as it reads them), on the CPU's kernels (one slice) and a GPU's (K split), and
// matches the graph compiled without fuse. A second LayerNorm right after it (an encoder's final
// norm) keeps its own kernel. In a pre-norm layer the sum is read again later (the residual
// stream): the LayerNorm writes it too.
TEST(NormalizeTest, LayerNormReadsTheProductBeforeIt) {
  HostTensor x = testing::RandomF32({2, 37, 1536}, 31), res = testing::RandomF32({2, 37, 80}, 32);
  enum Form { kPost, kPostTwoNorms, kPre };
  auto build = [&](Form form) {
    bool second_norm = form == kPostTwoNorms;
    auto g = std::make_unique<ir::Graph>();
    ir::Value* y =
        Op(*g, OpKind::kMatMul,
           {g->AddInput("x", {DType::kFloat32, x.shape}),
            g->AddConstant("w", std::make_shared<HostTensor>(testing::RandomF32({1536, 80}, 33)))});
    y = Op(*g, OpKind::kAdd,
           {y, g->AddConstant("b", std::make_shared<HostTensor>(testing::RandomF32({80}, 34)))});
    y = Op(*g, OpKind::kAdd, {g->AddInput("res", {DType::kFloat32, res.shape}), y});
    ir::Value* sum = y;
    for (int k = 0; k < (second_norm ? 2 : 1); ++k) {
      y = Op(*g, OpKind::kLayerNorm, {y}, {{"axis", int64_t{2}}, {"epsilon", 1e-5}});
      y = Op(*g, OpKind::kMul,
             {y, g->AddConstant(fmt::format("gamma{}", k),
                                std::make_shared<HostTensor>(testing::RandomF32({80}, 35 + k)))});
      y = Op(*g, OpKind::kAdd,
             {y, g->AddConstant(fmt::format("beta{}", k),
                                std::make_shared<HostTensor>(testing::RandomF32({80}, 37 + k)))});
    }
    if (form == kPre) {  // the next layer's product adds the sum back
      y = Op(*g, OpKind::kMatMul,
             {y, g->AddConstant("w2",
                                std::make_shared<HostTensor>(testing::RandomF32({80, 80}, 39)))});
      y = Op(*g, OpKind::kAdd, {sum, y});
    }
    g->AddOutput(y);
    return g;
  };
  for (const char* target : {"", "gpu:132"}) {
    testing::ScopedEnv env("TEXEL_TARGET",
                           *target ? std::optional<std::string>(target) : std::nullopt);
    for (Form form : {kPost, kPostTwoNorms, kPre}) {
      std::vector<HostTensor> out[2];
      size_t steps[2] = {};
      for (bool fused : {true, false}) {
        CompileOptions opts;
        if (!fused) opts.disabled_passes = {"fuse"};
        CompiledModel m = CompileGraph(build(form), testing::SharedContext(), opts);
        const runtime::Plan& plan = m.executable->plan();
        steps[fused] = plan.steps.size();
        // The GPU's product is split along K: several slices for the LayerNorm to add up.
        if (fused && *target) {
          EXPECT_GT(plan.buffers.at(plan.steps.at(0).buffers.at(2)).bytes, 2 * 37 * 80 * 4 * 2);
        }
        runtime::Session s(*m.executable);
        out[fused] = s.Run({{"x", x}, {"res", res}});
      }
      std::string what = fmt::format("target '{}' form {}", target, static_cast<int>(form));
      EXPECT_EQ(steps[1], form == kPost ? 2u : 3u) << what;
      EXPECT_GT(steps[0], steps[1]) << what;
      testing::ExpectClose(out[1].at(0), out[0].at(0), what);
    }
  }
}

// A LayerNorm computing its input as it reads it (fuse's third rule after a Gather or an
// elementwise group): build(g, pre) adds the input's computation to g and returns its result;
// the LayerNorm with its scale and shift follows, and with `pre` a product whose result the sum
// is added back to (a pre-norm model's residual stream, which the LayerNorm then writes too).
// On this device's kernels and a GPU's (work-groups per row), the fused graph is one kernel
// labelled `op` (plus the product's with `pre`) and matches the graph compiled without fuse.
void CheckNormComputesItsInput(const std::function<ir::Value*(ir::Graph&)>& input, int64_t dim,
                               const std::map<std::string, HostTensor>& feeds,
                               const std::string& op) {
  auto constant = [](ir::Graph& g, const char* name, Shape s, uint64_t seed) {
    return g.AddConstant(name, std::make_shared<HostTensor>(testing::RandomF32(s, seed)));
  };
  for (int variant = 0; variant < 4; ++variant) {
    bool pre = variant % 2;
    testing::ScopedEnv env("TEXEL_TARGET",
                           variant < 2 ? std::nullopt : std::optional<std::string>("gpu:132"));
    auto build = [&] {
      auto g = std::make_unique<ir::Graph>();
      ir::Value* sum = input(*g);
      ir::Value* y = Op(*g, OpKind::kLayerNorm, {sum}, {{"axis", int64_t{2}}, {"epsilon", 1e-5}});
      y = Op(*g, OpKind::kMul, {y, constant(*g, "gamma", {dim}, 53)});
      y = Op(*g, OpKind::kAdd, {y, constant(*g, "beta", {dim}, 54)});
      if (pre) {
        y = Op(*g, OpKind::kMatMul, {y, constant(*g, "w", {dim, dim}, 55)});
        y = Op(*g, OpKind::kAdd, {sum, y});
      }
      g->AddOutput(y);
      return g;
    };
    std::vector<HostTensor> out[2];
    size_t steps[2] = {};
    for (bool fused : {true, false}) {
      CompileOptions opts;
      if (!fused) opts.disabled_passes = {"fuse"};
      CompiledModel m = CompileGraph(build(), testing::SharedContext(), opts);
      const runtime::Plan& plan = m.executable->plan();
      steps[fused] = plan.steps.size();
      if (fused) {
        EXPECT_EQ(plan.steps.at(0).op, op) << pre;
      }
      runtime::Session s(*m.executable);
      out[fused] = s.Run(feeds);
    }
    EXPECT_EQ(steps[1], pre ? 2u : 1u) << op << " " << pre;
    EXPECT_GT(steps[0], steps[1]) << op << " " << pre;
    testing::ExpectClose(out[1].at(0), out[0].at(0), op + (pre ? " pre-norm" : " post-norm"));
  }
}

// An embedding lookup and its position term (indices negative and repeated too).
TEST(NormalizeTest, LayerNormGathersItsRows) {
  const int64_t vocab = 50, seq = 9, dim = 96;
  HostTensor ids(DType::kInt64, {1, seq});
  const int64_t picks[] = {3, 0, 49, -1, 17, 3, 25, -50, 8};
  for (int64_t i = 0; i < seq; ++i) ids.data<int64_t>()[i] = picks[i];
  auto input = [&](ir::Graph& g) {
    ir::Value* table =
        g.AddConstant("table", std::make_shared<HostTensor>(testing::RandomF32({vocab, dim}, 51)));
    ir::Value* x = Op(g, OpKind::kGather, {table, g.AddInput("ids", {DType::kInt64, ids.shape})},
                      {{"axis", int64_t{0}}});
    return Op(g, OpKind::kAdd,
              {x, g.AddConstant(
                      "pos", std::make_shared<HostTensor>(testing::RandomF32({1, seq, dim}, 52)))});
  };
  CheckNormComputesItsInput(input, dim, {{"ids", ids}}, "Gather+Add+LayerNorm+Mul+Add");
}

// A position term added to the input: the term first, so that the input read as stored is the
// Add's second operand.
TEST(NormalizeTest, LayerNormComputesItsInput) {
  const int64_t seq = 11, dim = 80;
  HostTensor x = testing::RandomF32({1, seq, dim}, 60);
  auto input = [&](ir::Graph& g) {
    ir::Value* pos =
        g.AddConstant("pos", std::make_shared<HostTensor>(testing::RandomF32({seq, dim}, 61)));
    return Op(g, OpKind::kAdd, {pos, g.AddInput("x", {DType::kFloat32, x.shape})});
  };
  CheckNormComputesItsInput(input, dim, {{"x", x}}, "Add+LayerNorm+Mul+Add");
}

TEST(NormalizeTest, NearMissesStayUnfused) {
  HostTensor x = testing::RandomF32({4, 16}, 30);
  for (int miss = 0; miss < 3; ++miss) {
    Builder build = [&](ir::Graph& g) {
      ir::Value* xv = g.AddInput("x", {DType::kFloat32, x.shape});
      // 0: mean over a leading axis; 1: epsilon not a scalar; 2: the deviation read again.
      ir::Attrs keep = {{"axes", miss == 0 ? Ints{0} : Ints{1}}, {"keepdims", int64_t{1}}};
      ir::Value* dv = Op(g, OpKind::kSub, {xv, Op(g, OpKind::kReduceMean, {xv}, keep)});
      ir::Value* var = Op(g, OpKind::kReduceMean, {Op(g, OpKind::kMul, {dv, dv})}, keep);
      ir::Value* eps =
          miss == 1
              ? g.AddConstant("e", std::make_shared<HostTensor>(testing::RandomF32({4, 1}, 31)))
              : Scalar(g, 1e-5);
      if (miss == 1) eps = Op(g, OpKind::kAbs, {eps});
      ir::Value* sd = Op(g, OpKind::kSqrt, {Op(g, OpKind::kAdd, {var, eps})});
      g.AddOutput(Op(g, OpKind::kDiv, {dv, sd}));
      if (miss == 2) g.AddOutput(sd);
    };
    Result r = CompileBoth(build, {{"x", x}});
    EXPECT_EQ(r.norms, 0) << "near-miss " << miss;
    testing::ExpectClose(r.fused.at(0), r.plain.at(0), "near-miss " + std::to_string(miss));
  }
}

TEST(ViewsTest, CyclicShiftIsOneKernel) {
  // torch.roll(x, (3, 2), (1, 2)) as exported: Concat(Slice(x, 3:), Slice(x, :3)) on axis 1,
  // then the same on axis 2 of that, then a transposed read: the Slices and the Transpose fold.
  HostTensor x = testing::RandomF32({1, 7, 5, 3}, 40);
  Builder build = [&](ir::Graph& g) {
    ir::Value* xv = g.AddInput("x", {DType::kFloat32, x.shape});
    auto roll = [&](ir::Value* t, int64_t axis, int64_t shift) {
      Shape s = t->type.shape;
      Ints starts(s.size(), 0), steps(s.size(), 1), a(s.begin(), s.end()), b(s.begin(), s.end());
      a[axis] = s[axis] - shift;
      b[axis] = shift;
      Ints starts_a = starts;
      starts_a[axis] = shift;
      ir::Value* first =
          Op(g, OpKind::kSlice, {t}, {{"starts", starts_a}, {"steps", steps}, {"sizes", a}});
      ir::Value* second =
          Op(g, OpKind::kSlice, {t}, {{"starts", starts}, {"steps", steps}, {"sizes", b}});
      return Op(g, OpKind::kConcat, {first, second}, {{"axis", axis}});
    };
    ir::Value* r = roll(roll(xv, 1, 3), 2, 2);
    ir::Value* t = Transpose(g, r, {0, 2, 1, 3});
    g.AddOutput(Op(g, OpKind::kConcat, {t, t}, {{"axis", int64_t{3}}}));
  };
  Result r = CompileBoth(build, {{"x", x}});
  EXPECT_EQ(r.slices, 0);
  EXPECT_EQ(r.transposes, 0);
  testing::ExpectClose(r.fused.at(0), r.plain.at(0), "rolled");
}

TEST(ViewsTest, ElementwiseReadsThroughPermutation) {
  // ConvNeXt's residual: x [1, C, H, W] + Transpose(y [1, H, W, C]) with y a product; and a
  // square y added to its own transpose (the transposed read must not be fused as the same
  // element of y).
  HostTensor x = testing::RandomF32({1, 8, 3, 5}, 41), a = testing::RandomF32({15, 6}, 42);
  auto w = std::make_shared<HostTensor>(testing::RandomF32({6, 8}, 43));
  auto w2 = std::make_shared<HostTensor>(testing::RandomF32({6, 6}, 44));
  Builder build = [&](ir::Graph& g) {
    ir::Value* av = g.AddInput("a", {DType::kFloat32, a.shape});
    ir::Value* y = Reshape(g, Op(g, OpKind::kMatMul, {av, g.AddConstant("w", w)}), {1, 3, 5, 8});
    ir::Value* t = Transpose(g, y, {0, 3, 1, 2});
    g.AddOutput(Op(g, OpKind::kAdd, {g.AddInput("x", {DType::kFloat32, x.shape}), t}));
    ir::Value* sq =
        Op(g, OpKind::kMatMul, {Reshape(g, av, {15, 6}), g.AddConstant("w2", w2)});  // [15, 6]
    ir::Value* sq6 = Reshape(g, Op(g, OpKind::kRelu, {sq}), {15, 6});
    ir::Value* s6 = Op(g, OpKind::kSlice, {sq6},
                       {{"starts", Ints{0, 0}}, {"steps", Ints{1, 1}}, {"sizes", Ints{6, 6}}});
    g.AddOutput(Op(g, OpKind::kAdd, {s6, Transpose(g, s6, {1, 0})}));
  };
  Result r = CompileBoth(build, {{"a", a}, {"x", x}});
  EXPECT_EQ(r.transposes, 0);
  testing::ExpectClose(r.fused.at(0), r.plain.at(0), "residual through a permutation");
  testing::ExpectClose(r.fused.at(1), r.plain.at(1), "a value plus its transpose");
}

TEST(IndexMapTest, ReshapeOfViews) {
  using ir::IndexMap;
  // Heads split from a slice of a projection: [1, 7, 96] sliced to [1, 7, 32] at 32, viewed
  // as [1, 7, 4, 8], transposed to [1, 4, 7, 8].
  IndexMap m = IndexMap::Contiguous({1, 7, 96}).Sliced({0, 0, 32}, {1, 1, 1}, {1, 7, 32});
  auto r = m.Reshaped({1, 7, 4, 8});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->strides, (Ints{0, 96, 8, 1}));
  EXPECT_EQ(r->offset, 32);
  IndexMap t = r->Permuted({0, 2, 1, 3});
  EXPECT_EQ(t.shape, (Shape{1, 4, 7, 8}));
  EXPECT_EQ(t.strides, (Ints{0, 8, 96, 1}));
  EXPECT_TRUE(t.InBounds(640));  // the last element is at 32 + 3 * 8 + 6 * 96 + 7 = 639
  EXPECT_FALSE(t.InBounds(639));
  // Merging the transposed heads back is not a view; merging rows of a contiguous one is.
  EXPECT_FALSE(t.Reshaped({1, 28, 8}));
  auto merged = IndexMap::Contiguous({2, 3, 4}).Reshaped({6, 4});
  ASSERT_TRUE(merged);
  EXPECT_TRUE(merged->IsContiguous());
}

}  // namespace
}  // namespace texel
