// The tuner's comparison of a candidate's output with the heuristic kernel's (api/trial_builds.h):
// reordered sums pass, anything else names why, including NaNs and infinities in other places
// (an infinity against a finite value once made the error NaN, which passed).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/trial_builds.h"
#include "backends/native/native_backend.h"
#include "core/random_tensor.h"
#include "kernel_test_util.h"
#include "runtime/cl/fault_injection.h"

namespace texel {
namespace {

TEST(TrialBuildsTest, DiffersNamesWhatIsWrong) {
  HostTensor ref = testing::RandomF32({3, 50}, 41);
  HostTensor same = ref, noisy = ref, wrong = ref, nan = ref, inf = ref, both_inf = ref;
  for (int64_t i = 0; i < noisy.size(); ++i) noisy.data<float>()[i] *= 1.0f + 1e-6f;
  wrong.data<float>()[7] += 1.0f;
  nan.data<float>()[9] = std::numeric_limits<float>::quiet_NaN();
  inf.data<float>()[11] = std::numeric_limits<float>::infinity();
  HostTensor ref_inf = ref;
  ref_inf.data<float>()[11] = std::numeric_limits<float>::infinity();
  both_inf.data<float>()[11] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(tuning::Differs(ref, same), "");
  EXPECT_EQ(tuning::Differs(ref, noisy), "") << "reordered sums";
  EXPECT_NE(tuning::Differs(ref, wrong).find("relative L2"), std::string::npos);
  EXPECT_NE(tuning::Differs(ref, nan).find("NaN at element 9"), std::string::npos);
  EXPECT_NE(tuning::Differs(ref, inf).find("infinity at element 11"), std::string::npos);
  EXPECT_NE(tuning::Differs(ref_inf, ref).find("infinity at element 11"), std::string::npos);
  EXPECT_EQ(tuning::Differs(ref_inf, both_inf), "") << "the same infinity in the same place";
  EXPECT_NE(tuning::Differs(ref, testing::RandomF32({150}, 41)).find("shape"), std::string::npos);
  // f16 outputs compare as halves, not as 16-bit integers.
  HostTensor h = testing::ToF16(ref), h_wrong = testing::ToF16(wrong);
  EXPECT_EQ(tuning::Differs(h, h), "");
  EXPECT_NE(tuning::Differs(h, h_wrong).find("relative L2"), std::string::npos);
}

// The trials' inputs: floats in [-1, 1), integers 0-9, booleans both, all a function of the seed,
// and never constant (a candidate checked on zeros could be wrong everywhere else).
TEST(TrialBuildsTest, TrialInputsVaryInEveryType) {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kInt32, DType::kBool}) {
    HostTensor a = UniformTensor(dt, {4, 100}, 7), b = UniformTensor(dt, {4, 100}, 7);
    HostTensor c = UniformTensor(dt, {4, 100}, 8);
    std::set<double> values;
    bool same = true, other = false;
    for (int64_t i = 0; i < a.size(); ++i) {
      double v = a.GetDouble(i);
      values.insert(v);
      same &= v == b.GetDouble(i);
      other |= v != c.GetDouble(i);
      if (IsFloat(dt)) {
        EXPECT_TRUE(v >= -1.0 && v < 1.0) << v;
      } else {
        EXPECT_TRUE(v >= 0 && v <= (dt == DType::kBool ? 1 : 9)) << v;
      }
    }
    EXPECT_TRUE(same) << DTypeName(dt) << ": the same seed, the same values";
    EXPECT_TRUE(other) << DTypeName(dt) << ": another seed, other values";
    EXPECT_GE(values.size(), dt == DType::kBool ? 2u : IsFloat(dt) ? 300u : 10u) << DTypeName(dt);
    // Element i depends on (seed, i) alone: a large tensor, filled by several threads, starts
    // with the small one.
    HostTensor large = UniformTensor(dt, {3 << 20}, 7);
    bool prefix = true;
    for (int64_t i = 0; i < a.size(); ++i) prefix &= large.GetDouble(i) == a.GetDouble(i);
    EXPECT_TRUE(prefix) << DTypeName(dt);
    double lo = 1, hi = -1;
    for (int64_t i = 0; i < large.size(); ++i)
      lo = std::min(lo, large.GetDouble(i)), hi = std::max(hi, large.GetDouble(i));
    if (IsFloat(dt)) {
      EXPECT_TRUE(lo >= -1.0 && hi < 1.0) << DTypeName(dt) << " " << lo << " " << hi;
    }
  }
}

// An [8, 32] x [32, 16] product's node in a graph of its own, and its tunable space here.
struct OneProduct {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", {DType::kFloat32, {8, 32}});
  ir::Value* w = g.AddConstant("w", std::make_shared<HostTensor>(testing::RandomF32({32, 16}, 5)));
  ir::Node* mm = g.AddNode(ir::OpKind::kMatMul, {x, w}, {}, "mm");
  std::optional<codegen::Tunable> t =
      codegen::TunableOf(*mm, backends::NativeBackend::TargetOf(testing::SharedContext()->info()));
};

// A build that fails is built again in halves, so that a fault costs only the trials it touches
// (here none: the fault is injected once) in 2 more builds where one per trial took 4; once the
// tune gives up (budget spent, interrupted) no half is built: its trials are lost together, each
// with the build's reason and a note.
TEST(TrialBuildsTest, FailedBuildRetriedInHalvesUntilGivenUp) {
  auto ctx = testing::SharedContext();
  OneProduct p;
  const std::optional<codegen::Tunable>& t = p.t;
  ASSERT_TRUE(t.has_value());
  ASSERT_GE(t->candidates.size(), 2u);
  std::vector<tuning::Trial> trials;
  for (size_t i = 0; i < 4; ++i)
    trials.push_back({p.mm, &*t, t->candidates[i % t->candidates.size()]});
  cl::ProgramCache cache("");

  tuning::BuildPhases phases;
  std::vector<std::string> why;
  cl::ArmFault(cl::FaultPoint::kBuild, 1);
  // 5 us of launch per kernel: a constant part of each time, not scaled with a later half's.
  auto got = tuning::RunEach(ctx, cache, trials, 3, 7, 5.0, {}, phases, &why, {});
  EXPECT_TRUE(cl::FaultInjected());
  cl::DisarmFaults();
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(got[i].has_value()) << i << ": " << why[i];
    EXPECT_GT(got[i]->launches_us, 0) << i;
    EXPECT_EQ(std::fmod(got[i]->launches_us, 5.0), 0.0) << i << ": 5 us per kernel";
    EXPECT_GT(got[i]->us, got[i]->launches_us) << i;
    EXPECT_EQ(got[i]->out.shape, (Shape{8, 16})) << i;
    EXPECT_EQ(why[i], "") << i;
  }
  EXPECT_EQ(phases.builds, 3) << "the failed build and its two halves";

  phases = {};
  cl::ArmFault(cl::FaultPoint::kBuild, 1);
  got = tuning::RunEach(ctx, cache, trials, 3, 7, 0.0, {}, phases, &why, [] { return true; });
  cl::DisarmFaults();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(phases.builds, 1);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(got[i].has_value()) << i;
    EXPECT_NE(why[i].find("no time was left to build its points apart"), std::string::npos)
        << why[i];
  }
}

// A trial that always fails (its node's kernel cannot be generated) is found by halving at any
// depth, and the results and reasons stay with their trials: five trials, the third bad.
TEST(TrialBuildsTest, HalvingKeepsResultsWithTheirTrials) {
  auto ctx = testing::SharedContext();
  OneProduct p;
  ir::Node* bad =
      p.g.AddNode(ir::OpKind::kMatMul, {p.x, p.w}, {{"compute_mode", int64_t{99}}}, "bad");
  ASSERT_TRUE(p.t.has_value());
  std::vector<tuning::Trial> trials;
  for (size_t i = 0; i < 5; ++i) trials.push_back({i == 2 ? bad : p.mm, &*p.t, p.t->candidates[0]});
  cl::ProgramCache cache("");
  tuning::BuildPhases phases;
  std::vector<std::string> why;
  auto got = tuning::RunEach(ctx, cache, trials, 3, 7, 0.0, {}, phases, &why, {});
  ASSERT_EQ(got.size(), 5u);
  ASSERT_EQ(why.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(got[i].has_value(), i != 2) << i << ": " << why[i];
    EXPECT_EQ(why[i].empty(), i != 2) << i << ": " << why[i];
  }
  // Five builds, each half with trial 0, the reference: the five trials (failed), 0-1-2
  // (failed), 0-1, 0-2 (failed: 2 lost, 0 measured already), 0-3-4.
  EXPECT_EQ(phases.builds, 5);

  // A pair of the reference and a failing candidate: the reference measured in a build of its
  // own, the candidate lost without one.
  phases = {};
  got = tuning::RunEach(ctx, cache, {trials[0], trials[2]}, 3, 7, 0.0, {}, phases, &why, {});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].has_value()) << why[0];
  EXPECT_FALSE(got[1].has_value());
  EXPECT_FALSE(why[1].empty());
  EXPECT_EQ(phases.builds, 2);

  // Unrelated trials (every kernel's heuristic point) have no reference: plain halves, five
  // builds (all, 0-1, 2-4 failed, 2 failed, 3-4), only the bad one lost.
  phases = {};
  got = tuning::RunEach(ctx, cache, trials, 3, 7, 0.0, {}, phases, &why, {}, std::nullopt, false);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(got[i].has_value(), i != 2) << i << ": " << why[i];
  EXPECT_EQ(phases.builds, 5);

  // A reference that fails alone: nothing more is built (all, bad-1, bad alone), every trial
  // lost with a reason.
  std::vector<tuning::Trial> bad_first = {trials[2], trials[0], trials[1], trials[3]};
  phases = {};
  got = tuning::RunEach(ctx, cache, bad_first, 3, 7, 0.0, {}, phases, &why, {});
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(got[i].has_value()) << i;
    EXPECT_FALSE(why[i].empty()) << i;
  }
  EXPECT_NE(why[3].find("its reference kernel failed alone"), std::string::npos) << why[3];
  EXPECT_EQ(phases.builds, 3);
}

}  // namespace
}  // namespace texel

namespace texel {
namespace {

// A wave's programs compiled on threads, each with a context of its own: every program that
// builds gets its binary (keyed by its source, loadable here), one that does not gets none and
// harms no other, and a tune that stops before the wave compiles nothing.
TEST(TrialBuildsTest, CompileInParallelGivesEachProgramThatBuildsItsBinary) {
  auto ctx = testing::SharedContext();
  std::vector<std::shared_ptr<cl::Context>> contexts = {ctx,
                                                        std::make_shared<cl::Context>(ctx->info())};
  std::vector<runtime::Plan> plans(5);
  for (size_t i = 0; i < plans.size(); ++i)
    plans[i].source =
        "__kernel void add(__global float* x) { x[get_global_id(0)] += " + std::to_string(i + 1) +
        ".0f; }\n";
  plans[2].source = "__kernel void add(__global float* x) { x[0] = undeclared; }\n";
  std::vector<const runtime::Plan*> ptrs;
  for (const runtime::Plan& p : plans) ptrs.push_back(&p);
  cl::ProgramCache cache("");

  tuning::Prebuilt got = tuning::CompileInParallel(contexts, cache, ptrs);
  EXPECT_EQ(got.size(), 4u);
  EXPECT_EQ(got.count(plans[2].source), 0u) << "the program that does not build";
  for (size_t i : {0, 1, 3, 4}) {
    ASSERT_EQ(got.count(plans[i].source), 1u) << i;
    cl::Program program(*ctx, plans[i].source, "", nullptr, &got[plans[i].source]);
    EXPECT_TRUE(program.from_binary()) << i;
    HostTensor x = testing::RandomF32({64}, 11 + i);
    cl::Buffer buf(*ctx, 64 * sizeof(float));
    buf.Write(*ctx, x.data<float>(), buf.bytes());
    cl::Kernel kernel(program.get(), "add");
    kernel.SetArg(0, buf);
    cl::Launch(*ctx, kernel, {64}, {});
    HostTensor y(DType::kFloat32, {64});
    buf.Read(*ctx, y.data<float>(), buf.bytes());
    for (int64_t e = 0; e < 64; ++e)
      EXPECT_FLOAT_EQ(y.data<float>()[e], x.data<float>()[e] + static_cast<float>(i + 1)) << i;
  }

  EXPECT_TRUE(tuning::CompileInParallel(contexts, cache, ptrs, [] { return true; }).empty());
}

}  // namespace
}  // namespace texel
