// Helpers shared by the end-to-end kernel tests: one leaked PoCL context, compile-and-run,
// seeded random tensors, index (un)ravelling and an elementwise closeness check.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "backends/backend.h"
#include "codegen/opencl/generator.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "runtime/cl/context.h"
#include "runtime/cl/device.h"
#include "runtime/session.h"

namespace texel::testing {

// One context for the whole binary; leaked on purpose so that no CL object outlives the ICD.
// PoCL's CPU device, or TEXEL_TEST_DEVICE's (a GPU run of the tests that check device kernels).
inline std::shared_ptr<cl::Context> SharedContext() {
  static auto* ctx =
      new std::shared_ptr<cl::Context>(std::make_shared<cl::Context>(cl::SelectDevice(
          std::getenv("TEXEL_TEST_DEVICE") ? std::getenv("TEXEL_TEST_DEVICE") : "cpu")));
  return *ctx;
}

// The tests of CLBlast's calls skip where the clblast backend is unavailable (texel loads the
// library at run time and runs without it: the GPU machine's bundle has none); where
// TEXEL_TEST_REQUIRE_CLBLAST is set (scripts/test.sh, which installs it) they fail instead, so
// that CI never loses them to a skip.
#define TEXEL_SKIP_WITHOUT_CLBLAST()                                                    \
  do {                                                                                  \
    if (auto missing = ::texel::backends::FindBackend("clblast")->Unavailable()) {      \
      if (std::getenv("TEXEL_TEST_REQUIRE_CLBLAST")) FAIL() << "CLBlast: " << *missing; \
      GTEST_SKIP() << "CLBlast cannot be loaded: " << *missing;                         \
    }                                                                                   \
  } while (0)

// Compiles g for the shared PoCL context and runs it once.
inline std::vector<HostTensor> CompileAndRun(std::unique_ptr<ir::Graph> g,
                                             const std::map<std::string, HostTensor>& inputs) {
  CompiledModel m = CompileGraph(std::move(g), SharedContext(), CompileOptions{});
  runtime::Session session(*m.executable);
  return session.Run(inputs);
}

// An H100's facts as the heuristics see them (132 compute units, 48 KiB of local memory, 32-lane
// warps, inline PTX), for tests of what they choose there.
inline codegen::Target H100Target() {
  codegen::Target gpu;
  gpu.gpu = true;
  gpu.compute_units = 132;
  gpu.local_mem_bytes = 48 * 1024;
  gpu.max_work_group_size = 1024;
  gpu.warp_size = 32;
  gpu.ptx = true;
  return gpu;
}

// An H100's facts for matrix-engine kernels that run on `device` through the engine's emulation:
// no PTX (the device has none), limits no larger than the device's, and work-groups that hand
// results over where the device's do (PoCL's CPU device; oclgrind's with TEXEL_TARGET=handoff,
// which runs them one at a time and calls the hand-over a race).
inline codegen::Target EmulatedH100Target(const codegen::Target& device) {
  codegen::Target t = H100Target();
  t.ptx = false;
  t.mma_emulated = true;
  t.group_handoff = device.group_handoff;
  t.max_work_group_size = std::min(t.max_work_group_size, device.max_work_group_size);
  t.local_mem_bytes = std::min(t.local_mem_bytes, device.local_mem_bytes);
  return t;
}

// Whether a product's kernels split K: a sum kernel after the product, or the product's own
// fixup (arrival counters in zeroed scratch, warp_gemm.cl FIXUP).
inline bool SplitsK(const std::vector<codegen::KernelSpec>& specs) {
  return specs.size() > 1 || !specs[0].zeroed_scratch.empty();
}

inline HostTensor RandomF32(Shape s, uint32_t seed) {
  HostTensor t(DType::kFloat32, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

inline HostTensor I64(Shape s, const std::vector<int64_t>& v) {
  HostTensor t(DType::kInt64, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

inline std::vector<int64_t> Unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> c(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    c[d] = i % s[d];
    i /= s[d];
  }
  return c;
}

inline int64_t Ravel(const std::vector<int64_t>& c, const Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + c[d];
  return i;
}

inline float F(const HostTensor& t, int64_t i) { return t.data<float>()[i]; }

// [..., M, K] x [..., K, N] with numpy batch broadcasting, any float dtype, accumulated in
// double; *shape receives the result's shape.
inline std::vector<double> RefMatMulValues(const HostTensor& a, const HostTensor& b, Shape* shape) {
  size_t rank = std::max(a.shape.size(), b.shape.size());
  Shape ab(rank - 2, 1), bb(rank - 2, 1), yb(rank - 2);
  std::copy(a.shape.begin(), a.shape.end() - 2, ab.end() - (a.shape.size() - 2));
  std::copy(b.shape.begin(), b.shape.end() - 2, bb.end() - (b.shape.size() - 2));
  for (size_t d = 0; d < rank - 2; ++d) yb[d] = std::max(ab[d], bb[d]);
  int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  *shape = yb;
  shape->push_back(m);
  shape->push_back(n);
  std::vector<double> y(NumElements(*shape));
  for (int64_t bi = 0; bi < NumElements(yb); ++bi) {
    std::vector<int64_t> c = Unravel(bi, yb), ca(c.size()), cb(c.size());
    for (size_t d = 0; d < c.size(); ++d) {
      ca[d] = ab[d] == 1 ? 0 : c[d];
      cb[d] = bb[d] == 1 ? 0 : c[d];
    }
    int64_t ao = Ravel(ca, ab) * m * k, bo = Ravel(cb, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q)
          acc += a.GetDouble(ao + i * k + q) * b.GetDouble(bo + q * n + j);
        y[(bi * m + i) * n + j] = acc;
      }
  }
  return y;
}

// f32 <-> f16 (half bits) on the host, for the f16 storage tests.
inline HostTensor ToF16(const HostTensor& t) {
  HostTensor h(DType::kFloat16, t.shape);
  for (int64_t i = 0; i < t.size(); ++i) h.data<uint16_t>()[i] = FloatToHalf(t.data<float>()[i]);
  return h;
}
inline HostTensor ToF32(const HostTensor& h) {
  HostTensor t(DType::kFloat32, h.shape);
  for (int64_t i = 0; i < h.size(); ++i) t.data<float>()[i] = HalfToFloat(h.data<uint16_t>()[i]);
  return t;
}

// Runs the session (on the shared context) and expects no host transfer and no host
// synchronisation between its first and its last step: only the final clFinish.
inline void ExecuteExpectingNoHostRoundTrip(runtime::Session& session) {
  const cl::Context& ctx = *SharedContext();
  int64_t transfers = ctx.counters().transfers, syncs = ctx.counters().syncs;
  session.Execute();
  EXPECT_EQ(ctx.counters().transfers - transfers, 0) << "host transfers during the run";
  EXPECT_EQ(ctx.counters().syncs - syncs, 1) << "only the final clFinish";
}

// |got - want| <= rtol * max(|want|, 0.1) elementwise, and equal shapes.
inline void ExpectClose(const HostTensor& got, const HostTensor& want, const std::string& what,
                        float rtol = 1e-4f) {
  ASSERT_EQ(got.dtype, DType::kFloat32) << what;
  ASSERT_EQ(got.shape, want.shape) << what;
  int bad = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    float g = F(got, i), w = F(want, i);
    if (!(std::fabs(g - w) <= rtol * std::max(std::fabs(w), 0.1f)) && ++bad <= 5)
      ADD_FAILURE() << what << " at " << i << ": got " << g << ", want " << w;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.size() << " elements differ";
}

// Names one point for every tunable kernel generated (codegen::Target::tuning).
class OnePoint : public codegen::TuningSource {
 public:
  explicit OnePoint(codegen::TunePoint p) : p_(std::move(p)) {}
  std::optional<codegen::TunePoint> Pick(const codegen::Tunable&) const override { return p_; }

 private:
  codegen::TunePoint p_;
};

// Expects every point of `points` to make node's generator emit different kernels (source and
// launch sizes) on target: a family whose generator ignored its point would pass a check of each
// point's results alone.
inline void ExpectPointsChangeTheKernel(const ir::Node& node, const codegen::Target& target,
                                        const std::vector<codegen::TunePoint>& points,
                                        const std::string& what) {
  std::map<std::string, std::string> seen;  // kernels -> the point that made them
  for (const codegen::TunePoint& p : points) {
    OnePoint source(p);
    codegen::Target picked = target;
    picked.tuning = &source;
    std::string kernels;
    for (const codegen::KernelSpec& k : codegen::GenerateKernel(node, "k", picked)) {
      kernels += k.source + "|";
      for (size_t g : k.global) kernels += std::to_string(g) + ",";
      kernels += "|";
      for (size_t l : k.local) kernels += std::to_string(l) + ",";
      kernels += "\n";
    }
    auto [it, fresh] = seen.emplace(kernels, codegen::PointString(p));
    EXPECT_TRUE(fresh) << what << ": " << codegen::PointString(p) << " generates what "
                       << it->second << " does";
  }
}

// Sets (or unsets, for nullopt) an environment variable and restores it on scope exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    Set(value);
  }
  ~ScopedEnv() { Set(old_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void Set(const std::optional<std::string>& value) {
    if (value) {
      setenv(name_.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace texel::testing
