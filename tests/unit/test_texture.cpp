// Texture storage: the two flattening conventions and host packing (core/texture_layout.h),
// the texture pool's choices (runtime/texture_pool.h), images on PoCL (f32 and f16 channels),
// and whole graphs with --storage texture against the same graphs in buffers: dense, 1x1,
// strided, dilated and depthwise convolutions with channel counts that are not multiples of 4,
// max and average pooling, elementwise chains reading a texture operand by lane and a buffer
// by broadcast, f16 images; conversions only at the boundaries; a mixed partition with CLBlast
// converting at its boundaries on the device, without host transfers or synchronisation; no
// tunable family for a node on images (the tuner would measure a buffer kernel that never runs).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "backends/native/native_backend.h"
#include "codegen/opencl/tuning.h"
#include "core/error.h"
#include "core/texture_layout.h"
#include "kernel_test_util.h"
#include "runtime/texture_pool.h"

namespace texel {
namespace {

using namespace texel::testing;
using Ints = std::vector<int64_t>;

TEST(TextureLayoutTest, ConventionsAndPacking) {
  // Activation [N, C, H, W] -> NCHW4c [N, ceil(C/4), H, W, 4] -> height N*C4*H, width W.
  EXPECT_EQ(TextureExtentOf({2, 6, 5, 7}, TextureKind::kActivation), (TextureExtent{7, 2 * 2 * 5}));
  // Weight [O, I, KH, KW] -> OIHW4o [ceil(O/4), I, KH, KW, 4] -> height O4, width I*KH*KW.
  EXPECT_EQ(TextureExtentOf({10, 3, 3, 3}, TextureKind::kWeight), (TextureExtent{27, 3}));
  EXPECT_FALSE(FitsImage({9000, 4}, 8192, 8192));
  EXPECT_TRUE(FitsImage({8192, 8192}, 8192, 8192));
  for (TextureKind kind : {TextureKind::kActivation, TextureKind::kWeight}) {
    HostTensor t = RandomF32({2, 6, 3, 5}, 1200);
    std::vector<float> texels = PackTexels(t, kind);
    TextureExtent e = TextureExtentOf(t.shape, kind);
    ASSERT_EQ(texels.size(), static_cast<size_t>(e.width * e.height * 4));
    HostTensor back = UnpackTexels(texels, t.shape, kind);
    EXPECT_EQ(back.bytes, t.bytes);
    // Element (1, 5, 2, 4): activation texel (x 4, y (1*2 + 1)*3 + 2), lane 1; weight (o 1,
    // i 5, kh 2, kw 4): texel (x (5*3 + 2)*5 + 4, y 0), lane 1.
    int64_t i = ((1 * 6 + 5) * 3 + 2) * 5 + 4;
    size_t at = kind == TextureKind::kActivation ? ((11 * e.width) + 4) * 4 + 1
                                                 : ((0 * e.width) + (5 * 3 + 2) * 5 + 4) * 4 + 1;
    if (kind == TextureKind::kWeight) i = ((1 * 6 + 5) * 3 + 2) * 5 + 4;
    EXPECT_EQ(texels[at], t.data<float>()[i]) << (kind == TextureKind::kWeight ? "weight" : "act");
  }
  // Padded channels are zeros.
  HostTensor ones(DType::kFloat32, {1, 5, 1, 1});
  for (int64_t i = 0; i < 5; ++i) ones.data<float>()[i] = 1;
  EXPECT_EQ(PackTexels(ones, TextureKind::kActivation),
            (std::vector<float>{1, 1, 1, 1, 1, 0, 0, 0}));
}

TEST(TexturePoolTest, LeastGrowthThenLeastWaste) {
  using runtime::TextureRequest;
  // a [0,1] and b [1,2] overlap; c [3,4] may reuse either: b's block (10x10) needs no growth
  // and wastes less than a's (20x20); d [3,5] overlaps c and takes a's; e is f16: its own.
  std::vector<TextureRequest> r = {{20, 20, false, 0, 1},
                                   {10, 10, false, 1, 2},
                                   {8, 10, false, 3, 4},
                                   {16, 16, false, 3, 5},
                                   {8, 8, true, 3, 3}};
  runtime::TexturePool p = runtime::PlanTexturePool(r);
  ASSERT_EQ(p.blocks.size(), 3u);
  EXPECT_EQ(p.block_of, (std::vector<int>{0, 1, 1, 0, 2}));
  EXPECT_EQ(p.blocks[0].width, 20);
  EXPECT_EQ(p.blocks[1].width, 10);
  EXPECT_TRUE(p.blocks[2].half);
  EXPECT_EQ(p.pool_bytes, (20 * 20 + 10 * 10) * 16 + 8 * 8 * 8);
  EXPECT_EQ(p.request_bytes, (400 + 100 + 80 + 256) * 16 + 8 * 8 * 8);
  // A free block that must grow: the one growing least.
  p = runtime::PlanTexturePool({{4, 30, false, 0, 0}, {30, 4, false, 0, 0}, {8, 8, false, 1, 1}});
  EXPECT_EQ(p.block_of[2], 0);  // 8x30 (+120 texels) beats 30x8 (+120) by order, same growth
  EXPECT_EQ(p.blocks[0].width, 8);
}

TEST(TextureImageTest, RoundTripF32AndF16) {
  const cl::Context& ctx = *SharedContext();
  if (!ctx.info().image_support) GTEST_SKIP() << "no image support";
  std::vector<float> texels(5 * 3 * 4);
  for (size_t i = 0; i < texels.size(); ++i) texels[i] = 0.25f * static_cast<float>(i) - 3;
  cl::Buffer img = cl::Buffer::Image2D(ctx, 5, 3, false);
  img.Write(ctx, texels.data(), texels.size() * 4);
  std::vector<float> back(texels.size());
  img.Read(ctx, back.data(), back.size() * 4);
  EXPECT_EQ(back, texels);
  std::vector<uint16_t> halves(texels.size()), back16(texels.size());
  for (size_t i = 0; i < texels.size(); ++i) halves[i] = FloatToHalf(texels[i]);
  cl::Buffer img16 = cl::Buffer::Image2D(ctx, 5, 3, true);
  img16.Write(ctx, halves.data(), halves.size() * 2);
  img16.Read(ctx, back16.data(), back16.size() * 2);
  EXPECT_EQ(back16, halves);
  EXPECT_THROW(cl::Buffer::Image2D(ctx, ctx.info().image2d_max_width + 1, 1, false), Error);
}

// CLBlast, when allowed, takes every MatMul (--partition first) and no Conv.
CompiledModel CompileWith(std::unique_ptr<ir::Graph> g, passes::StoragePolicy storage,
                          bool half = false, std::vector<std::string> backends = {}) {
  CompileOptions opts;
  opts.deny = {"clblast:Conv"};
  opts.storage = storage;
  opts.half_texels = half;
  opts.backends = std::move(backends);
  opts.partition = passes::PartitionPolicy::kFirst;
  return CompileGraph(std::move(g), SharedContext(), opts);
}

int CountOp(const ir::Graph& g, ir::OpKind op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op == op;
  return n;
}

ir::Attrs ConvAttrs(Ints strides, Ints pads, Ints dilations, int64_t group) {
  return {{"strides", strides}, {"pads", pads}, {"dilations", dilations}, {"group", group}};
}

ir::Attrs PoolAttrs(Ints kernel, Ints strides, Ints pads, int64_t ceil) {
  return {{"kernel", kernel},        {"strides", strides}, {"pads", pads},
          {"dilations", Ints{1, 1}}, {"ceil_mode", ceil},  {"count_include_pad", int64_t{0}}};
}

// A small CNN in images: conv 3x3 (5 -> 6 channels, bias) + Relu, depthwise 3x3 stride 2,
// conv 1x1 (6 -> 7, dilated 3x3 second branch), residual Add of two images by lane, a
// per-channel Mul by a constant read from a buffer, max pool (ceil mode), average pool.
std::unique_ptr<ir::Graph> SmallCnn(const std::map<std::string, HostTensor>& c) {
  auto g = std::make_unique<ir::Graph>();
  auto k = [&](const char* name) {
    return g->AddConstant(name, std::make_shared<HostTensor>(c.at(name)));
  };
  auto node = [&](ir::OpKind op, std::vector<ir::Value*> in, ir::Attrs a, const char* name) {
    return g->AddNode(op, std::move(in), std::move(a), name)->outputs[0];
  };
  ir::Value* x = g->AddInput("x", {DType::kFloat32, {2, 5, 13, 11}});
  ir::Value* h = node(ir::OpKind::kConv, {x, k("w1"), k("b1")},
                      ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), "conv1");
  h = node(ir::OpKind::kRelu, {h}, {}, "relu1");
  ir::Value* d = node(ir::OpKind::kConv, {h, k("wd")}, ConvAttrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 6),
                      "depthwise");
  ir::Value* p = node(ir::OpKind::kConv, {d, k("wp"), k("bp")},
                      ConvAttrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), "pointwise");
  ir::Value* q =
      node(ir::OpKind::kConv, {d, k("wq")}, ConvAttrs({1, 1}, {2, 2, 2, 2}, {2, 2}, 1), "dilated");
  ir::Value* s = node(ir::OpKind::kAdd, {p, q}, {}, "residual");
  s = node(ir::OpKind::kMul, {s, k("scale")}, {}, "scale");
  ir::Value* m = node(ir::OpKind::kMaxPool, {s}, PoolAttrs({3, 3}, {2, 2}, {0, 0, 0, 0}, 1), "max");
  g->AddOutput(
      node(ir::OpKind::kAveragePool, {m}, PoolAttrs({2, 2}, {1, 1}, {1, 1, 0, 0}, 0), "avg"));
  g->AddOutput(s);
  return g;
}

// SmallCnn's constants, random from seed on.
std::map<std::string, HostTensor> SmallCnnConstants(uint32_t seed) {
  const std::pair<const char*, Shape> shapes[] = {
      {"w1", {6, 5, 3, 3}}, {"b1", {6}},          {"wd", {6, 1, 3, 3}},   {"wp", {7, 6, 1, 1}},
      {"bp", {7}},          {"wq", {7, 6, 3, 3}}, {"scale", {1, 7, 1, 1}}};
  std::map<std::string, HostTensor> c;
  for (const auto& [name, shape] : shapes) c[name] = RandomF32(shape, seed++);
  return c;
}

TEST(TextureGraphTest, MatchesBuffersInF32AndF16) {
  if (!SharedContext()->info().image_support) GTEST_SKIP() << "no image support";
  std::map<std::string, HostTensor> c = SmallCnnConstants(1300);
  HostTensor x = RandomF32({2, 5, 13, 11}, 1307);
  CompiledModel tex = CompileWith(SmallCnn(c), passes::StoragePolicy::kTexture);
  // Images from the first convolution on; conversions only for the input and the two outputs.
  EXPECT_EQ(CountOp(*tex.graph, ir::OpKind::kConvertStorage), 3);
  for (const auto& n : tex.graph->nodes()) {
    if (n->op != ir::OpKind::kConvertStorage && n->group < 0) {
      EXPECT_TRUE(n->outputs[0]->is_image()) << n->name;
    }
  }
  EXPECT_GT(tex.executable->plan().memory.texture_pool_bytes, 0);
  EXPECT_LE(tex.executable->plan().memory.texture_pool_bytes,
            tex.executable->plan().memory.texture_unshared_bytes);
  std::vector<HostTensor> got = runtime::Session(*tex.executable).Run({{"x", x}});
  std::vector<HostTensor> want =
      runtime::Session(*CompileWith(SmallCnn(c), passes::StoragePolicy::kBuffer).executable)
          .Run({{"x", x}});
  ASSERT_EQ(got.size(), 2u);
  ExpectClose(got[0], want[0], "pooled");
  ExpectClose(got[1], want[1], "residual");
  // f16 images: reads return float, so any device runs them; f16 rounding at each image.
  CompiledModel half = CompileWith(SmallCnn(c), passes::StoragePolicy::kTexture, true);
  std::vector<HostTensor> got16 = runtime::Session(*half.executable).Run({{"x", x}});
  for (size_t o = 0; o < 2; ++o) {
    double err = 0, norm = 0;
    for (int64_t i = 0; i < want[o].size(); ++i) {
      double w = want[o].data<float>()[i], d = got16[o].data<float>()[i] - w;
      err += d * d, norm += w * w;
    }
    EXPECT_LT(std::sqrt(err / norm), 3e-3) << "f16 images, output " << o;
  }
}

// Texture kernels declare no space: a node that reads or writes images is not tunable (its
// buffer family's kernel is not what the model runs), while the same nodes in buffers are.
TEST(TextureGraphTest, NodesOnImagesAreNotTuned) {
  if (!SharedContext()->info().image_support) GTEST_SKIP() << "no image support";
  std::map<std::string, HostTensor> c = SmallCnnConstants(1400);
  codegen::Target target = backends::NativeBackend::TargetOf(SharedContext()->info());
  CompiledModel tex = CompileWith(SmallCnn(c), passes::StoragePolicy::kTexture);
  CompiledModel buf = CompileWith(SmallCnn(c), passes::StoragePolicy::kBuffer);
  int convs = 0, tunable_in_buffers = 0;
  for (const auto& n : tex.graph->nodes()) {
    if (n->op != ir::OpKind::kConv) continue;
    ++convs;
    EXPECT_TRUE(n->inputs[0]->is_image()) << n->name;
    EXPECT_FALSE(codegen::TunableOf(*n, target).has_value()) << n->name;
  }
  for (const auto& n : buf.graph->nodes())
    if (n->op == ir::OpKind::kConv)
      tunable_in_buffers += codegen::TunableOf(*n, target).has_value();
  EXPECT_EQ(convs, 4);
  EXPECT_EQ(tunable_in_buffers, 4);
}

// --storage auto with --measure: every group a texture kernel could compute is timed both ways
// (its anchor alone), and whatever is chosen computes the same results.
TEST(TextureGraphTest, AutoMeasuredChoosesPerGroup) {
  if (!SharedContext()->info().image_support) GTEST_SKIP() << "no image support";
  std::map<std::string, HostTensor> c = SmallCnnConstants(1500);
  HostTensor x = RandomF32({2, 5, 13, 11}, 1507);
  CompileOptions opts;
  opts.storage = passes::StoragePolicy::kAuto;
  opts.partition = passes::PartitionPolicy::kMeasure;
  int64_t measured = -1;
  opts.after_pass = [&](const passes::Pass& p, const passes::Stats& s, const ir::Graph&) {
    if (std::string_view(p.name) == "assign-storage") measured = s.at("groups-measured");
  };
  CompiledModel m = CompileGraph(SmallCnn(c), SharedContext(), opts);
  // 4 convolutions and 2 pools always; the residual add when one of its inputs is an image.
  EXPECT_GE(measured, 6);
  std::vector<HostTensor> got = runtime::Session(*m.executable).Run({{"x", x}});
  std::vector<HostTensor> want =
      runtime::Session(*CompileWith(SmallCnn(c), passes::StoragePolicy::kBuffer).executable)
          .Run({{"x", x}});
  ExpectClose(got[0], want[0], "pooled, auto storage");
  ExpectClose(got[1], want[1], "residual, auto storage");
}

// A native texture convolution between two CLBlast products: the partition pass converts at
// each boundary on the device; the run makes no host transfer and no host synchronisation
// between its first and its last step.
TEST(TextureGraphTest, MixedWithClblastConvertsOnTheDevice) {
  if (!SharedContext()->info().image_support) GTEST_SKIP() << "no image support";
  TEXEL_SKIP_WITHOUT_CLBLAST();
  HostTensor x = RandomF32({8, 12}, 1400), w1 = RandomF32({12, 36}, 1401);
  HostTensor wc = RandomF32({4, 4, 3, 3}, 1402), w2 = RandomF32({36, 5}, 1403);
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    auto k = [&](const char* name, const HostTensor& t) {
      return g->AddConstant(name, std::make_shared<HostTensor>(t));
    };
    ir::Value* h =
        g->AddNode(ir::OpKind::kMatMul, {g->AddInput("x", {DType::kFloat32, x.shape}), k("w1", w1)},
                   {}, "mm1")
            ->outputs[0];
    h = g->AddNode(ir::OpKind::kReshape, {h}, {{"shape", Ints{2, 4, 6, 6}}}, "to_image")
            ->outputs[0];
    h = g->AddNode(ir::OpKind::kConv, {h, k("wc", wc)}, ConvAttrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1),
                   "conv")
            ->outputs[0];
    h = g->AddNode(ir::OpKind::kRelu, {h}, {}, "relu")->outputs[0];
    h = g->AddNode(ir::OpKind::kReshape, {h}, {{"shape", Ints{8, 36}}}, "to_rows")->outputs[0];
    g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {h, k("w2", w2)}, {}, "mm2")->outputs[0]);
    return g;
  };
  CompiledModel mixed =
      CompileWith(build(), passes::StoragePolicy::kTexture, false, {"clblast", "native"});
  const runtime::Plan& plan = mixed.executable->plan();
  std::vector<std::string> kinds;
  for (const auto& s : plan.steps) kinds.push_back(s.call.empty() ? s.op : s.call);
  EXPECT_EQ(kinds, (std::vector<std::string>{"clblast.sgemm", "ConvertStorage", "Conv+Relu",
                                             "ConvertStorage", "clblast.sgemm"}));
  runtime::Session session(*mixed.executable);
  session.SetInput("x", x);
  ExecuteExpectingNoHostRoundTrip(session);
  HostTensor want =
      runtime::Session(*CompileWith(build(), passes::StoragePolicy::kBuffer).executable)
          .Run({{"x", x}})[0];
  ExpectClose(session.GetOutput(0), want, "MatMul (CLBlast) -> Conv (texture) -> MatMul (CLBlast)");
}

}  // namespace
}  // namespace texel
