// Host references for the window kernels' tests (convolution and pooling over any number of
// spatial dims, NCHW-style): float64 accumulation, written independently of the kernels' index
// arithmetic. One copy, shared by every test file that checks these ops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernel_test_util.h"

namespace texel::testing {

// The spatial part of a shape.
inline Shape Spatial(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

// [n, c, spatial...] from n, c and spatial coordinates.
inline std::vector<int64_t> Coord(int64_t n, int64_t c, const std::vector<int64_t>& sp) {
  std::vector<int64_t> r = {n, c};
  r.insert(r.end(), sp.begin(), sp.end());
  return r;
}

// Conv: x [N, C, in...], w [M, C / group, k...]; strides s, pads p = [begins..., ends...],
// dilations d.
inline HostTensor RefConv(const HostTensor& x, const HostTensor& w, const HostTensor* b,
                          const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                          const std::vector<int64_t>& d, int64_t group) {
  size_t nsp = x.shape.size() - 2;
  Shape in = Spatial(x.shape), k = Spatial(w.shape), out;
  for (size_t i = 0; i < nsp; ++i)
    out.push_back((in[i] + p[i] + p[nsp + i] - d[i] * (k[i] - 1) - 1) / s[i] + 1);
  int64_t m = w.shape[0], cg = w.shape[1], mg = m / group;
  Shape ys = {x.shape[0], m};
  ys.insert(ys.end(), out.begin(), out.end());
  HostTensor y(DType::kFloat32, ys);
  for (int64_t yi = 0; yi < y.size(); ++yi) {
    std::vector<int64_t> yc = Unravel(yi, ys);
    int64_t om = yc[1], g = om / mg;
    double acc = b ? F(*b, om) : 0.0;
    for (int64_t ic = 0; ic < cg; ++ic)
      for (int64_t ki = 0; ki < NumElements(k); ++ki) {
        std::vector<int64_t> kc = Unravel(ki, k), xc(nsp);
        bool inside = true;
        for (size_t i = 0; i < nsp; ++i) {
          xc[i] = yc[2 + i] * s[i] - p[i] + kc[i] * d[i];
          inside = inside && xc[i] >= 0 && xc[i] < in[i];
        }
        if (!inside) continue;
        acc += double{F(x, Ravel(Coord(yc[0], g * cg + ic, xc), x.shape))} *
               F(w, Ravel(Coord(om, ic, kc), w.shape));
      }
    y.data<float>()[yi] = static_cast<float>(acc);
  }
  return y;
}

// ONNX's pooling output size along one dim (window extent d (k - 1) + 1): with ceil_mode the
// last window must start inside the input or its begin padding.
inline int64_t PoolOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                       bool ceil_mode) {
  int64_t span = in + pb + pe - (d * (k - 1) + 1);
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + pb) --o;
  return o;
}

// Max or average pooling: x [N, C, in...], kernel k, strides s, pads p = [begins...,
// ends...], dilations d; include_pad (count_include_pad) counts the window positions inside
// the padded input, not those past it that ceil_mode adds.
inline HostTensor RefPool(const HostTensor& x, bool is_max, const std::vector<int64_t>& k,
                          const std::vector<int64_t>& s, const std::vector<int64_t>& p,
                          const std::vector<int64_t>& d, bool ceil_mode, bool include_pad) {
  size_t nsp = x.shape.size() - 2;
  Shape in = Spatial(x.shape);
  Shape ys = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < nsp; ++i)
    ys.push_back(PoolOut(in[i], k[i], s[i], d[i], p[i], p[nsp + i], ceil_mode));
  HostTensor y(DType::kFloat32, ys);
  for (int64_t yi = 0; yi < y.size(); ++yi) {
    std::vector<int64_t> yc = Unravel(yi, ys);
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    int64_t count = 0, padded = 0;
    for (int64_t ki = 0; ki < NumElements(k); ++ki) {
      std::vector<int64_t> kc = Unravel(ki, k), xc(nsp);
      bool inside = true, in_padded = true;
      for (size_t i = 0; i < nsp; ++i) {
        xc[i] = yc[2 + i] * s[i] - p[i] + kc[i] * d[i];
        inside = inside && xc[i] >= 0 && xc[i] < in[i];
        in_padded = in_padded && xc[i] >= -p[i] && xc[i] < in[i] + p[nsp + i];
      }
      padded += in_padded;
      if (!inside) continue;
      double v = F(x, Ravel(Coord(yc[0], yc[1], xc), x.shape));
      acc = is_max ? std::max(acc, v) : acc + v;
      ++count;
    }
    if (!is_max) acc /= static_cast<double>(include_pad ? padded : count);
    y.data<float>()[yi] = static_cast<float>(acc);
  }
  return y;
}

}  // namespace texel::testing
