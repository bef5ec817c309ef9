// The native generator's support and cost queries (codegen/opencl/support.h): they answer from
// the node without generating, agree with what generation does (the same refusal, word for
// word), and a compile generates each kernel group once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "backends/backend.h"
#include "codegen/opencl/support.h"
#include "core/error.h"
#include "kernel_test_util.h"

namespace texel {
namespace {

using ir::OpKind;
using ir::TensorType;
using namespace testing;
using Ints = std::vector<int64_t>;

// The kUnsupported message of f, or nullopt when it returns; any other error fails the test.
std::optional<std::string> Refusal(const std::function<void()>& f) {
  try {
    f();
    return std::nullopt;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    return std::string(e.what());
  }
}

struct Case {
  const char* what;
  bool supported;
  OpKind op;
  std::vector<TensorType> inputs;
  ir::Attrs attrs;
};

ir::Node* One(ir::Graph& g, OpKind op, std::vector<TensorType> inputs, ir::Attrs attrs = {}) {
  std::vector<ir::Value*> in;
  for (size_t i = 0; i < inputs.size(); ++i)
    in.push_back(g.AddInput(fmt::format("x{}", i), inputs[i]));
  ir::Node* n = g.AddNode(op, in, std::move(attrs), "n");
  g.AddOutput(n->outputs[0]);
  return n;
}

ir::Attrs Pool2x2() {
  return {{"kernel", Ints{2, 2}},    {"strides", Ints{2, 2}},   {"pads", Ints{0, 0, 0, 0}},
          {"dilations", Ints{1, 1}}, {"ceil_mode", int64_t{0}}, {"count_include_pad", int64_t{0}}};
}

ir::Attrs GridSampleAttrs(const char* mode, const char* pad) {
  return {{"mode", std::string(mode)},
          {"padding_mode", std::string(pad)},
          {"align_corners", int64_t{0}}};
}

// A node for each kind of refusal the generators make (element type, f64 without
// cl_khr_fp64, a mode, a reduction), and supported neighbours.
std::vector<Case> Cases() {
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16, i32 = DType::kInt32;
  const DType i64 = DType::kInt64, u8 = DType::kUInt8, i8 = DType::kInt8;
  const ir::Attrs axis1 = {{"axes", Ints{1}}, {"keepdims", int64_t{0}}};
  const std::vector<TensorType> grid32 = {{f32, {1, 2, 4, 4}}, {f32, {1, 3, 3, 2}}};
  const std::vector<TensorType> scatter16 = {{f16, {4, 8}}, {i64, {4, 2}}, {f16, {4, 2}}};
  auto scatter = [](const char* reduction) -> ir::Attrs {
    return {{"axis", int64_t{1}}, {"reduction", std::string(reduction)}};
  };
  return {
      {"Relu f32", true, OpKind::kRelu, {{f32, {4, 8}}}, {}},
      {"Sigmoid i32", false, OpKind::kSigmoid, {{i32, {4, 8}}}, {}},
      {"Pow i32 (a loop)", true, OpKind::kPow, {{i32, {8}}, {i32, {8}}}, {}},
      {"Relu f64 without cl_khr_fp64", false, OpKind::kRelu, {{DType::kFloat64, {4}}}, {}},
      {"ReduceSum i32", true, OpKind::kReduceSum, {{i32, {4, 8}}}, axis1},
      {"ReduceMean i32", false, OpKind::kReduceMean, {{i32, {4, 8}}}, axis1},
      {"ReduceSum u8", false, OpKind::kReduceSum, {{u8, {4, 8}}}, axis1},
      {"MaxPool i8", true, OpKind::kMaxPool, {{i8, {1, 2, 6, 6}}}, Pool2x2()},
      {"AveragePool i32", false, OpKind::kAveragePool, {{i32, {1, 2, 6, 6}}}, Pool2x2()},
      {"MatMul f32", true, OpKind::kMatMul, {{f32, {4, 8}}, {f32, {8, 3}}}, {}},
      {"MatMul i32", false, OpKind::kMatMul, {{i32, {4, 8}}, {i32, {8, 3}}}, {}},
      {"Softmax i32", false, OpKind::kSoftmax, {{i32, {4, 8}}}, {{"axis", int64_t{1}}}},
      {"GridSample f16",
       false,
       OpKind::kGridSample,
       {{f16, {1, 2, 4, 4}}, {f16, {1, 3, 3, 2}}},
       GridSampleAttrs("linear", "zeros")},
      {"GridSample cubic, border", true, OpKind::kGridSample, grid32,
       GridSampleAttrs("cubic", "border")},
      {"GridSample padding_mode wrap", false, OpKind::kGridSample, grid32,
       GridSampleAttrs("linear", "wrap")},
      {"ScatterElements f16 add", false, OpKind::kScatterElements, scatter16, scatter("add")},
      {"ScatterElements f16 none", true, OpKind::kScatterElements, scatter16, scatter("none")},
  };
}

// CheckNode refuses exactly the nodes whose generation refuses, with the same words.
TEST(SupportTest, ChecksAgreeWithGeneration) {
  codegen::Target target;  // no cl_khr_fp64
  for (const Case& c : Cases()) {
    ir::Graph g;
    ir::Node* n = One(g, c.op, c.inputs, c.attrs);
    std::optional<std::string> check = Refusal([&] { codegen::CheckNode(*n, target); });
    std::optional<std::string> gen = Refusal([&] { codegen::GenerateKernel(*n, "k", target); });
    EXPECT_EQ(check.has_value(), !c.supported) << c.what << ": " << check.value_or("supported");
    EXPECT_EQ(check, gen) << c.what;
  }
}

// Partition's questions generate nothing: support from the checks, cost from declared traits
// (a gathered B costs more than a direct one of the same work).
TEST(SupportTest, SupportAndEstimateGenerateNothing) {
  ir::Graph g;
  ir::Node* mm =
      One(g, OpKind::kMatMul, {{DType::kFloat32, {64, 128}}, {DType::kFloat32, {128, 32}}});
  ir::Value* w = g.AddInput("w", {DType::kFloat32, {32, 128}});
  ir::Node* mt = g.AddNode(OpKind::kMatMul, {mm->inputs[0], w}, {{"trans_b", int64_t{1}}}, "mt");
  g.AddOutput(mt->outputs[0]);
  const backends::Backend* native = backends::FindBackend("native");
  ASSERT_NE(native, nullptr);
  const cl::DeviceInfo& device = SharedContext()->info();
  uint64_t before = codegen::GeneratedGroups();
  EXPECT_TRUE(native->Supports(*mm, device).ok);
  double direct = native->Estimate(*mm, device), gathered = native->Estimate(*mt, device);
  EXPECT_EQ(codegen::GeneratedGroups(), before);
  codegen::KernelTraits t = codegen::TraitsOf(*mm, codegen::Target{});
  EXPECT_DOUBLE_EQ(t.flops, 2.0 * 64 * 128 * 32);
  EXPECT_GT(gathered, direct);
  // The traits' flops are the generated kernels' own.
  double generated = 0;
  for (const auto& k : codegen::GenerateKernel(*mm, "k", codegen::Target{})) generated += k.flops;
  EXPECT_DOUBLE_EQ(t.flops, generated);
}

// A compile generates each kernel group once: three groups (a product, a softmax, a reduction),
// three generations.
TEST(SupportTest, CompileGeneratesEachGroupOnce) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", {DType::kFloat32, {16, 32}});
  ir::Value* w = g->AddConstant("w", std::make_shared<HostTensor>(RandomF32({32, 24}, 7)));
  ir::Node* mm = g->AddNode(OpKind::kMatMul, {x, w}, {}, "mm");
  ir::Node* sm = g->AddNode(OpKind::kSoftmax, {mm->outputs[0]}, {{"axis", int64_t{1}}}, "sm");
  ir::Node* rs = g->AddNode(OpKind::kReduceSum, {sm->outputs[0]},
                            {{"axes", Ints{0}}, {"keepdims", int64_t{0}}}, "rs");
  g->AddOutput(rs->outputs[0]);
  uint64_t before = codegen::GeneratedGroups();
  CompiledModel m = CompileGraph(std::move(g), SharedContext(), CompileOptions{});
  EXPECT_EQ(codegen::GeneratedGroups() - before, 3u);
}

}  // namespace
}  // namespace texel
