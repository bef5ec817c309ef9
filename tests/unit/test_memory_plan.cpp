// Tests of the memory planner (runtime/memory_plan.h) on hand-made plans: buffers whose
// lifetimes overlap never share a byte, offsets are aligned, the arena is at least the liveness
// lower bound and close to it; and end to end, a model's outputs are the same with the arena as
// with one buffer per value.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "api/compiler.h"
#include "core/error.h"
#include "ir/graph.h"
#include "kernel_test_util.h"
#include "runtime/artifact.h"
#include "runtime/memory_plan.h"
#include "runtime/plan_check.h"
#include "runtime/session.h"

namespace texel::runtime {
namespace {

// A plan with buffers of the given sizes and steps with the given buffer arguments; inputs and
// outputs name buffers.
Plan MakePlan(const std::vector<int64_t>& sizes, const std::vector<std::vector<int>>& steps,
              const std::vector<int>& inputs, const std::vector<int>& outputs) {
  Plan p;
  for (int64_t s : sizes) p.buffers.push_back({s, nullptr});
  for (const auto& args : steps) {
    KernelStep k;
    k.buffers = args;
    p.steps.push_back(k);
  }
  for (int b : inputs) p.inputs.push_back({"in", DType::kFloat32, {}, b});
  for (int b : outputs) p.outputs.push_back({"out", DType::kFloat32, {}, b});
  return p;
}

// Checks what every memory plan must satisfy and returns the number of planned buffers.
int ExpectValid(const Plan& p, const MemoryPlan& m) {
  const size_t n = p.buffers.size();
  EXPECT_EQ(m.offsets.size(), n);
  std::vector<int> first(n, -1), last(n, -1);
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (int b : p.steps[s].buffers) {
      if (first[b] < 0) first[b] = static_cast<int>(s);
      last[b] = static_cast<int>(s);
    }
  // A whole buffer lives while its parts do; a part shares its whole's bytes by design.
  for (size_t i = 0; i < n; ++i) {
    int whole = p.buffers[i].alias_of;
    if (whole < 0 || first[i] < 0) continue;
    EXPECT_EQ(m.offsets[i], m.offsets[whole] + p.buffers[i].alias_offset) << "part " << i;
    first[whole] = first[whole] < 0 ? first[i] : std::min(first[whole], first[i]);
    last[whole] = std::max(last[whole], last[i]);
  }
  auto related = [&](size_t i, size_t j) {
    return p.buffers[i].alias_of == static_cast<int>(j) ||
           p.buffers[j].alias_of == static_cast<int>(i);
  };
  int planned = 0;
  for (size_t i = 0; i < n; ++i) {
    if (m.offsets[i] < 0) continue;
    ++planned;
    EXPECT_EQ(m.offsets[i] % m.alignment, 0) << "buffer " << i;
    EXPECT_LE(m.offsets[i] + p.buffers[i].bytes, m.arena_bytes) << "buffer " << i;
    for (size_t j = i + 1; j < n; ++j) {
      if (m.offsets[j] < 0 || last[i] < first[j] || last[j] < first[i] || related(i, j)) continue;
      bool disjoint = m.offsets[i] + p.buffers[i].bytes <= m.offsets[j] ||
                      m.offsets[j] + p.buffers[j].bytes <= m.offsets[i];
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j << " are live together at "
                            << m.offsets[i] << " and " << m.offsets[j];
    }
  }
  EXPECT_GE(m.arena_bytes, m.lower_bound);
  EXPECT_LE(m.arena_bytes, m.unshared_bytes + planned * m.alignment);
  return planned;
}

TEST(MemoryPlanTest, ChainReusesMemoryAndMeetsTheBound) {
  // in -> b1 -> b2 -> b3 -> b4 -> b5 -> out; two neighbours are live at a time.
  Plan p = MakePlan({100, 4000, 4000, 2000, 2000, 1000, 10},
                    {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}}, {0}, {6});
  for (int64_t align : {1, 128}) {
    MemoryPlan m = PlanMemory(p, align);
    EXPECT_EQ(ExpectValid(p, m), 5);
    EXPECT_EQ(m.offsets[0], -1) << "a graph input is not in the arena";
    EXPECT_EQ(m.offsets[6], -1) << "a graph output is not in the arena";
    EXPECT_EQ(m.lower_bound, 8000);
    EXPECT_EQ(m.unshared_bytes, 13000);
    EXPECT_EQ(m.io_bytes, 110);
    EXPECT_LE(m.arena_bytes, m.lower_bound * 11 / 10) << "alignment " << align;
    if (align == 1) {
      EXPECT_EQ(m.arena_bytes, m.lower_bound);
    }
  }
}

TEST(MemoryPlanTest, DiamondMeetsTheBound) {
  // a = f(in); b = g(a); c = h(a); d = b + c; out = k(d).
  Plan p = MakePlan({64, 3000, 2000, 2000, 3000, 64}, {{0, 1}, {1, 2}, {1, 3}, {2, 3, 4}, {4, 5}},
                    {0}, {5});
  for (int64_t align : {1, 128, 512}) {
    MemoryPlan m = PlanMemory(p, align);
    EXPECT_EQ(ExpectValid(p, m), 4);
    EXPECT_EQ(m.lower_bound, 7000);
    EXPECT_LE(m.arena_bytes, m.lower_bound * 11 / 10) << "alignment " << align;
  }
}

// Residual blocks as in ConvNeXt: x -> d -> A -> B -> C -> m, then x' = m + x, where A, B, C
// are four times the others. x is live across its block and meets the next block's x' at the
// add; at the bound (9 units: x, A, B) consecutive residuals must sit on either side of their
// blocks' large buffers, which placing by size alone misses (10 units).
TEST(MemoryPlanTest, ResidualBlocksMeetTheBound) {
  const int64_t u = 1000;
  std::vector<int64_t> sizes{u, u};  // in, x1
  std::vector<std::vector<int>> steps{{0, 1}};
  int x = 1;
  for (int k = 0; k < 3; ++k) {
    int d = static_cast<int>(sizes.size()), a = d + 1, b = d + 2, c = d + 3, m = d + 4,
        next = d + 5;
    for (int64_t s : {u, 4 * u, 4 * u, 4 * u, u, u}) sizes.push_back(s);
    for (std::vector<int> args :
         std::vector<std::vector<int>>{{x, d}, {d, a}, {a, b}, {b, c}, {c, m}, {m, x, next}})
      steps.push_back(args);
    x = next;
  }
  sizes.push_back(u);
  steps.push_back({x, static_cast<int>(sizes.size()) - 1});
  Plan p = MakePlan(sizes, steps, {0}, {static_cast<int>(sizes.size()) - 1});
  for (int64_t align : {1, 8}) {
    MemoryPlan m = PlanMemory(p, align);
    ExpectValid(p, m);
    EXPECT_EQ(m.lower_bound, 9 * u);
    EXPECT_EQ(m.arena_bytes, 9 * u) << "alignment " << align;
  }
}

TEST(MemoryPlanTest, LeavesOutConstantsEmptyAndUnusedBuffers) {
  Plan p = MakePlan({16, 32, 0, 48, 64, 8}, {{0, 1, 2, 4}, {4, 5}}, {0}, {5});
  p.buffers[1].constant = std::make_shared<HostTensor>(DType::kFloat32, Shape{8});
  MemoryPlan m = PlanMemory(p, 64);
  ExpectValid(p, m);
  EXPECT_EQ(m.offsets[1], -1) << "constant";
  EXPECT_EQ(m.offsets[2], -1) << "empty";
  EXPECT_EQ(m.offsets[3], -1) << "used by no step";
  EXPECT_EQ(m.offsets[4], 0);
  EXPECT_EQ(m.constant_bytes, 32);
  EXPECT_EQ(m.arena_bytes, 64);
}

TEST(MemoryPlanTest, RowCountOfAnOutputIsNotInTheArena) {
  Plan p = MakePlan({16, 64, 8, 8}, {{0, 1}, {1, 2, 3}}, {0}, {2});
  p.outputs[0].rows_buffer = 3;
  MemoryPlan m = PlanMemory(p, 16);
  ExpectValid(p, m);
  EXPECT_EQ(m.offsets[3], -1);
  EXPECT_EQ(m.offsets[1], 0);
}

TEST(MemoryPlanTest, RandomPlansAreValid) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    // Buffer i is written by step i and read by up to three later steps.
    int n = 2 + static_cast<int>(rng() % 40);
    std::vector<int64_t> sizes;
    std::vector<std::vector<int>> steps(n);
    for (int i = 0; i < n; ++i) {
      sizes.push_back(1 + static_cast<int64_t>(rng() % 5000));
      steps[i].push_back(i);
      for (int r = 0; r < 3 && i + 1 < n; ++r) steps[i + 1 + rng() % (n - i - 1)].push_back(i);
    }
    Plan p = MakePlan(sizes, steps, {0}, {n - 1});
    for (int64_t align : {1, 4, 256}) {
      MemoryPlan m = PlanMemory(p, align);
      EXPECT_EQ(ExpectValid(p, m), n - 2) << "trial " << trial;
    }
  }
}

// The same graph's outputs with and without the arena, bit for bit: a chain of poolings (which
// no fusion merges), so that the arena must reuse memory, with a residual Add.
// A 3x3 pooling window, stride 1, padded by 1 (average: not counting the pads).
ir::Attrs Pool3x3(bool average = false) {
  ir::Attrs a{{"kernel", std::vector<int64_t>{3, 3}},
              {"strides", std::vector<int64_t>{1, 1}},
              {"pads", std::vector<int64_t>{1, 1, 1, 1}},
              {"dilations", std::vector<int64_t>{1, 1}},
              {"ceil_mode", int64_t{0}}};
  if (average) a.Set("count_include_pad", int64_t{0});
  return a;
}

// Buffers that are parts of another sit inside it, and the whole one lives while any part does.
TEST(MemoryPlanTest, PartsLieInsideTheirWhole) {
  // 0 and 1 are parts of 2 (written by steps 0 and 1, read through 2 by step 3); 3 lives
  // meanwhile.
  Plan p = MakePlan({256, 128, 384, 512, 64}, {{0, 3}, {1, 3}, {3}, {2, 4}}, {}, {4});
  p.buffers[0].alias_of = 2;
  p.buffers[1].alias_of = 2;
  p.buffers[1].alias_offset = 256;
  MemoryPlan m = PlanMemory(p, 128);
  EXPECT_EQ(m.offsets[0], m.offsets[2]);
  EXPECT_EQ(m.offsets[1], m.offsets[2] + 256);
  bool apart = m.offsets[3] + 512 <= m.offsets[2] || m.offsets[2] + 384 <= m.offsets[3];
  EXPECT_TRUE(apart) << "buffer 3 overlaps the whole while its parts are written";
  EXPECT_EQ(m.lower_bound, 384 + 512);
  // A part at an offset the device's sub-buffers cannot start at.
  p.buffers[1].alias_offset = 192;
  try {
    PlanMemory(p, 128);
    ADD_FAILURE() << "a misaligned part was placed";
  } catch (const texel::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("192 bytes into buffer 2"), std::string::npos) << e.what();
  }
}

// A Concat whose inputs only it reads is computed in place: no kernel, its inputs written into
// its output's memory; outputs equal a Concat kernel's (an input that is also a graph output
// keeps the kernel), with the arena and with a buffer per value.
TEST(MemoryPlanTest, ConcatInPlace) {
  auto build = [](bool keep_kernel) {
    auto g = std::make_unique<ir::Graph>();
    const ir::Attrs pool = Pool3x3(), avg = Pool3x3(true);
    ir::Value* v = g->AddInput("x", {DType::kFloat32, {1, 4, 16, 16}});
    ir::Value* a = g->AddNode(ir::OpKind::kMaxPool, {v}, pool, "a")->outputs[0];
    ir::Value* b = g->AddNode(ir::OpKind::kAveragePool, {v}, avg, "b")->outputs[0];
    ir::Value* c = g->AddNode(ir::OpKind::kNeg, {v}, {}, "c")->outputs[0];
    ir::Value* cat =
        g->AddNode(ir::OpKind::kConcat, {a, b, c}, {{"axis", int64_t{1}}}, "cat")->outputs[0];
    g->AddOutput(g->AddNode(ir::OpKind::kMaxPool, {cat}, pool, "after")->outputs[0]);
    if (keep_kernel) g->AddOutput(b);
    return g;
  };
  std::map<std::string, HostTensor> inputs{{"x", testing::RandomF32({1, 4, 16, 16}, 12)}};
  std::vector<std::vector<HostTensor>> results;
  for (bool keep_kernel : {false, true}) {
    CompiledModel m = CompileGraph(build(keep_kernel), testing::SharedContext(), CompileOptions{});
    const Plan& plan = m.executable->plan();
    int concats = 0, parts = 0;
    for (const KernelStep& s : plan.steps) concats += s.op == "Concat";
    for (const BufferDesc& b : plan.buffers) parts += b.alias_of >= 0;
    bool in_place = SubBuffersUsable(testing::SharedContext()->info()) && !keep_kernel;
    EXPECT_EQ(concats, in_place ? 0 : 1);
    EXPECT_EQ(parts, in_place ? 3 : 0);
    ExpectValid(plan, plan.memory);
    results.push_back(Session(*m.executable).Run(inputs));
    // An artifact keeps the parts, in format version 2 only where there are some.
    std::string bytes = WriteArtifact(m.executable->ToArtifact(false));
    Artifact read = ReadArtifact(bytes, "concat.texel");
    EXPECT_EQ(read.format_version, in_place ? 2u : 1u);
    cl::DeviceInfo nvidia = testing::SharedContext()->info();
    nvidia.vendor = "NVIDIA Corporation";
    std::vector<std::string> missing = MissingFeatures(read.plan, nvidia);
    EXPECT_EQ(missing.size(), in_place ? 1u : 0u);
    if (in_place) {
      EXPECT_NE(missing[0].find("3 values in place"), std::string::npos) << missing[0];
    }
    for (size_t i = 0; i < plan.buffers.size(); ++i) {
      EXPECT_EQ(read.plan.buffers[i].alias_of, plan.buffers[i].alias_of) << "buffer " << i;
      EXPECT_EQ(read.plan.buffers[i].alias_offset, plan.buffers[i].alias_offset) << "buffer " << i;
    }
    Plan unplanned = plan;
    unplanned.memory = MemoryPlan{};
    Executable separate(testing::SharedContext(), unplanned, nullptr);
    results.push_back(Session(separate).Run(inputs));
  }
  for (const auto& r : results) {
    ASSERT_EQ(r[0].bytes.size(), results[0][0].bytes.size());
    EXPECT_EQ(std::memcmp(r[0].bytes.data(), results[0][0].bytes.data(), r[0].bytes.size()), 0);
  }
}

TEST(MemoryPlanTest, ArenaLeavesModelOutputsUnchanged) {
  auto g = std::make_unique<ir::Graph>();
  const ir::Attrs pool = Pool3x3(), avg = Pool3x3(true);
  ir::Value* v = g->AddInput("x", {DType::kFloat32, {1, 4, 16, 16}});
  ir::Value* p1 = g->AddNode(ir::OpKind::kMaxPool, {v}, pool, "p1")->outputs[0];
  ir::Value* p2 = g->AddNode(ir::OpKind::kAveragePool, {p1}, avg, "p2")->outputs[0];
  ir::Value* p3 = g->AddNode(ir::OpKind::kMaxPool, {p2}, pool, "p3")->outputs[0];
  ir::Value* p4 = g->AddNode(ir::OpKind::kAveragePool, {p3}, avg, "p4")->outputs[0];
  ir::Value* sum = g->AddNode(ir::OpKind::kAdd, {p4, p2}, {}, "add")->outputs[0];
  g->AddOutput(g->AddNode(ir::OpKind::kMaxPool, {sum}, pool, "p5")->outputs[0]);
  CompiledModel m = CompileGraph(std::move(g), testing::SharedContext(), CompileOptions{});
  const Plan& plan = m.executable->plan();
  ExpectValid(plan, plan.memory);
  EXPECT_LT(plan.memory.arena_bytes, plan.memory.unshared_bytes) << "nothing was shared";

  std::map<std::string, HostTensor> inputs{{"x", testing::RandomF32({1, 4, 16, 16}, 11)}};
  Session with_arena(*m.executable);
  std::vector<HostTensor> got = with_arena.Run(inputs);
  Plan unplanned = plan;
  unplanned.memory = MemoryPlan{};
  Executable separate(testing::SharedContext(), unplanned, nullptr);
  std::vector<HostTensor> want = Session(separate).Run(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape, want[i].shape);
    EXPECT_EQ(std::memcmp(got[i].bytes.data(), want[i].bytes.data(), got[i].bytes.size()), 0);
  }
  // A second run on the same session: the arena's stale contents must not matter.
  std::vector<HostTensor> again = with_arena.Run(inputs);
  EXPECT_EQ(std::memcmp(again[0].bytes.data(), want[0].bytes.data(), want[0].bytes.size()), 0);
}

}  // namespace
}  // namespace texel::runtime
