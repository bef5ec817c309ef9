// Host references for the row kernels' tests (reductions over any axes, softmax along one):
// float64 accumulation, written independently of the kernels' index arithmetic. One copy,
// shared by every test file that checks these ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernel_test_util.h"

namespace texel::testing {

using Ints = std::vector<int64_t>;

inline HostTensor RefSoftmax(const HostTensor& x, int64_t axis, bool log) {
  HostTensor y(DType::kFloat32, x.shape);
  int64_t len = x.shape[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  int64_t outer = x.size() / (len * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * len + j) * inner + i; };
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, double{F(x, at(j))});
      for (int64_t j = 0; j < len; ++j) sum += std::exp(F(x, at(j)) - mx);
      for (int64_t j = 0; j < len; ++j) {
        double v = F(x, at(j)) - mx;
        y.data<float>()[at(j)] = static_cast<float>(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  return y;
}

// A reduction over `axes` in double precision: kind is 's'um, 'm'ean, 'x' (max), 'n' (min) or
// 'p'roduct.
inline HostTensor RefReduce(const HostTensor& x, const Ints& axes, bool keepdims, char kind) {
  Shape kept = x.shape, out;
  for (int64_t a : axes) kept[a] = 1;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (keepdims || std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end())
      out.push_back(kept[d]);
  double init = kind == 'x' ? -INFINITY : kind == 'n' ? INFINITY : kind == 'p' ? 1.0 : 0.0;
  std::vector<double> acc(NumElements(kept), init);
  for (int64_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> c = Unravel(i, x.shape);
    for (int64_t a : axes) c[a] = 0;
    double& a = acc[Ravel(c, kept)];
    double v = F(x, i);
    a = kind == 'x' ? std::max(a, v) : kind == 'n' ? std::min(a, v) : kind == 'p' ? a * v : a + v;
  }
  HostTensor y(DType::kFloat32, out);
  double count = kind == 'm' ? static_cast<double>(x.size() / NumElements(kept)) : 1.0;
  for (int64_t i = 0; i < y.size(); ++i) y.data<float>()[i] = static_cast<float>(acc[i] / count);
  return y;
}

inline HostTensor RefReduceMean(const HostTensor& x, const Ints& axes, bool keepdims) {
  return RefReduce(x, axes, keepdims, 'm');
}

}  // namespace texel::testing
