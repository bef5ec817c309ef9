// End-to-end tests of the scatter kernels (ScatterElements, ScatterND) and MaxPool's argmax
// (MaxPoolIndices): IR graphs compiled with CompileGraph for the PoCL CPU device and compared
// with plain C++ references on seeded random inputs. The references scatter the ONNX way
// (walking the updates in order and writing into a copy of data), independently of the
// kernels' gather-style formulation; run-time indices out of range are skipped.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "api/compiler.h"
#include "ir/graph.h"
#include "kernel_test_util.h"
#include "runtime/session.h"

namespace texel {
namespace {

using namespace texel::testing;

using Ints = std::vector<int64_t>;

// Random int64 indices in [lo, hi).
HostTensor RandomIndices(Shape s, int64_t lo, int64_t hi, uint32_t seed) {
  HostTensor t(DType::kInt64, std::move(s));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
  for (int64_t i = 0; i < t.size(); ++i) t.data<int64_t>()[i] = dist(rng);
  return t;
}

double Combine(const std::string& r, double v, double u) {
  if (r == "add") return v + u;
  if (r == "mul") return v * u;
  if (r == "max") return std::max(v, u);
  if (r == "min") return std::min(v, u);
  return u;
}

// Wraps a negative index; -1 when it is out of range.
int64_t Wrap(int64_t g, int64_t dim) {
  if (g < 0) g += dim;
  return g >= 0 && g < dim ? g : -1;
}

HostTensor RefScatterElements(const HostTensor& x, const HostTensor& idx, const HostTensor& upd,
                              int64_t axis, const std::string& r) {
  HostTensor y = x;
  for (int64_t j = 0; j < idx.size(); ++j) {
    std::vector<int64_t> c = Unravel(j, idx.shape);
    c[axis] = Wrap(idx.data<int64_t>()[j], x.shape[axis]);
    if (c[axis] < 0) continue;
    int64_t o = Ravel(c, x.shape);
    y.data<float>()[o] = static_cast<float>(Combine(r, F(y, o), F(upd, j)));
  }
  return y;
}

HostTensor RefScatterND(const HostTensor& x, const HostTensor& idx, const HostTensor& upd,
                        const std::string& r) {
  HostTensor y = x;
  int64_t k = idx.shape.back(), rows = idx.size() / k;
  Shape slice(x.shape.begin() + k, x.shape.end());
  int64_t len = NumElements(slice);
  for (int64_t j = 0; j < rows; ++j) {
    std::vector<int64_t> c(x.shape.size(), 0);
    bool inside = true;
    for (int64_t d = 0; d < k; ++d) {
      c[d] = Wrap(idx.data<int64_t>()[j * k + d], x.shape[d]);
      inside = inside && c[d] >= 0;
    }
    if (!inside) continue;
    int64_t base = Ravel(c, x.shape);
    for (int64_t e = 0; e < len; ++e)
      y.data<float>()[base + e] =
          static_cast<float>(Combine(r, F(y, base + e), F(upd, j * len + e)));
  }
  return y;
}

// Max pooling's argmax over any number of spatial dims (floor mode, no dilation): the first
// maximum in window order, as a flat index into x, row-major over the spatial dims
// (storage_order 0) or column-major (storage_order 1); pads = [begins..., ends...].
HostTensor RefMaxPoolIndices(const HostTensor& x, Ints k, Ints s, Ints p, bool col_major) {
  size_t nsp = x.shape.size() - 2;
  Shape in(x.shape.begin() + 2, x.shape.end()), out;
  for (size_t i = 0; i < nsp; ++i) out.push_back((in[i] + p[i] + p[nsp + i] - k[i]) / s[i] + 1);
  Shape ys = {x.shape[0], x.shape[1]};
  ys.insert(ys.end(), out.begin(), out.end());
  HostTensor y(DType::kInt64, ys);
  int64_t plane = NumElements(in), planes = x.shape[0] * x.shape[1];
  for (int64_t z = 0; z < planes; ++z)
    for (int64_t o = 0; o < NumElements(out); ++o) {
      std::vector<int64_t> oc = Unravel(o, out);
      float best = -std::numeric_limits<float>::infinity();
      int64_t at = -1;
      for (int64_t w = 0; w < NumElements(k); ++w) {
        std::vector<int64_t> kc = Unravel(w, k), xc(nsp);
        bool inside = true;
        for (size_t i = 0; i < nsp; ++i) {
          xc[i] = oc[i] * s[i] - p[i] + kc[i];
          inside = inside && xc[i] >= 0 && xc[i] < in[i];
        }
        if (!inside) continue;
        float v = F(x, z * plane + Ravel(xc, in));
        if (at >= 0 && !(v > best)) continue;
        best = v;
        int64_t flat = 0;  // column-major: the first spatial dim varies fastest
        for (size_t i = nsp; i-- > 0;) flat = flat * in[i] + xc[i];
        at = z * plane + (col_major ? flat : Ravel(xc, in));
      }
      y.data<int64_t>()[z * NumElements(out) + o] = at;
    }
  return y;
}

void ExpectEqualInts(const HostTensor& got, const HostTensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype, want.dtype) << what;
  ASSERT_EQ(got.shape, want.shape) << what;
  int bad = 0;
  for (int64_t i = 0; i < want.size(); ++i)
    if (got.GetInt(i) != want.GetInt(i) && ++bad <= 5)
      ADD_FAILURE() << what << " at " << i << ": got " << got.GetInt(i) << ", want "
                    << want.GetInt(i);
  EXPECT_EQ(bad, 0) << what;
}

ir::Value* Output(ir::Graph& g, ir::OpKind op, std::vector<ir::Value*> in, ir::Attrs attrs,
                  const std::string& name) {
  ir::Value* v = g.AddNode(op, std::move(in), std::move(attrs), name)->outputs[0];
  g.AddOutput(v);
  return v;
}

const char* const kReductions[] = {"none", "add", "mul", "max", "min"};

TEST(ScatterKernelTest, ScatterElementsAllReductions) {
  // Data [3, 5, 4], scatter along axis 1 from [3, 6, 2] (more updates than the axis holds, so
  // duplicates are certain); indices in [-6, 6): negatives wrap, -6 and 5 are out of range.
  HostTensor x = RandomF32({3, 5, 4}, 401);
  HostTensor idx = RandomIndices({3, 6, 2}, -6, 6, 402);
  HostTensor upd = RandomF32({3, 6, 2}, 403);
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", {DType::kFloat32, x.shape});
  ir::Value* iv = g->AddInput("idx", {DType::kInt64, idx.shape});
  ir::Value* uv = g->AddInput("upd", {DType::kFloat32, upd.shape});
  for (const char* r : kReductions)
    Output(*g, ir::OpKind::kScatterElements, {xv, iv, uv},
           {{"axis", int64_t{1}}, {"reduction", std::string(r)}}, r);
  std::vector<HostTensor> out = CompileAndRun(std::move(g), {{"x", x}, {"idx", idx}, {"upd", upd}});
  ASSERT_EQ(out.size(), std::size(kReductions));
  for (size_t i = 0; i < out.size(); ++i)
    ExpectClose(out[i], RefScatterElements(x, idx, upd, 1, kReductions[i]),
                std::string("scatter_elements reduction ") + kReductions[i]);
}

TEST(ScatterKernelTest, ScatterElementsIntegerAddOnAxis0) {
  // int64 data, constant int32 indices on axis 0 with updates narrower than the data.
  HostTensor x = RandomIndices({4, 3}, -50, 50, 411);
  HostTensor upd = RandomIndices({5, 2}, -50, 50, 412);
  HostTensor idx64 = RandomIndices({5, 2}, -4, 4, 413);
  HostTensor idx(DType::kInt32, idx64.shape);
  for (int64_t i = 0; i < idx.size(); ++i) idx.data<int32_t>()[i] = int32_t(idx64.GetInt(i));
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", {DType::kInt64, x.shape});
  ir::Value* uv = g->AddInput("upd", {DType::kInt64, upd.shape});
  ir::Value* iv = g->AddConstant("idx", std::make_shared<HostTensor>(idx));
  Output(*g, ir::OpKind::kScatterElements, {xv, iv, uv},
         {{"axis", int64_t{0}}, {"reduction", std::string("add")}}, "y");
  std::vector<HostTensor> out = CompileAndRun(std::move(g), {{"x", x}, {"upd", upd}});
  HostTensor want = x;
  for (int64_t j = 0; j < idx.size(); ++j) {
    int64_t r = Wrap(idx.GetInt(j), 4), c = j % 2;
    want.data<int64_t>()[r * 3 + c] += upd.GetInt(j);
  }
  ASSERT_EQ(out.size(), 1u);
  ExpectEqualInts(out[0], want, "scatter_elements int64 add");
}

TEST(ScatterKernelTest, ScatterNDRowsSlicesAndElements) {
  // k = 1 (whole [5, 3] slices), k = 2 (rows of 3) and k = 3 (single elements) into
  // data [4, 5, 3]; indices include negatives, duplicates and out-of-range values.
  HostTensor x = RandomF32({4, 5, 3}, 421);
  struct Case {
    HostTensor idx, upd;
  };
  std::vector<Case> cases;
  cases.push_back({RandomIndices({2, 3, 1}, -5, 5, 422), RandomF32({2, 3, 5, 3}, 423)});
  cases.push_back({RandomIndices({9, 2}, -4, 5, 424), RandomF32({9, 3}, 425)});
  cases.push_back({RandomIndices({7, 3}, -3, 4, 426), RandomF32({7}, 427)});
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", {DType::kFloat32, x.shape});
  std::map<std::string, HostTensor> feed = {{"x", x}};
  const char* const reductions[] = {"none", "add", "mul"};
  for (size_t c = 0; c < cases.size(); ++c) {
    std::string i = fmt::format("idx{}", c), u = fmt::format("upd{}", c);
    ir::Value* iv = g->AddInput(i, {DType::kInt64, cases[c].idx.shape});
    ir::Value* uv = g->AddInput(u, {DType::kFloat32, cases[c].upd.shape});
    feed[i] = cases[c].idx;
    feed[u] = cases[c].upd;
    for (const char* r : reductions)
      Output(*g, ir::OpKind::kScatterND, {xv, iv, uv}, {{"reduction", std::string(r)}},
             u + "_" + r);
  }
  std::vector<HostTensor> out = CompileAndRun(std::move(g), feed);
  ASSERT_EQ(out.size(), cases.size() * std::size(reductions));
  for (size_t c = 0; c < cases.size(); ++c)
    for (size_t r = 0; r < std::size(reductions); ++r)
      ExpectClose(out[c * std::size(reductions) + r],
                  RefScatterND(x, cases[c].idx, cases[c].upd, reductions[r]),
                  fmt::format("scatternd k={} reduction {}", c + 1, reductions[r]));
}

TEST(ScatterKernelTest, MaxPoolIndicesBothStorageOrders) {
  // 1-D, 2-D and 3-D windows, each with storage_order 0 and 1.
  struct Case {
    HostTensor x;
    Ints k, s, p;
  };
  std::vector<Case> cases = {
      {RandomF32({2, 3, 11}, 431), {3}, {2}, {1, 1}},
      {RandomF32({2, 3, 7, 8}, 432), {3, 2}, {2, 2}, {1, 0, 1, 1}},
      {RandomF32({1, 2, 4, 5, 6}, 433), {2, 3, 2}, {1, 2, 2}, {0, 1, 1, 1, 0, 1}}};
  auto g = std::make_unique<ir::Graph>();
  std::map<std::string, HostTensor> feed;
  for (size_t c = 0; c < cases.size(); ++c) {
    HostTensor& x = cases[c].x;
    for (int64_t i = 0; i < x.size(); i += 5) x.data<float>()[i] = 0.5f;  // ties: the first wins
    std::string name = fmt::format("x{}", c);
    ir::Value* xv = g->AddInput(name, {DType::kFloat32, x.shape});
    feed[name] = x;
    for (int64_t order : {0, 1})
      Output(*g, ir::OpKind::kMaxPoolIndices, {xv},
             {{"kernel", cases[c].k},
              {"strides", cases[c].s},
              {"pads", cases[c].p},
              {"dilations", Ints(cases[c].k.size(), 1)},
              {"ceil_mode", int64_t{0}},
              {"storage_order", order}},
             fmt::format("{}_argmax{}", name, order));
  }
  std::vector<HostTensor> out = CompileAndRun(std::move(g), feed);
  ASSERT_EQ(out.size(), 2 * cases.size());
  for (size_t c = 0; c < cases.size(); ++c)
    for (int order : {0, 1})
      ExpectEqualInts(out[2 * c + order],
                      RefMaxPoolIndices(cases[c].x, cases[c].k, cases[c].s, cases[c].p, order),
                      fmt::format("{}-D maxpool indices, storage_order {}", c + 1, order));
}

}  // namespace
}  // namespace texel
