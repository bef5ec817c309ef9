// End-to-end tests of the window kernels over 1 to 3 spatial dims: 3-D Conv and pooling, 1-D
// Conv, and ConvTranspose (1-D, 2-D, 3-D), built as IR graphs, compiled with CompileGraph for
// the PoCL CPU device, run in a Session and compared with plain C++ references (double
// accumulation, written independently of the kernels' index arithmetic) on random inputs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "backends/lower.h"
#include "backends/native/bound_kernels.h"
#include "backends/native/native_backend.h"
#include "codegen/opencl/tuning.h"
#include "core/error.h"
#include "core/precision.h"
#include "ir/graph.h"
#include "ir/host_eval.h"
#include "kernel_test_util.h"
#include "row_reference.h"
#include "runtime/cl/context.h"
#include "runtime/cl/device.h"
#include "runtime/session.h"
#include "window_reference.h"

namespace texel {
namespace {

using namespace texel::testing;

using Ints = std::vector<int64_t>;

// --- References over any number of spatial dims ------------------------------------------------
// (RefConv and RefPool: window_reference.h)

// ConvTranspose in scatter form: x [N, C, in...], w [C, M / group, k...]; every input element
// adds x * w to output position i * s - p_begin + k * d.
HostTensor RefConvTranspose(const HostTensor& x, const HostTensor& w, const HostTensor* b, Ints s,
                            Ints p, Ints d, Ints out_pad, int64_t group) {
  size_t nsp = x.shape.size() - 2;
  Shape in = Spatial(x.shape), k = Spatial(w.shape), out;
  for (size_t i = 0; i < nsp; ++i)
    out.push_back((in[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - p[i] - p[nsp + i] + out_pad[i]);
  int64_t c = x.shape[1], cg = c / group, mg = w.shape[1];
  Shape ys = {x.shape[0], mg * group};
  ys.insert(ys.end(), out.begin(), out.end());
  std::vector<double> acc(NumElements(ys), 0.0);
  for (int64_t xi = 0; xi < x.size(); ++xi) {
    std::vector<int64_t> xc = Unravel(xi, x.shape);
    int64_t g = xc[1] / cg;
    for (int64_t om = 0; om < mg; ++om)
      for (int64_t ki = 0; ki < NumElements(k); ++ki) {
        std::vector<int64_t> kc = Unravel(ki, k), oc(nsp);
        bool inside = true;
        for (size_t i = 0; i < nsp; ++i) {
          oc[i] = xc[2 + i] * s[i] - p[i] + kc[i] * d[i];
          inside = inside && oc[i] >= 0 && oc[i] < out[i];
        }
        if (!inside) continue;
        acc[Ravel(Coord(xc[0], g * mg + om, oc), ys)] +=
            double{F(x, xi)} * F(w, Ravel(Coord(xc[1], om, kc), w.shape));
      }
  }
  HostTensor y(DType::kFloat32, ys);
  for (int64_t yi = 0; yi < y.size(); ++yi)
    y.data<float>()[yi] = static_cast<float>(acc[yi] + (b ? F(*b, Unravel(yi, ys)[1]) : 0.0));
  return y;
}

// --- Graph helpers ----------------------------------------------------------------------------

ir::TensorType F32Type(const Shape& s) { return {DType::kFloat32, s}; }

ir::Value* Const(ir::Graph& g, const std::string& name, const HostTensor& t) {
  return g.AddConstant(name, std::make_shared<HostTensor>(t));
}

void Output(ir::Graph& g, ir::OpKind op, std::vector<ir::Value*> in, ir::Attrs attrs,
            const std::string& name) {
  g.AddOutput(g.AddNode(op, std::move(in), std::move(attrs), name)->outputs[0]);
}

ir::Attrs ConvAttrs(Ints strides, Ints pads, Ints dilations, int64_t group) {
  return {{"strides", strides}, {"pads", pads}, {"dilations", dilations}, {"group", group}};
}

ir::Attrs ConvTransposeAttrs(Ints strides, Ints pads, Ints dilations, Ints out_pad, int64_t group) {
  ir::Attrs a = ConvAttrs(strides, pads, dilations, group);
  a.Set("output_padding", out_pad);
  return a;
}

ir::Attrs PoolAttrs(Ints kernel, Ints strides, Ints pads, Ints dilations) {
  return {{"kernel", kernel},
          {"strides", strides},
          {"pads", pads},
          {"dilations", dilations},
          {"ceil_mode", int64_t{0}}};
}

TEST(WindowKernelTest, ThreeDConvAndPooling) {
  HostTensor x = RandomF32({2, 4, 5, 6, 7}, 401);
  HostTensor w = RandomF32({6, 2, 3, 2, 3}, 402);
  HostTensor b = RandomF32({6}, 403);
  HostTensor x1 = RandomF32({2, 3, 13}, 404);
  HostTensor w1 = RandomF32({4, 3, 3}, 405);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", F32Type(x.shape));
  ir::Value* x1v = g->AddInput("x1", F32Type(x1.shape));
  // Grouped 3-D conv: stride (2, 1, 2), dilation (1, 2, 1), asymmetric pads, bias.
  Ints cs = {2, 1, 2}, cp = {1, 0, 1, 0, 1, 1}, cd = {1, 2, 1};
  Output(*g, ir::OpKind::kConv, {xv, Const(*g, "w", w), Const(*g, "b", b)},
         ConvAttrs(cs, cp, cd, 2), "conv3d");
  // 3-D max pool with pads and a dilated last axis; 3-D average pool counting the pads.
  Ints k = {2, 3, 2}, ps = {2, 2, 1}, pp = {1, 1, 0, 0, 1, 1}, pd = {1, 1, 2};
  Output(*g, ir::OpKind::kMaxPool, {xv}, PoolAttrs(k, ps, pp, pd), "maxpool3d");
  ir::Attrs avg = PoolAttrs({3, 2, 3}, {1, 2, 2}, {1, 0, 1, 1, 1, 0}, {1, 1, 1});
  avg.Set("count_include_pad", int64_t{1});
  Output(*g, ir::OpKind::kAveragePool, {xv}, avg, "avgpool3d");
  // 1-D conv straight on a rank-3 input: stride 2, dilation 2, pads (2, 1).
  Output(*g, ir::OpKind::kConv, {x1v, Const(*g, "w1", w1)}, ConvAttrs({2}, {2, 1}, {2}, 1),
         "conv1d");

  std::vector<HostTensor> out = CompileAndRun(std::move(g), {{"x", x}, {"x1", x1}});
  ASSERT_EQ(out.size(), 4u);
  ExpectClose(out[0], RefConv(x, w, &b, cs, cp, cd, 2), "3-D grouped conv");
  ExpectClose(out[1], RefPool(x, true, k, ps, pp, pd, false, false), "3-D max pool");
  ExpectClose(out[2],
              RefPool(x, false, {3, 2, 3}, {1, 2, 2}, {1, 0, 1, 1, 1, 0}, {1, 1, 1}, false, true),
              "3-D average pool, count_include_pad=1");
  ExpectClose(out[3], RefConv(x1, w1, nullptr, {2}, {2, 1}, {2}, 1), "1-D conv");
}

// The matrix-engine convolution tests' targets: the device's own engine where it has one
// (TEXEL_TEST_DEVICE=gpu on an H100), else the emulation with an H100's tiling; and the same
// with one compute unit, where K is never split.
std::pair<codegen::Target, codegen::Target> EngineTargets() {
  codegen::Target split = backends::NativeBackend::TargetOf(SharedContext()->info());
  // The device's limits hold (oclgrind: 32 KiB of local memory).
  if (!split.mma_sync) split = EmulatedH100Target(split);
  codegen::Target whole = split;
  whole.compute_units = 1;
  return {split, whole};
}

// Conv node's kernels on x, w and b (bound to its inputs in that order, b only where it has
// one): its result, launched twice with the result set to NaNs before each launch, so that every
// launch must write the whole of it.
HostTensor RunConvKernels(const ir::Node& node, std::vector<codegen::KernelSpec> specs,
                          const HostTensor& x, const HostTensor& w, const HostTensor& b) {
  const cl::Context& ctx = *SharedContext();
  const ir::TensorType& yt = node.outputs[0]->type;
  cl::Buffer dx(ctx, x.bytes.size()), dw(ctx, w.bytes.size()), db(ctx, b.bytes.size()),
      dy(ctx, yt.bytes());
  dx.Write(ctx, x.bytes.data(), x.bytes.size());
  dw.Write(ctx, w.bytes.data(), w.bytes.size());
  db.Write(ctx, b.bytes.data(), b.bytes.size());
  backends::BoundKernels run(ctx, std::move(specs), [&](int id) -> const cl::Buffer& {
    return id == node.inputs[0]->id    ? dx
           : id == node.inputs[1]->id  ? dw
           : id == node.outputs[0]->id ? dy
                                       : db;
  });
  std::vector<char> nans(yt.bytes(), '\xff');
  for (int i = 0; i < 2; ++i) {
    dy.Write(ctx, nans.data(), nans.size());
    run.Launch(ctx);
  }
  HostTensor y(yt.dtype, yt.shape);
  dy.Read(ctx, y.bytes.data(), y.bytes.size());
  return y;
}

// y against the reference within tol * max(|want|, 1) per element, the first misses named.
void ExpectWithin(const HostTensor& y, const HostTensor& want, double tol,
                  const std::string& what) {
  int bad = 0;
  for (int64_t i = 0; i < y.size(); ++i) {
    double got = y.GetDouble(i), ref = F(want, i);
    if (!(std::fabs(got - ref) <= tol * std::max(std::fabs(ref), 1.0)) && ++bad <= 3)
      ADD_FAILURE() << what << " at " << i << ": got " << got << ", want " << ref;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << y.size() << " elements differ";
}

// NCHW convolutions in fp16 take the warp-tiled kernel as implicit GEMMs (the image gathered into
// its B tiles), f32 ones (tf32x3, tf32) the scalar kernels in fp32: run on PoCL with the FMA
// emulation of the engine's rounding (Target::mma_emulated) and an H100's tiling, on a GPU with a
// matrix engine on the engine; K split (the device's compute units) and unsplit (one), against the
// double-precision reference on the inputs as stored.
TEST(WindowKernelTest, ConvOnTheMatrixEngine) {
  struct ConvCase {
    Shape x, w;
    ir::Attrs attrs;
    bool bias;
  };
  const std::vector<ConvCase> cases = {
      // edge tiles in M (40) and N (99), padding, a bias
      {{1, 32, 9, 11}, {40, 32, 3, 3}, ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), true},
      // groups of 24 filters over 64 channels, stride 2, dilation 2, uneven padding, 2 images
      {{2, 128, 8, 8}, {48, 64, 3, 3}, ConvAttrs({2, 2}, {2, 2, 1, 1}, {2, 2}, 2), false},
      // 1x1 over 49 pixels: gathered (N is not a multiple of 4)
      {{1, 256, 7, 7}, {64, 256, 1, 1}, ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), true},
      // 1x1 over 16 pixels: B is x as stored
      {{1, 256, 4, 4}, {32, 256, 1, 1}, ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), true},
      // 1x1 over 64 channels (K = 64), x as stored
      {{1, 64, 8, 8}, {48, 64, 1, 1}, ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), false},
      // a stem of 3 channels, 7x7 stride 2: shallow (K = 147), gathered
      {{1, 3, 21, 19}, {24, 3, 7, 7}, ConvAttrs({2, 2}, {3, 3, 3, 3}, {1, 1}, 1), true},
      // 3-D: 27 taps, strides and padding per axis
      {{1, 8, 5, 6, 7},
       {20, 8, 3, 3, 3},
       ConvAttrs({1, 2, 1}, {1, 0, 1, 1, 1, 0}, {1, 1, 1}, 1),
       true},
      // 81 taps: more than a mask holds, gathered by the per-step load
      {{1, 2, 12, 11}, {16, 2, 9, 9}, ConvAttrs({1, 1}, {4, 4, 4, 4}, {1, 1}, 1), false},
      // 3 images of 7 x 7 folded into the columns (N = 147): 3x3 with padding, and 1x1 over
      // 5 x 5 (gathered: 25 is no multiple of 4)
      {{3, 16, 7, 7}, {24, 16, 3, 3}, ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), true},
      {{2, 64, 5, 5}, {16, 64, 1, 1}, ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), true},
  };
  struct Mode {
    ComputeMode mode;
    DType storage;
    double tol;  // per sqrt(K), as the MatMul tests
  };
  // fp32: the scalar tiled kernel a GPU takes (and its split-K sum), for the folded images;
  // tf32x3 and tf32 on f32 storage: the same, in fp32 (f32 convolutions take the engine
  // channels-last only).
  const Mode modes[] = {{ComputeMode::kFp16, DType::kFloat16, 4e-3},
                        {ComputeMode::kTf32x3, DType::kFloat32, 2e-6},
                        {ComputeMode::kFp32, DType::kFloat32, 2e-6},
                        {ComputeMode::kTf32, DType::kFloat32, 2e-6}};
  auto [split, whole] = EngineTargets();
  uint32_t seed = 700;
  int gathered = 0, hoisted = 0, folded = 0, kgroups = 0;
  std::map<bool, int> bias_runs;  // by whether K is split
  for (size_t mi = 0; mi < std::size(modes); ++mi)
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const Mode& m = modes[mi];
      const ConvCase& c = cases[ci];
      bool half = m.storage == DType::kFloat16;
      auto stored = [&](const HostTensor& f) { return half ? ToF16(f) : f; };
      HostTensor x = stored(RandomF32(c.x, ++seed)), w = stored(RandomF32(c.w, ++seed));
      HostTensor b = stored(RandomF32({c.w[0]}, ++seed));
      ir::Graph g;
      std::vector<ir::Value*> in = {g.AddInput("x", {m.storage, c.x}),
                                    g.AddInput("w", {m.storage, c.w})};
      if (c.bias) in.push_back(g.AddInput("b", {m.storage, {c.w[0]}}));
      ir::Attrs attrs = c.attrs;
      attrs.Set("compute_mode", static_cast<int64_t>(m.mode));
      ir::Node* node = g.AddNode(ir::OpKind::kConv, in, attrs, "conv");
      const ir::TensorType& yt = node->outputs[0]->type;
      const codegen::Target& t = (mi + ci) % 2 ? split : whole;
      std::vector<codegen::KernelSpec> specs = codegen::GenerateKernel(*node, "conv", t);
      bool summed = SplitsK(specs);  // a sum kernel or the fixup adds the slices of K up
      std::string what = fmt::format("{} x {} w {}{}{}", ComputeModeName(m.mode), ShapeStr(c.x),
                                     ShapeStr(c.w), c.bias ? " bias" : "", summed ? " split" : "");
      bool engine = m.mode == ComputeMode::kFp16;
      ASSERT_EQ(specs[0].source.find("#define MODEL 1") != std::string::npos, engine) << what;
      if (!half) {  // tuned as what it computes, whatever the mark
        EXPECT_NE(codegen::ConvTunable(*node, t)->signature.find("mode=fp32"), std::string::npos)
            << what;
      }
      folded += c.x[0] > 1 &&
                specs.back().source.find("% " + std::to_string(NumElements(Spatial(yt.shape))) +
                                         ")") != std::string::npos;
      if (engine) {
        gathered += specs[0].source.find("#define GATHER_B 1") != std::string::npos;
        hoisted += specs[0].source.find("#define GATHER_HOISTED 1") != std::string::npos;
        kgroups += specs[0].source.find("#define KGROUPS 2") != std::string::npos;
      }
      if (c.bias) ++bias_runs[summed];
      HostTensor y = RunConvKernels(*node, std::move(specs), x, w, b);
      HostTensor bf = half ? ToF32(b) : b;
      HostTensor want = RefConv(half ? ToF32(x) : x, half ? ToF32(w) : w, c.bias ? &bf : nullptr,
                                c.attrs.Ints("strides"), c.attrs.Ints("pads"),
                                c.attrs.Ints("dilations"), c.attrs.Int("group"));
      ASSERT_EQ(y.shape, want.shape) << what;
      ExpectWithin(y, want, m.tol * std::sqrt(static_cast<double>(NumElements(c.w) / c.w[0])),
                   what);
    }
  EXPECT_EQ(gathered, 8) << "eight of the ten cases gather the image on the engine";
  EXPECT_EQ(hoisted, 5) << "all but the 1- and 81-tap cases gather with the per-column state";
  EXPECT_EQ(folded, 12) << "the three cases of several images fold them, in every mode";
  EXPECT_GT(kgroups, 0) << "fp16's small tiles take two warp groups along K somewhere";
  EXPECT_GT(bias_runs[true], 0) << "a split product's sums get a bias somewhere";
  EXPECT_GT(bias_runs[false], 0) << "the product's own kernel adds a bias somewhere";
}

// A host tensor's axes permuted (ONNX Transpose).
HostTensor PermutedTensor(const HostTensor& t, const Ints& perm) {
  auto r = ir::EvaluateOnHost(ir::OpKind::kTranspose, {{"perm", perm}}, {&t},
                              {t.dtype, Permuted(t.shape, perm)});
  EXPECT_TRUE(r.has_value());
  return *r;
}

// Channels-last convolutions (passes/channels_last.cpp) on the warp-tiled kernel: the NHWC
// image's chunks copied as a stored [N, K] matrix is, zeros in the padding, C stored NHWC. Edge
// tiles, padding, strides, dilation, several images, a 1x1, with and without a bias, K split
// (added up by the tile's last work-group where the device's hand over, else by the sum kernel)
// and whole; fp16, tf32x3 and tf32 (f32 chunks of 4) against the double-precision reference.
TEST(WindowKernelTest, ChannelsLastConvOnTheMatrixEngine) {
  struct ConvCase {
    Shape x, w;  // NCHW and OIHW, as the reference takes them
    ir::Attrs attrs;
    bool bias;
  };
  const std::vector<ConvCase> cases = {
      {{2, 16, 9, 11}, {40, 16, 3, 3}, ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), true},
      {{1, 32, 10, 9}, {24, 32, 3, 3}, ConvAttrs({2, 2}, {2, 1, 1, 2}, {2, 2}, 1), false},
      {{2, 64, 5, 5}, {16, 64, 1, 1}, ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), true},
  };
  struct Mode {
    ComputeMode mode;
    DType storage;
    double tol;
  };
  const Mode modes[] = {{ComputeMode::kFp16, DType::kFloat16, 4e-3},
                        {ComputeMode::kTf32x3, DType::kFloat32, 2e-5},
                        {ComputeMode::kTf32, DType::kFloat32, 4e-3}};
  auto [split, whole] = EngineTargets();
  uint32_t seed = 800;
  int summed_runs = 0, fixups = 0;
  std::map<ComputeMode, int> kgroups;
  for (size_t mi = 0; mi < std::size(modes); ++mi)
    for (size_t ci = 0; ci < cases.size(); ++ci) {
      const Mode& m = modes[mi];
      const ConvCase& c = cases[ci];
      bool half = m.storage == DType::kFloat16;
      auto stored = [&](const HostTensor& f) { return half ? ToF16(f) : f; };
      HostTensor x = stored(RandomF32(c.x, ++seed)), w = stored(RandomF32(c.w, ++seed));
      HostTensor b = stored(RandomF32({c.w[0]}, ++seed));
      HostTensor xt = PermutedTensor(x, {0, 2, 3, 1}), wt = PermutedTensor(w, {0, 2, 3, 1});
      ir::Graph g;
      std::vector<ir::Value*> in = {g.AddInput("x", {m.storage, xt.shape}),
                                    g.AddInput("w", {m.storage, wt.shape})};
      if (c.bias) in.push_back(g.AddInput("b", {m.storage, {c.w[0]}}));
      ir::Attrs attrs = c.attrs;
      attrs.Set("compute_mode", static_cast<int64_t>(m.mode));
      attrs.Set("channels_last", int64_t{1});
      ir::Node* node = g.AddNode(ir::OpKind::kConv, in, attrs, "conv");
      const codegen::Target& t = (mi + ci) % 2 ? split : whole;
      std::vector<codegen::KernelSpec> specs = codegen::GenerateKernel(*node, "conv", t);
      bool summed = SplitsK(specs);
      summed_runs += summed;
      fixups += specs.size() == 1 && summed;
      std::string what = fmt::format("{} x {} w {}{}{}", ComputeModeName(m.mode), ShapeStr(c.x),
                                     ShapeStr(c.w), c.bias ? " bias" : "", summed ? " split" : "");
      ASSERT_NE(specs[0].source.find("#define ASYNC 1"), std::string::npos) << what;
      ASSERT_NE(specs[0].source.find("#define B_INSIDE(k, c)"), std::string::npos) << what;
      kgroups[m.mode] += specs[0].source.find("#define KGROUPS 2") != std::string::npos;
      HostTensor y = RunConvKernels(*node, std::move(specs), xt, wt, b);
      HostTensor bf = half ? ToF32(b) : b;
      HostTensor want = PermutedTensor(
          RefConv(half ? ToF32(x) : x, half ? ToF32(w) : w, c.bias ? &bf : nullptr,
                  c.attrs.Ints("strides"), c.attrs.Ints("pads"), c.attrs.Ints("dilations"), 1),
          {0, 2, 3, 1});
      ASSERT_EQ(y.shape, want.shape) << what;
      ExpectWithin(y, want, m.tol * std::sqrt(static_cast<double>(NumElements(c.w) / c.w[0])),
                   what);
    }
  EXPECT_GT(summed_runs, 0) << "K is split (and summed into NHWC) somewhere";
  for (const Mode& m : modes)
    EXPECT_GT(kgroups[m.mode], 0) << ComputeModeName(m.mode)
                                  << ": small tiles take two warp groups along K somewhere";
  // Split products add their slices up in their own kernel wherever work-groups hand over.
  EXPECT_EQ(fixups > 0, split.group_handoff) << fixups << " fixups of " << summed_runs;
  EXPECT_TRUE(fixups == 0 || fixups == summed_runs) << fixups << " fixups of " << summed_runs;
}

// The channels-last pass on a model: a region of six convolutions deep enough for the engine
// (residual Adds, a stride, a dilation, 1x1s) and two edges is rewritten, with a transpose into
// it and its global pooling reducing the NHWC result, where the
// device (or the emulated GPU) has a matrix engine; a lone convolution between two edges is
// left NCHW. fp16 results against fp32 compiled as usual, and against the pass disabled.
TEST(WindowKernelTest, ChannelsLastRegions) {
  uint32_t seed = 900;
  std::map<std::string, HostTensor> consts;
  auto conv = [&](ir::Graph& g, ir::Value* x, int64_t oc, int64_t k, ir::Attrs a) {
    int64_t ic = x->type.shape[1];
    HostTensor w = RandomF32({oc, ic, k, k}, ++seed), b = RandomF32({oc}, ++seed);
    for (int64_t i = 0; i < w.size(); ++i)  // sums of order 1
      w.data<float>()[i] /= std::sqrt(static_cast<float>(ic * k * k) / 3);
    std::string name = fmt::format("w{}", seed);
    ir::Value* wv = g.AddConstant(name, std::make_shared<HostTensor>(w));
    ir::Value* bv = g.AddConstant(name + "b", std::make_shared<HostTensor>(b));
    return g.AddNode(ir::OpKind::kConv, {x, wv, bv}, a, name)->outputs[0];
  };
  auto relu = [](ir::Graph& g, ir::Value* v) {
    return g.AddNode(ir::OpKind::kRelu, {v}, {}, "relu")->outputs[0];
  };
  auto add = [](ir::Graph& g, ir::Value* a, ir::Value* b) {
    return g.AddNode(ir::OpKind::kAdd, {a, b}, {}, "add")->outputs[0];
  };
  ir::Attrs same = ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  ir::Attrs one = ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  HostTensor x = RandomF32({2, 32, 8, 8}, 899);
  auto build = [&](bool region) {
    seed = 900;
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    if (!region) {
      g->AddOutput(conv(*g, xv, 32, 3, same));
      return g;
    }
    ir::Value* r1 = relu(*g, conv(*g, xv, 32, 3, same));
    ir::Value* r2 = relu(*g, add(*g, conv(*g, r1, 32, 3, same), r1));
    ir::Value* c3 = relu(*g, conv(*g, r2, 64, 3, ConvAttrs({2, 2}, {1, 0, 0, 1}, {1, 1}, 1)));
    ir::Value* c4 = conv(*g, c3, 64, 1, one);
    ir::Value* c5 = conv(*g, c4, 64, 3, ConvAttrs({1, 1}, {2, 2, 2, 2}, {2, 2}, 1));
    ir::Value* c6 = conv(*g, relu(*g, add(*g, c5, c4)), 32, 1, one);
    g->AddOutput(g->AddNode(ir::OpKind::kReduceMean, {c6},
                            {{"axes", Ints{2, 3}}, {"keepdims", int64_t{1}}}, "pool")
                     ->outputs[0]);
    return g;
  };
  bool engine = backends::NativeBackend::TargetOf(SharedContext()->info()).mma_sync;
  std::map<std::string, HostTensor> in{{"x", x}};
  auto compile = [&](bool region, ComputeMode mode, bool pass) {
    CompileOptions o;
    o.precision = mode;
    if (!pass) o.disabled_passes = {"channels-last"};
    return CompileGraph(build(region), SharedContext(), o);
  };
  for (bool region : {true, false}) {
    auto want = runtime::Session(*compile(region, ComputeMode::kFp32, true).executable).Run(in);
    for (const char* target : {"", "gpu:132:mma"}) {
      if (!region && *target == 0) continue;
      SCOPED_TRACE(fmt::format("TEXEL_TARGET={} region: {}", target, region));
      if (*target) setenv("TEXEL_TARGET", target, 1);
      CompiledModel half = compile(region, ComputeMode::kFp16, true);
      CompiledModel nchw = compile(region, ComputeMode::kFp16, false);
      unsetenv("TEXEL_TARGET");
      int nhwc = 0, transposes = 0, reshapes = 0;
      for (const auto& n : half.graph->nodes()) {
        nhwc += n->op == ir::OpKind::kConv && n->attrs.Int("channels_last", 0) == 1;
        transposes += n->op == ir::OpKind::kTranspose;
        reshapes += n->op == ir::OpKind::kReshape;
      }
      bool rewritten = region && (engine || *target);
      EXPECT_EQ(nhwc, rewritten ? 6 : 0);
      // One transpose into the region; the pooling reduces the NHWC result, whose [N, 1, 1, C]
      // is the NCHW shape as a Reshape.
      EXPECT_EQ(transposes, rewritten ? 1 : 0);
      EXPECT_EQ(reshapes, rewritten ? 1 : 0);
      auto got = runtime::Session(*half.executable).Run(in);
      auto base = runtime::Session(*nchw.executable).Run(in);
      ASSERT_EQ(got.size(), 1u);
      ExpectClose(got[0], want[0], "against fp32", 3e-2f);
      ExpectClose(got[0], base[0], "against fp16 without the pass", 3e-2f);
    }
  }
}

// In tf32 and tf32x3 a region of f32 convolutions becomes channels-last and takes the matrix
// engine in the mode, as fp16's do, for one image and for 32: five 3x3 convolutions and a 1x1
// over 64 x 56 x 56 images. Compiled for an H100's tiling on the emulated engine; their results
// are ChannelsLastConvOnTheMatrixEngine's. A lone convolution stays NCHW and unmarked (the scalar
// fp32 kernels).
TEST(WindowKernelTest, ChannelsLastRegionsInTf32Modes) {
  HostTensor w = RandomF32({64, 64, 3, 3}, 950), w1 = RandomF32({64, 64, 1, 1}, 951);
  for (ComputeMode mode : {ComputeMode::kTf32, ComputeMode::kTf32x3})
    for (int64_t images : {1, 32}) {
      auto g = std::make_unique<ir::Graph>();
      ir::Value* v = g->AddInput("x", F32Type({images, 64, 56, 56}));
      ir::Value* wv = Const(*g, "w", w);
      ir::Value* w1v = Const(*g, "w1", w1);
      for (int i = 0; i < 6; ++i) {
        bool one = i == 2;  // a 1x1
        v = g->AddNode(ir::OpKind::kConv, {v, one ? w1v : wv},
                       one ? ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)
                           : ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1),
                       fmt::format("conv{}", i))
                ->outputs[0];
        v = g->AddNode(ir::OpKind::kRelu, {v}, {}, fmt::format("relu{}", i))->outputs[0];
      }
      g->AddOutput(v);
      // The lone convolution: a region of one, left NCHW.
      ir::Value* lone = g->AddInput("lone", F32Type({images, 64, 14, 14}));
      g->AddOutput(g->AddNode(ir::OpKind::kConv, {lone, Const(*g, "wl", w)},
                              ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), "lone")
                       ->outputs[0]);
      CompileOptions o;
      o.precision = mode;
      CompiledModel m = [&] {
        testing::ScopedEnv target("TEXEL_TARGET", "gpu:132:mma");
        return CompileGraph(std::move(g), SharedContext(), o);
      }();
      int nhwc = 0, marked = 0;
      for (const auto& n : m.graph->nodes()) {
        bool conv = n->op == ir::OpKind::kConv;
        bool last = conv && n->attrs.Int("channels_last", 0) == 1;
        nhwc += last;
        marked += conv && n->attrs.Has("compute_mode");
        if (conv && !last) {
          EXPECT_FALSE(n->attrs.Has("compute_mode")) << n->name << ": NCHW ones compute in fp32";
        }
      }
      std::string what = fmt::format("{}, {} images", ComputeModeName(mode), images);
      EXPECT_EQ(nhwc, 6) << what;
      EXPECT_EQ(marked, 6) << what;
      std::string engine_mode =
          mode == ComputeMode::kTf32 ? "#define MODE 1\n" : "#define MODE 3\n";
      EXPECT_NE(m.executable->plan().source.find(engine_mode), std::string::npos) << what;
    }
}

TEST(WindowKernelTest, ConvTranspose) {
  HostTensor x = RandomF32({2, 4, 5, 6}, 501);
  HostTensor w = RandomF32({4, 3, 3, 2}, 502);  // [C_in, C_out / group, kh, kw], group 2
  HostTensor b = RandomF32({6}, 503);
  HostTensor x1 = RandomF32({1, 2, 7}, 504);
  HostTensor w1 = RandomF32({2, 3, 3}, 505);
  HostTensor x3 = RandomF32({1, 2, 3, 4, 3}, 506);
  HostTensor w3 = RandomF32({2, 2, 2, 3, 2}, 507);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", F32Type(x.shape));
  ir::Value* x1v = g->AddInput("x1", F32Type(x1.shape));
  ir::Value* x3v = g->AddInput("x3", F32Type(x3.shape));
  // Group 2, stride 2, output_padding 1, dilation (1, 2), pads top 1, right 1, with bias.
  Ints s = {2, 2}, p = {1, 0, 0, 1}, d = {1, 2}, op = {1, 1};
  Output(*g, ir::OpKind::kConvTranspose, {xv, Const(*g, "w", w), Const(*g, "b", b)},
         ConvTransposeAttrs(s, p, d, op, 2), "convtranspose2d");
  // 1-D: stride 3, dilation 2, a negative end pad (an extra output column of zeros).
  Output(*g, ir::OpKind::kConvTranspose, {x1v, Const(*g, "w1", w1)},
         ConvTransposeAttrs({3}, {1, -1}, {2}, {0}, 1), "convtranspose1d");
  // 3-D: strides (1, 2, 3), output_padding on the last two axes.
  Ints s3 = {1, 2, 3}, p3 = {0, 1, 0, 1, 0, 1}, op3 = {0, 1, 2};
  Output(*g, ir::OpKind::kConvTranspose, {x3v, Const(*g, "w3", w3)},
         ConvTransposeAttrs(s3, p3, {1, 1, 1}, op3, 1), "convtranspose3d");

  std::vector<HostTensor> out = CompileAndRun(std::move(g), {{"x", x}, {"x1", x1}, {"x3", x3}});
  ASSERT_EQ(out.size(), 3u);
  HostTensor want = RefConvTranspose(x, w, &b, s, p, d, op, 2);
  EXPECT_EQ(want.shape, (Shape{2, 6, 11, 13}));
  ExpectClose(out[0], want, "2-D ConvTranspose, group 2, stride 2, output_padding 1");
  ExpectClose(out[1], RefConvTranspose(x1, w1, nullptr, {3}, {1, -1}, {2}, {0}, 1),
              "1-D ConvTranspose, negative end pad");
  ExpectClose(out[2], RefConvTranspose(x3, w3, nullptr, s3, p3, {1, 1, 1}, op3, 1),
              "3-D ConvTranspose");
}

// --- Tunable families: every candidate point computes the reference --------------------------

// Names the points in order, one per tunable kernel generated (the graph's nodes in order).
class PointsInOrder : public codegen::TuningSource {
 public:
  explicit PointsInOrder(std::vector<codegen::TunePoint> points) : points_(std::move(points)) {}
  std::optional<codegen::TunePoint> Pick(const codegen::Tunable&) const override {
    return points_.at(next_++);
  }

 private:
  std::vector<codegen::TunePoint> points_;
  mutable size_t next_ = 0;
};

// Node (op, attrs) over input x and constants `consts` once per candidate of its family on this
// device (every `every`-th, and the heuristic's), as one program, each output checked against
// want. Returns the number of candidates run (none where the node has no family there and
// `required` is false: max pooling on GPUs).
size_t CheckCandidates(ir::OpKind op, const ir::Attrs& attrs, const HostTensor& x,
                       const std::vector<HostTensor>& consts, const HostTensor& want,
                       const std::string& what, size_t every, bool required = true) {
  auto ctx = SharedContext();
  ir::Graph g;
  std::vector<ir::Value*> in = {g.AddInput("x", F32Type(x.shape))};
  for (size_t i = 0; i < consts.size(); ++i)
    in.push_back(Const(g, fmt::format("c{}", i), consts[i]));
  ir::Node* probe = g.AddNode(op, in, attrs, "probe");
  std::optional<codegen::Tunable> t =
      codegen::TunableOf(*probe, backends::NativeBackend::TargetOf(ctx->info()));
  EXPECT_TRUE(t.has_value() || !required) << what;
  if (!t) return 0;
  std::vector<codegen::TunePoint> points;
  for (size_t i = 0; i < t->candidates.size(); i += every) points.push_back(t->candidates[i]);
  ExpectPointsChangeTheKernel(*probe, backends::NativeBackend::TargetOf(ctx->info()), points, what);
  g.AddOutput(probe->outputs[0]);
  for (size_t i = 1; i < points.size(); ++i)
    g.AddOutput(g.AddNode(op, in, attrs, fmt::format("c{}", i))->outputs[0]);
  PointsInOrder source(points);
  runtime::Executable exe(ctx, backends::LowerToPlan(g, ctx->info(), &source), nullptr);
  runtime::Session session(exe);
  std::vector<HostTensor> out = session.Run({{"x", x}});
  for (size_t i = 0; i < points.size(); ++i)
    ExpectClose(out[i], want,
                fmt::format("{} {} {}", what, t->family, codegen::PointString(points[i])));
  return points.size();
}

// The CPU heuristics' points (docs/tuning.md): few channels on long rows take vectors along the
// row, more keep them along the channels; depthwise rows take the widest vector some of whose
// windows stay inside the row.
TEST(WindowKernelTest, CpuHeuristicPoints) {
  codegen::Target cpu;  // a CPU's facts, whichever device runs the tests
  ASSERT_FALSE(cpu.gpu);
  struct Case {
    Shape x, w;
    int64_t stride, pad;  // on both axes
    std::string family, point;
  };
  const std::vector<Case> cases = {
      {{1, 16, 112, 112}, {96, 16, 1, 1}, 1, 0, "conv_blocked", "along=1,vw=16,wm=24"},
      {{1, 144, 56, 56}, {24, 144, 1, 1}, 1, 0, "conv_blocked", "along=1,vw=16,wm=24"},
      {{1, 192, 28, 28}, {32, 192, 1, 1}, 1, 0, "conv_blocked", "along=0,nv=2,rw=7,voc=16"},
      {{1, 64, 56, 56}, {64, 64, 3, 3}, 1, 1, "conv_blocked", "along=0,nv=2,rw=8,voc=16"},
      // 27 products per output but 64 channels, not 1x1: along the channels
      {{1, 3, 224, 224}, {64, 3, 3, 3}, 2, 0, "conv_blocked", "along=0,nv=2,rw=8,voc=16"},
      // depthwise (group = channels)
      {{1, 32, 112, 112}, {32, 1, 3, 3}, 1, 1, "window_rows", "rh=56,shift=1,vw=16"},
      {{1, 384, 14, 14}, {384, 1, 3, 3}, 1, 1, "window_rows", "rh=14,shift=1,vw=16"},
      {{1, 960, 7, 7}, {960, 1, 3, 3}, 1, 1, "window_rows", "rh=7,shift=1,vw=8"},
      // stride 3: no lane shifts
      {{1, 64, 30, 30}, {64, 1, 3, 3}, 3, 1, "window_rows", "rh=10,shift=0,vw=8"},
  };
  uint32_t seed = 520;
  for (const Case& c : cases) {
    ir::Graph g;
    ir::Node* n = g.AddNode(
        ir::OpKind::kConv, {g.AddInput("x", F32Type(c.x)), Const(g, "w", RandomF32(c.w, ++seed))},
        ConvAttrs({c.stride, c.stride}, {c.pad, c.pad, c.pad, c.pad}, {1, 1}, c.x[1] / c.w[1]),
        "conv");
    std::optional<codegen::Tunable> t = codegen::TunableOf(*n, cpu);
    std::string what = ShapeStr(c.x) + " w " + ShapeStr(c.w);
    ASSERT_TRUE(t.has_value()) << what;
    EXPECT_EQ(t->family, c.family) << what;
    EXPECT_EQ(codegen::PointString(t->candidates[0]), c.point) << what;
  }
}

TEST(WindowKernelTest, EveryTunedPointComputesTheReference) {
  // Output channels that fill no whole vector, padding on every side, a row longer than most
  // blocks: each point's edges differ.
  HostTensor x = RandomF32({2, 6, 9, 19}, 501), w = RandomF32({20, 6, 3, 3}, 502),
             b = RandomF32({20}, 503);
  ir::Attrs conv = ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
  size_t n = CheckCandidates(ir::OpKind::kConv, conv, x, {w, b},
                             RefConv(x, w, &b, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1), "conv", 2);
  // Strided, dilated, grouped.
  HostTensor wg = RandomF32({12, 3, 3, 3}, 504);
  ir::Attrs strided = ConvAttrs({2, 2}, {2, 1, 0, 2}, {2, 1}, 2);
  n += CheckCandidates(ir::OpKind::kConv, strided, x, {wg},
                       RefConv(x, wg, nullptr, {2, 2}, {2, 1, 0, 2}, {2, 1}, 2), "grouped conv", 3);
  // A 1x1 convolution over few channels on a long row: the heuristic's vectors run along the row.
  HostTensor xr = RandomF32({1, 5, 3, 50}, 508), wr = RandomF32({7, 5, 1, 1}, 509);
  ir::Attrs pointwise = ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
  n += CheckCandidates(ir::OpKind::kConv, pointwise, xr, {wr},
                       RefConv(xr, wr, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1), "1x1 conv", 40);
  // 47 output channels along the row: the heuristic's blocks of 24, the last one partial.
  HostTensor w47 = RandomF32({47, 5, 1, 1}, 514);
  n += CheckCandidates(ir::OpKind::kConv, pointwise, xr, {w47},
                       RefConv(xr, w47, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                       "1x1 conv, 47 channels", 1000);
  // Depthwise, stride 2; max pooling, stride 1 and 2.
  HostTensor wd = RandomF32({6, 1, 3, 3}, 505);
  ir::Attrs dw = ConvAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 6);
  n += CheckCandidates(ir::OpKind::kConv, dw, x, {wd},
                       RefConv(x, wd, nullptr, {2, 2}, {1, 1, 1, 1}, {1, 1}, 6), "depthwise", 1);
  for (int64_t st : {1, 2}) {
    ir::Attrs pool = PoolAttrs({3, 3}, {st, st}, {1, 1, 1, 1}, {1, 1});
    n += CheckCandidates(ir::OpKind::kMaxPool, pool, x, {},
                         RefPool(x, true, {3, 3}, {st, st}, {1, 1, 1, 1}, {1, 1}, false, false),
                         "maxpool", 2, false);
  }
  // Rows in chunks with lanes shifted in (window_shift.cl): a 5x5 depthwise window on a row of
  // 37 (a left edge, an inside and a partial chunk of 16), dilated and strided (odd and even
  // lanes shifted by more than one), and max pooling whose windows pass the row's end.
  HostTensor xw = RandomF32({1, 5, 6, 37}, 510), w5 = RandomF32({5, 1, 5, 5}, 511),
             b5 = RandomF32({5}, 512);
  ir::Attrs dw5 = ConvAttrs({1, 1}, {2, 2, 2, 2}, {1, 1}, 5);
  n += CheckCandidates(ir::OpKind::kConv, dw5, xw, {w5, b5},
                       RefConv(xw, w5, &b5, {1, 1}, {2, 2, 2, 2}, {1, 1}, 5), "depthwise 5x5", 3);
  HostTensor w3 = RandomF32({5, 1, 3, 3}, 513);
  ir::Attrs dilated = ConvAttrs({2, 2}, {2, 3, 1, 2}, {2, 2}, 5);
  n += CheckCandidates(ir::OpKind::kConv, dilated, xw, {w3},
                       RefConv(xw, w3, nullptr, {2, 2}, {2, 3, 1, 2}, {2, 2}, 5),
                       "depthwise dilated", 3);
  ir::Attrs past_end = PoolAttrs({3, 3}, {2, 2}, {0, 1, 1, 2}, {1, 1});
  n += CheckCandidates(ir::OpKind::kMaxPool, past_end, xw, {},
                       RefPool(xw, true, {3, 3}, {2, 2}, {0, 1, 1, 2}, {1, 1}, false, false),
                       "maxpool past the row's end", 3, false);
  // A product whose sides fill no whole tile.
  HostTensor a = RandomF32({13, 37}, 506), bm = RandomF32({37, 45}, 507);
  Shape ys;
  std::vector<double> ref = RefMatMulValues(a, bm, &ys);
  HostTensor want(DType::kFloat32, ys);
  for (size_t i = 0; i < ref.size(); ++i) want.data<float>()[i] = static_cast<float>(ref[i]);
  n += CheckCandidates(ir::OpKind::kMatMul, {}, a, {bm}, want, "matmul", 9);
  EXPECT_GT(n, 20u);
}

// A depthwise convolution's fused epilogue on whole chunks as vectors (VEPILOGUE): a residual
// read along the row, a per-channel factor constant along it, and a Clip; on a row of 33 (two
// whole chunks of 16 and one lane by lane). Elementwise ops without a vector form keep the
// lane-by-lane epilogue (Max, with its NaN rule).
TEST(WindowKernelTest, DepthwiseEpilogueOnVectors) {
  HostTensor x = RandomF32({2, 6, 5, 33}, 520), w = RandomF32({6, 1, 3, 3}, 521),
             r = RandomF32({2, 6, 5, 33}, 522), f = RandomF32({6, 1, 1}, 523);
  for (bool vector_form : {true, false}) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    ir::Value* rv = g->AddInput("r", F32Type(r.shape));
    ir::Value* y = g->AddNode(ir::OpKind::kConv, {xv, Const(*g, "w", w)},
                              ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 6), "dw")
                       ->outputs[0];
    y = g->AddNode(ir::OpKind::kAdd, {y, rv}, {}, "residual")->outputs[0];
    y = g->AddNode(vector_form ? ir::OpKind::kMul : ir::OpKind::kMax, {y, Const(*g, "f", f)}, {},
                   "factor")
            ->outputs[0];
    g->AddOutput(
        g->AddNode(ir::OpKind::kClip, {y}, {{"min", -0.5}, {"max", 0.25}}, "clip")->outputs[0]);
    CompiledModel m = CompileGraph(std::move(g), SharedContext(), CompileOptions{});
    if (!backends::NativeBackend::TargetOf(SharedContext()->info()).gpu) {
      EXPECT_EQ(m.executable->plan().steps.size(), 1u) << "one fused kernel";
      EXPECT_EQ(m.executable->plan().source.find("_vchain(") != std::string::npos, vector_form);
    }
    runtime::Session session(*m.executable);
    std::vector<HostTensor> out = session.Run({{"x", x}, {"r", r}});
    HostTensor want = RefConv(x, w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6);
    float* p = want.data<float>();
    for (int64_t i = 0; i < want.size(); ++i) {
      float v = p[i] + r.data<float>()[i], c = f.data<float>()[i / (5 * 33) % 6];
      v = vector_form ? v * c : std::max(v, c);
      p[i] = std::min(std::max(v, -0.5f), 0.25f);
    }
    ExpectClose(out[0], want, vector_form ? "vector epilogue" : "lane-by-lane epilogue");
  }
}

// The rows family (reductions and softmax): every candidate computes the reference, on this
// device's space and on a GPU's (TEXEL_TARGET=gpu:132: up to 256 work-items sharing a row), for
// rows of adjacent elements (a global average pool, a softmax over the last axis, 4400 rows of
// 64: on the GPU a warp each, the heuristic's point) and a reduction over a middle axis (rows
// whose elements lie 45 apart).
TEST(WindowKernelTest, EveryRowsPointComputesTheReduction) {
  HostTensor x = RandomF32({2, 5, 9, 31}, 560), mid = RandomF32({2, 70, 9, 5}, 561),
             many = RandomF32({4400, 64}, 562);
  ir::Attrs pool{{"axes", Ints{2, 3}}, {"keepdims", int64_t{1}}};
  ir::Attrs middle{{"axes", Ints{1}}, {"keepdims", int64_t{0}}};
  ir::Attrs last{{"axis", int64_t{3}}}, rows{{"axes", Ints{1}}, {"keepdims", int64_t{1}}};
  for (const char* target : {"", "gpu:132"}) {
    ScopedEnv env("TEXEL_TARGET", *target ? std::optional<std::string>(target) : std::nullopt);
    size_t n = CheckCandidates(ir::OpKind::kReduceMean, pool, x, {}, RefReduceMean(x, {2, 3}, true),
                               std::string("global average pool ") + target, 1);
    n += CheckCandidates(ir::OpKind::kReduceSum, middle, mid, {}, RefReduce(mid, {1}, false, 's'),
                         std::string("sum over channels ") + target, 1);
    n += CheckCandidates(ir::OpKind::kSoftmax, last, x, {}, RefSoftmax(x, 3, false),
                         std::string("softmax ") + target, 1);
    n += CheckCandidates(ir::OpKind::kReduceMax, rows, many, {}, RefReduce(many, {1}, true, 'x'),
                         std::string("many rows ") + target, 1);
    EXPECT_GE(n, 12u) << target;
  }
  ir::Graph g;
  ir::Node* r =
      g.AddNode(ir::OpKind::kReduceMax, {g.AddInput("x", F32Type(many.shape))}, rows, "r");
  std::optional<codegen::Tunable> t = codegen::TunableOf(*r, testing::H100Target());
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(codegen::PointString(t->candidates[0]), "lw=32") << "a warp per row of 64";
}

// On a GPU (an H100's facts, run here): a squeeze-and-excitation block's 1x1 convolution on one
// pixel takes the matmul family, whose direct-kernel points (rows per work-item, columns per
// group, pixels per vector, K split) each compute the reference (every twelfth run); depthwise
// convolutions take the depthwise family, whose window points (outputs per work-item, work-items
// along the row; the heuristic's first: 4 outputs at stride 1, 2 at stride 2) and GEMM points do
// too.
TEST(WindowKernelTest, EveryGpuDepthwiseAndDirectPointComputesTheConvolution) {
  codegen::Target gpu = testing::H100Target();
  struct Case {
    Shape x, w;
    Ints strides, pads, dilations;
    int64_t group;
    std::string family;
    bool window;  // the heuristic's point
  };
  const Case cases[] = {
      {{1, 6, 9, 13}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6, "depthwise", true},
      {{1, 6, 9, 13}, {6, 1, 3, 3}, {1, 2}, {1, 2, 1, 2}, {1, 2}, 6, "depthwise", true},
      {{2, 4, 11, 10}, {4, 1, 7, 7}, {1, 1}, {3, 3, 3, 3}, {1, 1}, 4, "depthwise", true},
      {{1, 5, 13, 12}, {5, 1, 5, 5}, {2, 2}, {2, 1, 3, 2}, {2, 1}, 5, "depthwise", true},
      {{1, 40, 1, 1}, {12, 40, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, "matmul", false}};
  uint32_t seed = 540;
  for (const Case& c : cases) {
    HostTensor x = RandomF32(c.x, ++seed), w = RandomF32(c.w, ++seed),
               b = RandomF32({c.w[0]}, ++seed);
    ir::Graph g;
    ir::Attrs attrs = ConvAttrs(c.strides, c.pads, c.dilations, c.group);
    ir::Node* conv = g.AddNode(
        ir::OpKind::kConv, {g.AddInput("x", F32Type(x.shape)), Const(g, "w", w), Const(g, "b", b)},
        attrs, "conv");
    std::optional<codegen::Tunable> t = codegen::TunableOf(*conv, gpu);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->family, c.family);
    const codegen::TunePoint& first = t->candidates[0];
    EXPECT_EQ(first.count("window") && first.at("window") == 1, c.window)
        << codegen::PointString(first);
    if (c.window) {
      EXPECT_EQ(codegen::PointString(first),
                c.strides[1] == 1 ? "lx=8,ox=4,window=1" : "lx=8,ox=2,window=1")
          << "rows of " << c.x[3];
    }
    HostTensor want = RefConv(x, w, &b, c.strides, c.pads, c.dilations, c.group);
    size_t direct = 0, window = 0;
    for (const codegen::TunePoint& p : t->candidates) {
      bool win = p.count("window") && p.at("window") == 1;
      if (win) {
        ++window;
      } else if (p.at("kind") != 1 || direct++ % 12 != 0) {
        continue;
      }
      PointsInOrder source({p});
      codegen::Target picked = gpu;
      picked.tuning = &source;
      std::vector<codegen::KernelSpec> specs = codegen::GenerateKernel(*conv, "conv", picked);
      EXPECT_EQ(specs[0].source.find("wbase") != std::string::npos, win);
      ExpectClose(RunConvKernels(*conv, std::move(specs), x, w, b), want,
                  fmt::format("group {} {}", c.group, codegen::PointString(p)));
    }
    EXPECT_GT(direct, 24u) << "direct points";
    if (c.family == "depthwise") {
      EXPECT_GE(window, 3u) << "outputs per work-item and work-items along the row";
      ExpectPointsChangeTheKernel(*conv, gpu, t->candidates, "depthwise");
    } else {
      EXPECT_EQ(window, 0u);
    }
  }
}

// A 7x7 depthwise convolution with SiLU after it, compiled for a GPU (TEXEL_TARGET=gpu:132):
// one kernel, the window kernel with the activation in its epilogue.
TEST(WindowKernelTest, DepthwiseWindowKernelWithItsEpilogue) {
  ScopedEnv env("TEXEL_TARGET", std::string("gpu:132"));
  HostTensor x = RandomF32({2, 8, 12, 14}, 550), w = RandomF32({8, 1, 7, 7}, 551),
             b = RandomF32({8}, 552);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* y =
      g->AddNode(ir::OpKind::kConv,
                 {g->AddInput("x", F32Type(x.shape)), Const(*g, "w", w), Const(*g, "b", b)},
                 ConvAttrs({1, 1}, {3, 3, 3, 3}, {1, 1}, 8), "dw")
          ->outputs[0];
  ir::Value* s = g->AddNode(ir::OpKind::kSigmoid, {y}, {}, "sig")->outputs[0];
  g->AddOutput(g->AddNode(ir::OpKind::kMul, {y, s}, {}, "silu")->outputs[0]);
  CompiledModel m = CompileGraph(std::move(g), SharedContext(), CompileOptions{});
  EXPECT_EQ(m.executable->plan().steps.size(), 1u) << "one fused kernel";
  EXPECT_NE(m.executable->plan().source.find("wbase"), std::string::npos);
  runtime::Session session(*m.executable);
  std::vector<HostTensor> out = session.Run({{"x", x}});
  HostTensor want = RefConv(x, w, &b, {1, 1}, {3, 3, 3, 3}, {1, 1}, 8);
  for (float& v : std::span(want.data<float>(), want.size()))
    v = static_cast<float>(v / (1 + std::exp(-double{v})));
  ExpectClose(out[0], want, "depthwise 7x7 with SiLU");
}

// HardSwish (x * HardSigmoid(x)) and SiLU (x * Sigmoid(x)) after a depthwise convolution that
// nothing else joined: fuse's second rule gives the Conv a group for them, so each is one
// kernel, on CPUs with the activation on whole vectors (HardSigmoid's clamp on vectors).
TEST(WindowKernelTest, HardSwishAndSiluInTheConvolution) {
  HostTensor x = RandomF32({1, 6, 5, 33}, 530), w = RandomF32({6, 1, 3, 3}, 531);
  for (ir::OpKind gate : {ir::OpKind::kHardSigmoid, ir::OpKind::kSigmoid}) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", F32Type(x.shape));
    ir::Value* y = g->AddNode(ir::OpKind::kConv, {xv, Const(*g, "w", w)},
                              ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 6), "dw")
                       ->outputs[0];
    ir::Attrs a;
    if (gate == ir::OpKind::kHardSigmoid) {
      a.Set("alpha", 1.0 / 6);
      a.Set("beta", 0.5);
    }
    ir::Value* s = g->AddNode(gate, {y}, a, "gate")->outputs[0];
    g->AddOutput(g->AddNode(ir::OpKind::kMul, {y, s}, {}, "swish")->outputs[0]);
    CompiledModel m = CompileGraph(std::move(g), SharedContext(), CompileOptions{});
    EXPECT_EQ(m.executable->plan().steps.size(), 1u) << "one fused kernel";
    if (!backends::NativeBackend::TargetOf(SharedContext()->info()).gpu) {
      EXPECT_NE(m.executable->plan().source.find("_vchain("), std::string::npos);
    }
    runtime::Session session(*m.executable);
    std::vector<HostTensor> out = session.Run({{"x", x}});
    HostTensor want = RefConv(x, w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6);
    for (float& v : std::span(want.data<float>(), want.size())) {
      double gv = gate == ir::OpKind::kSigmoid ? 1 / (1 + std::exp(-double{v}))
                                               : std::clamp(v / 6.0 + 0.5, 0.0, 1.0);
      v = static_cast<float>(v * gv);
    }
    ExpectClose(out[0], want, std::string(OpName(gate)));
  }
}

}  // namespace
}  // namespace texel
