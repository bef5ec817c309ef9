// The clblast backend (backends/clblast) on PoCL, against the native backend: MatMuls of odd
// sizes, batched, with a shared right operand, transposed operands and M = 1 run as CLBlast
// calls and match; a batch broadcast CLBlast's strided GEMM cannot express stays native; a
// mixed partition (CLBlast, native, CLBlast) makes no host transfer and no host
// synchronisation between its first and its last step; the estimated partition keeps nodes
// native where CLBlast is slower; a CLBlast error status names the step.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/error.h"
#include "kernel_test_util.h"
#include "runtime/cl/program_cache.h"

namespace texel {
namespace {

using namespace texel::testing;
using Ints = std::vector<int64_t>;

// Compiles the graph `build` makes with `backends` on the shared PoCL context.
CompiledModel CompileWith(const std::function<std::unique_ptr<ir::Graph>()>& build,
                          std::vector<std::string> backends) {
  CompileOptions opts;
  opts.backends = std::move(backends);
  opts.partition = passes::PartitionPolicy::kFirst;
  return CompileGraph(build(), SharedContext(), opts);
}

int CountCalls(const runtime::Plan& plan, const std::string& routine = "clblast.sgemm") {
  int calls = 0;
  for (const auto& s : plan.steps) calls += s.call == routine;
  return calls;
}

TEST(ClblastBackendTest, MatchesNativeOnOddAndBatchedShapes) {
  TEXEL_SKIP_WITHOUT_CLBLAST();
  struct Case {
    Shape a, b;
    bool constant_b;
  };
  const std::vector<Case> cases = {
      {{67, 45}, {45, 131}, true},        // odd sizes, constant weights
      {{3, 20, 33}, {3, 33, 17}, false},  // batched: a strided-batched call
      {{2, 5, 7, 9}, {9, 11}, true},      // one B for all batches: A's batches become rows
      {{1, 64}, {64, 1000}, true},        // M = 1
      {{2, 1, 4, 5}, {3, 5, 6}, false},   // a broadcast of both: stays native
  };
  std::map<std::string, HostTensor> inputs;
  std::vector<HostTensor> consts;
  for (size_t i = 0; i < cases.size(); ++i) {
    inputs[fmt::format("a{}", i)] = RandomF32(cases[i].a, 900 + 2 * static_cast<uint32_t>(i));
    consts.push_back(RandomF32(cases[i].b, 901 + 2 * static_cast<uint32_t>(i)));
    if (!cases[i].constant_b) inputs[fmt::format("b{}", i)] = consts.back();
  }
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    for (size_t i = 0; i < cases.size(); ++i) {
      ir::Value* a = g->AddInput(fmt::format("a{}", i), {DType::kFloat32, cases[i].a});
      ir::Value* b =
          cases[i].constant_b
              ? g->AddConstant(fmt::format("b{}", i), std::make_shared<HostTensor>(consts[i]))
              : g->AddInput(fmt::format("b{}", i), {DType::kFloat32, cases[i].b});
      g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {a, b}, {}, fmt::format("mm{}", i))->outputs[0]);
    }
    return g;
  };
  CompiledModel mixed = CompileWith(build, {"clblast", "native"});
  CompiledModel native = CompileWith(build, {"native"});
  EXPECT_EQ(CountCalls(mixed.executable->plan()), 4);
  EXPECT_EQ(CountCalls(native.executable->plan()), 0);
  std::vector<HostTensor> got = runtime::Session(*mixed.executable).Run(inputs);
  std::vector<HostTensor> want = runtime::Session(*native.executable).Run(inputs);
  ASSERT_EQ(got.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i)
    ExpectClose(got[i], want[i],
                fmt::format("MatMul {} x {}", ShapeStr(cases[i].a), ShapeStr(cases[i].b)));
}

// Convolutions CLBlast takes (one group, symmetric pads; with and without a bias, strided and
// dilated, 1x1) and two it does not (asymmetric pads, groups), against the native backend.
TEST(ClblastBackendTest, ConvolutionsMatchNative) {
  TEXEL_SKIP_WITHOUT_CLBLAST();
  HostTensor x = RandomF32({2, 3, 9, 11}, 960);
  HostTensor w3 = RandomF32({5, 3, 3, 3}, 961), b3 = RandomF32({5}, 962);
  HostTensor w1 = RandomF32({4, 3, 1, 1}, 963), wg = RandomF32({6, 1, 3, 3}, 964);
  auto conv_attrs = [](Ints strides, Ints pads, Ints dilations, int64_t group) {
    return ir::Attrs{
        {"strides", strides}, {"pads", pads}, {"dilations", dilations}, {"group", group}};
  };
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* xv = g->AddInput("x", {DType::kFloat32, x.shape});
    auto c = [&](const char* name, const HostTensor& t) {
      return g->AddConstant(name, std::make_shared<HostTensor>(t));
    };
    auto conv = [&](std::vector<ir::Value*> in, ir::Attrs attrs, const char* name) {
      g->AddOutput(
          g->AddNode(ir::OpKind::kConv, std::move(in), std::move(attrs), name)->outputs[0]);
    };
    conv({xv, c("w3", w3), c("b3", b3)}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1), "bias");
    conv({xv, c("w3b", w3)}, conv_attrs({2, 2}, {2, 1, 2, 1}, {2, 2}, 1), "strided_dilated");
    conv({xv, c("w1", w1)}, conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1), "pointwise");
    conv({xv, c("w3c", w3)}, conv_attrs({1, 1}, {1, 0, 0, 1}, {1, 1}, 1), "asymmetric");
    conv({xv, c("wg", wg)}, conv_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 3), "grouped");
    return g;
  };
  CompiledModel mixed = CompileWith(build, {"clblast", "native"});
  EXPECT_EQ(CountCalls(mixed.executable->plan(), "clblast.sconvgemm"), 3);
  std::vector<HostTensor> got = runtime::Session(*mixed.executable).Run({{"x", x}});
  std::vector<HostTensor> want =
      runtime::Session(*CompileWith(build, {"native"}).executable).Run({{"x", x}});
  const char* names[] = {"bias", "strided_dilated", "pointwise", "asymmetric", "grouped"};
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) ExpectClose(got[i], want[i], names[i]);
}

TEST(ClblastBackendTest, MixedPartitionStaysOnTheDevice) {
  TEXEL_SKIP_WITHOUT_CLBLAST();
  HostTensor x = RandomF32({32, 48}, 950), w1 = RandomF32({48, 40}, 951);
  HostTensor w2 = RandomF32({40, 24}, 952);
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* h = g->AddNode(ir::OpKind::kMatMul,
                              {g->AddInput("x", {DType::kFloat32, x.shape}),
                               g->AddConstant("w1", std::make_shared<HostTensor>(w1))},
                              {}, "mm1")
                       ->outputs[0];
    h = g->AddNode(ir::OpKind::kRelu, {h}, {}, "relu")->outputs[0];
    g->AddOutput(g->AddNode(ir::OpKind::kMatMul,
                            {h, g->AddConstant("w2", std::make_shared<HostTensor>(w2))}, {}, "mm2")
                     ->outputs[0]);
    return g;
  };
  CompiledModel mixed = CompileWith(build, {"clblast", "native"});
  const runtime::Plan& plan = mixed.executable->plan();
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_EQ(plan.steps[0].call, "clblast.sgemm");
  EXPECT_EQ(plan.steps[1].backend, "native");
  EXPECT_EQ(plan.steps[2].call, "clblast.sgemm");

  runtime::Session session(*mixed.executable);
  session.SetInput("x", x);
  ExecuteExpectingNoHostRoundTrip(session);
  HostTensor got = session.GetOutput(0);
  HostTensor want = runtime::Session(*CompileWith(build, {"native"}).executable).Run({{"x", x}})[0];
  ExpectClose(got, want, "MatMul -> Relu -> MatMul, CLBlast and native");
}

// Operands transposed by Transpose nodes (a Gemm's transA / transB): simplify folds them into
// the MatMul, CLBlast multiplies them transposed (no transpose step left) and matches native.
TEST(ClblastBackendTest, TransposedOperandsMatchNative) {
  TEXEL_SKIP_WITHOUT_CLBLAST();
  struct Case {
    Shape a, b;  // as stored
    bool ta, tb;
  };
  const std::vector<Case> cases = {
      {{45, 67}, {45, 131}, true, false},       // A^T B, odd sizes
      {{3, 20, 33}, {3, 17, 33}, false, true},  // batched A B^T (attention's Q K^T)
      {{2, 33, 9}, {11, 33}, true, true},       // batched A^T with one shared B^T
      {{1, 64}, {100, 64}, false, true},        // M = 1
  };
  std::map<std::string, HostTensor> inputs;
  for (size_t i = 0; i < cases.size(); ++i) {
    inputs[fmt::format("a{}", i)] = RandomF32(cases[i].a, 970 + 2 * static_cast<uint32_t>(i));
    inputs[fmt::format("b{}", i)] = RandomF32(cases[i].b, 971 + 2 * static_cast<uint32_t>(i));
  }
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    auto transpose = [&](ir::Value* v) {
      Ints perm(v->type.shape.size());
      for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int64_t>(d);
      std::swap(perm[perm.size() - 2], perm.back());
      return g->AddNode(ir::OpKind::kTranspose, {v}, {{"perm", perm}}, "t")->outputs[0];
    };
    for (size_t i = 0; i < cases.size(); ++i) {
      ir::Value* a = g->AddInput(fmt::format("a{}", i), {DType::kFloat32, cases[i].a});
      ir::Value* b = g->AddInput(fmt::format("b{}", i), {DType::kFloat32, cases[i].b});
      if (cases[i].ta) a = transpose(a);
      if (cases[i].tb) b = transpose(b);
      g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {a, b}, {}, fmt::format("mm{}", i))->outputs[0]);
    }
    return g;
  };
  CompiledModel mixed = CompileWith(build, {"clblast", "native"});
  EXPECT_EQ(CountCalls(mixed.executable->plan()), 4);
  EXPECT_EQ(mixed.executable->plan().steps.size(), 4u) << "a transpose was left as a step";
  std::vector<HostTensor> got = runtime::Session(*mixed.executable).Run(inputs);
  std::vector<HostTensor> want =
      runtime::Session(*CompileWith(build, {"native"}).executable).Run(inputs);
  ASSERT_EQ(got.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i)
    ExpectClose(got[i], want[i],
                fmt::format("MatMul {}{} x {}{}", ShapeStr(cases[i].a), cases[i].ta ? "^T" : "",
                            ShapeStr(cases[i].b), cases[i].tb ? "^T" : ""));
}

// By estimated time (the default policy) CLBlast takes a MatMul only where it is estimated
// faster by more than the boundary: on PoCL never (measured 2-18x slower than texel's kernels),
// and a tiny product stays native on a GPU too.
TEST(ClblastBackendTest, EstimatedPartition) {
  HostTensor w = RandomF32({512, 512}, 980);
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", {DType::kFloat32, {512, 512}});
    g->AddOutput(g->AddNode(ir::OpKind::kMatMul,
                            {x, g->AddConstant("w", std::make_shared<HostTensor>(w))}, {}, "mm")
                     ->outputs[0]);
    return g;
  };
  CompileOptions opts;
  opts.backends = {"clblast", "native"};
  CompiledModel m = CompileGraph(build(), SharedContext(), opts);
  EXPECT_EQ(CountCalls(m.executable->plan()), 0);
  const backends::Backend* clblast = backends::FindBackend("clblast");
  const backends::Backend* native = backends::FindBackend("native");
  ASSERT_TRUE(clblast && native);
  auto g = build();
  const ir::Node& mm = *g->nodes().front();
  const cl::DeviceInfo& cpu = SharedContext()->info();
  EXPECT_LT(native->Estimate(mm, cpu), clblast->Estimate(mm, cpu));
  // Both estimates grow with the work and include a launch.
  EXPECT_GT(native->Estimate(mm, cpu), 5e-6);
}

// Support is answered with a reason, never an exception: CLBlast refuses a Relu in its words,
// and a partition that allows only CLBlast fails with that reason and the node.
TEST(ClblastBackendTest, RefusalsCarryTheirReason) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", {DType::kFloat32, {4, 8}});
  g->AddOutput(g->AddNode(ir::OpKind::kRelu, {x}, {}, "r")->outputs[0]);
  const ir::Node& relu = *g->nodes().front();
  const cl::DeviceInfo& device = SharedContext()->info();
  backends::Support no = backends::FindBackend("clblast")->Supports(relu, device);
  EXPECT_FALSE(no.ok);
  ASSERT_TRUE(no.refusal.has_value());
  EXPECT_EQ(no.refusal->code(), ErrorCode::kUnsupported);
  EXPECT_NE(std::string(no.refusal->what()).find("not this Relu"), std::string::npos);
  backends::Support yes = backends::FindBackend("native")->Supports(relu, device);
  EXPECT_TRUE(yes.ok);
  EXPECT_FALSE(yes.refusal.has_value());
  CompileOptions opts;
  opts.backends = {"clblast"};
  try {
    CompileGraph(std::move(g), SharedContext(), opts);
    ADD_FAILURE() << "compiled a Relu on CLBlast alone";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("node 'r' (Relu)"), std::string::npos) << e.what();
  }
}

// A CLBlast error status fails the run with the routine, the status and its meaning, and the
// step and node it belongs to. (A plan whose call claims more rows than its buffers hold.)
TEST(ClblastBackendTest, ErrorStatusNamesTheStep) {
  TEXEL_SKIP_WITHOUT_CLBLAST();
  HostTensor x = RandomF32({8, 16}, 990), w = RandomF32({16, 4}, 991);
  auto build = [&] {
    auto g = std::make_unique<ir::Graph>();
    g->AddOutput(g->AddNode(ir::OpKind::kMatMul,
                            {g->AddInput("x", {DType::kFloat32, x.shape}),
                             g->AddConstant("w", std::make_shared<HostTensor>(w))},
                            {}, "classifier")
                     ->outputs[0]);
    return g;
  };
  // ToArtifact: the plan with its constants (an Executable's own plan() has their shapes only).
  runtime::Plan plan = CompileWith(build, {"clblast", "native"}).executable->ToArtifact(false).plan;
  ASSERT_EQ(plan.steps.size(), 1u);
  ASSERT_EQ(plan.steps[0].call, "clblast.sgemm");
  plan.steps[0].call_args[1] *= 1000;  // m
  static cl::ProgramCache cache = cl::ProgramCache::Default();
  runtime::Executable bad(SharedContext(), plan, &cache);
  try {
    runtime::Session(bad).Run({{"x", x}});
    ADD_FAILURE() << "the CLBlast error was not reported";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("CLBlast SgemmStridedBatched failed with status -10"), std::string::npos)
        << what;
    EXPECT_NE(what.find("buffer is too small"), std::string::npos) << what;
    EXPECT_NE(what.find("step 0 (MatMul 'classifier')"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace texel
