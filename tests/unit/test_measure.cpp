// Measured partitioning's timer (api/measure.h): equal nodes are timed once per timer, each
// compile has its own timer, and compiles measuring on two threads at once agree with the
// estimated partition's results.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "api/compiler.h"
#include "api/measure.h"
#include "backends/backend.h"
#include "kernel_test_util.h"
#include "runtime/session.h"

namespace texel {
namespace {

using namespace texel::testing;

// A product and its Relu, weights as constants.
std::unique_ptr<ir::Graph> SmallProduct(const HostTensor& w) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", {DType::kFloat32, {6, w.shape[0]}});
  ir::Value* k = g->AddConstant("w", std::make_shared<HostTensor>(w));
  ir::Node* mm = g->AddNode(ir::OpKind::kMatMul, {x, k}, {}, "mm");
  ir::Node* relu = g->AddNode(ir::OpKind::kRelu, {mm->outputs[0]}, {}, "relu");
  g->AddOutput(relu->outputs[0]);
  return g;
}

// Sets TEXEL_CACHE_DIR for a scope and puts back what was there.
class CacheDir {
 public:
  explicit CacheDir(const char* value) {
    if (const char* old = std::getenv("TEXEL_CACHE_DIR")) old_ = old;
    ::setenv("TEXEL_CACHE_DIR", value, 1);
  }
  ~CacheDir() {
    if (old_)
      ::setenv("TEXEL_CACHE_DIR", old_->c_str(), 1);
    else
      ::unsetenv("TEXEL_CACHE_DIR");
  }

 private:
  std::optional<std::string> old_;
};

TEST(NodeTimerTest, EqualNodesTimedOncePerTimer) {
  CacheDir off("off");  // no disk cache: only the timer's memory can repeat a result
  HostTensor w = RandomF32({9, 7}, 2100);
  auto a = SmallProduct(w), b = SmallProduct(w);
  const backends::Backend& native = *backends::FindBackend(backends::kNative);
  NodeTimer timer(SharedContext());
  double first = timer.Seconds(*a->nodes()[0], native);
  EXPECT_GT(first, 0);
  // The same node of another graph prints the same: not timed again (a second timing of a
  // kernel on PoCL is never equal to the last bit).
  EXPECT_EQ(timer.Seconds(*b->nodes()[0], native), first);
  EXPECT_GT(NodeTimer(SharedContext()).Seconds(*a->nodes()[0], native), 0);
}

// A compile given a timer (CompileOptions::timer, as texel partition --measure gives its own)
// measures with it: the product's time is in its memory afterwards, and asking again times
// nothing new.
// The product is measured only where the partition has two backends to choose between.
TEST(NodeTimerTest, CompileMeasuresWithTheCallersTimer) {
  TEXEL_SKIP_WITHOUT_CLBLAST();
  CacheDir off("off");
  HostTensor w = RandomF32({13, 3}, 2120);
  NodeTimer timer(SharedContext());
  CompileOptions measured;
  measured.partition = passes::PartitionPolicy::kMeasure;
  measured.backends = {"clblast", "native"};  // two to choose from: the product is measured
  measured.timer = &timer;
  CompileGraph(SmallProduct(w), SharedContext(), measured);
  size_t timed = timer.timed();
  EXPECT_GE(timed, 1u);
  auto again = SmallProduct(w);
  EXPECT_GT(timer.Seconds(*again->nodes()[0], *backends::FindBackend(backends::kNative)), 0);
  EXPECT_EQ(timer.timed(), timed);
}

TEST(NodeTimerTest, CompilesMeasuringOnTwoThreads) {
  TEXEL_SKIP_WITHOUT_CLBLAST();
  CacheDir off("off");  // both threads time their nodes (and build their programs) at once
  HostTensor w = RandomF32({11, 5}, 2110), x = RandomF32({6, 11}, 2111);
  std::vector<HostTensor> got[2];
  std::thread threads[2];
  int64_t measured_nodes[2] = {0, 0};  // the partition's count: it did time the product
  for (int t = 0; t < 2; ++t)
    threads[t] = std::thread([&, t] {
      CompileOptions measured;
      measured.partition = passes::PartitionPolicy::kMeasure;
      measured.backends = {"clblast", "native"};  // two to choose from: the product is measured
      measured.after_pass = [&, t](const passes::Pass& p, const passes::Stats& s,
                                   const ir::Graph&) {
        if (std::string(p.name) != "partition") return;
        for (const auto& [key, value] : s)
          if (key == "nodes-measured") measured_nodes[t] = value;
      };
      CompiledModel m = CompileGraph(SmallProduct(w), SharedContext(), measured);
      got[t] = runtime::Session(*m.executable).Run({{"x", x}});
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(measured_nodes[0], 1);
  EXPECT_EQ(measured_nodes[1], 1);
  CompiledModel estimated = CompileGraph(SmallProduct(w), SharedContext(), CompileOptions{});
  std::vector<HostTensor> want = runtime::Session(*estimated.executable).Run({{"x", x}});
  for (int t = 0; t < 2; ++t) ExpectClose(got[t][0], want[0], "thread " + std::to_string(t));
}

}  // namespace
}  // namespace texel
