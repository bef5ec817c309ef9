// End-to-end tests of the sampling kernels, GridSample and RoiAlign: IR graphs compiled for the
// PoCL CPU device and compared with C++ transcriptions of the ONNX reference implementations
// (onnx/reference/ops/op_grid_sample.py, op_roi_align.py) on seeded random inputs. Coordinates
// are computed in float as the reference does, values accumulated in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
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

// --- GridSample reference --------------------------------------------------------------------

// _gs_reflect: reflect x about [lo, hi] until it is inside.
double Reflect(double x, double lo, double hi) {
  double rng = hi - lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = static_cast<int64_t>(dx / rng);
    double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = static_cast<int64_t>(dx / rng);
    double r = dx - static_cast<double>(n) * rng;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// _gs_get_cubic_coeffs with A = -0.75, for the taps at x0 - 1 .. x0 + 2 and t = x - x0.
std::array<double, 4> CubicCoeffs(double t) {
  const double a = -0.75;
  return {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
          ((a + 2) * t - (a + 3)) * t * t + 1,
          ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
          ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a};
}

struct GridSampleCase {
  std::string mode, pad;  // nearest / linear / cubic; zeros / border / reflection
  bool align;
};

HostTensor RefGridSample(const HostTensor& x, const HostTensor& grid, const GridSampleCase& k) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t ho = grid.shape[1], wo = grid.shape[2];
  const int64_t len[2] = {h, w};
  double lo[2], hi[2];
  for (int a = 0; a < 2; ++a) {
    lo[a] = k.align ? 0.0 : -0.5;
    hi[a] = k.align ? double(len[a] - 1) : double(len[a]) - 0.5;
  }
  // The pixel at (iy, ix) of plane (b, ch) with the padding mode applied to each axis.
  auto pixel = [&](int64_t b, int64_t ch, int64_t iy, int64_t ix) -> double {
    int64_t idx[2] = {iy, ix};
    for (int a = 0; a < 2; ++a) {
      if (k.pad == "zeros" && (idx[a] < 0 || idx[a] >= len[a])) return 0.0;
      if (k.pad == "border") idx[a] = std::clamp<int64_t>(idx[a], 0, len[a] - 1);
      if (k.pad == "reflection")
        idx[a] = static_cast<int64_t>(Reflect(double(idx[a]), lo[a], hi[a]));
    }
    return F(x, Ravel({b, ch, idx[0], idx[1]}, x.shape));
  };
  HostTensor y(DType::kFloat32, {n, c, ho, wo});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox) {
        // The grid holds (x, y); pos is (y, x).
        float pos[2];
        for (int a = 0; a < 2; ++a) {
          float g = F(grid, Ravel({b, oy, ox, 1 - a}, grid.shape));
          float l = static_cast<float>(len[a]);
          pos[a] = k.align ? (g + 1) / 2.0f * (l - 1) : ((g + 1) * l - 1) / 2.0f;
          if (k.mode == "nearest") pos[a] = std::nearbyint(pos[a]);  // half to even
          if (pos[a] < lo[a] || pos[a] > hi[a]) {
            if (k.pad == "border") pos[a] = std::clamp(pos[a], 0.0f, l - 1);
            if (k.pad == "reflection") pos[a] = static_cast<float>(Reflect(pos[a], lo[a], hi[a]));
          }
        }
        for (int64_t ch = 0; ch < c; ++ch) {
          double v = 0;
          if (k.mode == "nearest") {
            v = pixel(b, ch, static_cast<int64_t>(pos[0]), static_cast<int64_t>(pos[1]));
          } else {
            int64_t x0[2];
            std::vector<double> wts[2];
            for (int a = 0; a < 2; ++a) {
              double f = std::floor(pos[a]), t = pos[a] - f;
              if (k.mode == "linear") {
                x0[a] = static_cast<int64_t>(f);
                wts[a] = {1 - t, t};
              } else {
                x0[a] = static_cast<int64_t>(f) - 1;
                auto cc = CubicCoeffs(t);
                wts[a].assign(cc.begin(), cc.end());
              }
            }
            for (size_t i = 0; i < wts[0].size(); ++i)
              for (size_t j = 0; j < wts[1].size(); ++j)
                v += wts[0][i] * wts[1][j] * pixel(b, ch, x0[0] + int64_t(i), x0[1] + int64_t(j));
          }
          y.data<float>()[Ravel({b, ch, oy, ox}, y.shape)] = static_cast<float>(v);
        }
      }
  return y;
}

// Every mode x padding mode x align_corners, on a grid reaching well outside [-1, 1] (several
// reflections) and with some exactly on the borders.
TEST(SamplingKernelTest, GridSampleAllModes) {
  HostTensor x = RandomF32({2, 3, 5, 7}, 701);
  HostTensor grid = RandomF32({2, 4, 6, 2}, 702);
  for (int64_t i = 0; i < grid.size(); ++i) {
    float& g = grid.data<float>()[i];
    g *= i % 7 == 3 ? 4.3f : 1.4f;
    if (i % 11 == 5) g = i % 2 ? 1.0f : -1.0f;
  }
  std::vector<GridSampleCase> cases;
  for (std::string mode : {"nearest", "linear", "cubic"})
    for (std::string pad : {"zeros", "border", "reflection"})
      for (bool align : {false, true}) cases.push_back({mode, pad, align});
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", {DType::kFloat32, x.shape});
  ir::Value* gv = g->AddInput("grid", {DType::kFloat32, grid.shape});
  for (const auto& k : cases)
    g->AddOutput(
        g->AddNode(ir::OpKind::kGridSample, {xv, gv},
                   {{"mode", k.mode}, {"padding_mode", k.pad}, {"align_corners", int64_t{k.align}}},
                   k.mode + "_" + k.pad)
            ->outputs[0]);
  std::vector<HostTensor> out = CompileAndRun(std::move(g), {{"x", x}, {"grid", grid}});
  ASSERT_EQ(out.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i)
    ExpectClose(out[i], RefGridSample(x, grid, cases[i]),
                "GridSample " + cases[i].mode + " " + cases[i].pad +
                    (cases[i].align ? " align_corners" : ""));
}

// --- RoiAlign reference ----------------------------------------------------------------------

struct RoiAlignCase {
  std::string mode;  // avg / max
  bool half_pixel;
  int64_t out_h, out_w, ratio;
  float scale;
};

HostTensor RefRoiAlign(const HostTensor& x, const HostTensor& rois, const HostTensor& idx,
                       const RoiAlignCase& k) {
  const int64_t c = x.shape[1], h = x.shape[2], w = x.shape[3], nr = rois.shape[0];
  HostTensor y(DType::kFloat32, {nr, c, k.out_h, k.out_w});
  for (int64_t r = 0; r < nr; ++r) {
    const float off = k.half_pixel ? 0.5f : 0.0f;
    const float* roi = rois.data<float>() + r * 4;
    float sw = roi[0] * k.scale - off, sh = roi[1] * k.scale - off;
    float rw = roi[2] * k.scale - off - sw, rh = roi[3] * k.scale - off - sh;
    if (!k.half_pixel) {
      rw = std::max(rw, 1.0f);
      rh = std::max(rh, 1.0f);
    }
    float bh = rh / float(k.out_h), bw = rw / float(k.out_w);
    int64_t gh = k.ratio > 0 ? k.ratio : int64_t(std::ceil(rh / float(k.out_h)));
    int64_t gw = k.ratio > 0 ? k.ratio : int64_t(std::ceil(rw / float(k.out_w)));
    double count = double(std::max<int64_t>(gh * gw, 1));
    int64_t b = idx.data<int64_t>()[r];
    for (int64_t ch = 0; ch < c; ++ch) {
      auto at = [&](int64_t yy, int64_t xx) {
        return double(F(x, Ravel({b, ch, yy, xx}, x.shape)));
      };
      for (int64_t ph = 0; ph < k.out_h; ++ph)
        for (int64_t pw = 0; pw < k.out_w; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              float sy = sh + float(ph) * bh + (float(iy) + 0.5f) * bh / float(gh);
              float sx = sw + float(pw) * bw + (float(ix) + 0.5f) * bw / float(gw);
              double val = 0;
              if (!(sy < -1.0f || sy > float(h) || sx < -1.0f || sx > float(w))) {
                sy = std::max(sy, 0.0f);
                sx = std::max(sx, 0.0f);
                int64_t yl = int64_t(sy), xl = int64_t(sx), yh = yl + 1, xh = xl + 1;
                if (yl >= h - 1) yh = yl = h - 1, sy = float(yl);
                if (xl >= w - 1) xh = xl = w - 1, sx = float(xl);
                double ly = sy - float(yl), lx = sx - float(xl), hy = 1 - ly, hx = 1 - lx;
                double v[4] = {hy * hx * at(yl, xl), hy * lx * at(yl, xh), ly * hx * at(yh, xl),
                               ly * lx * at(yh, xh)};
                val = k.mode == "max" ? *std::max_element(v, v + 4) : v[0] + v[1] + v[2] + v[3];
              }
              acc = k.mode == "max" ? (first ? val : std::max(acc, val)) : acc + val;
              first = false;
            }
          if (k.mode == "avg") acc /= count;
          y.data<float>()[Ravel({r, ch, ph, pw}, y.shape)] = static_cast<float>(acc);
        }
    }
  }
  return y;
}

// Rois and batch indices are run-time inputs; random rois reach outside the image, one is
// inverted (x2 < x1), one is smaller than a pixel, and both fixed and adaptive (roi-dependent)
// sampling grids are used.
TEST(SamplingKernelTest, RoiAlign) {
  HostTensor x = RandomF32({2, 3, 9, 11}, 801);
  HostTensor rois(DType::kFloat32, {6, 4});
  std::mt19937 rng(802);
  std::uniform_real_distribution<float> pos(-2.0f, 13.0f), size(0.5f, 9.0f);
  for (int64_t r = 0; r < 4; ++r) {
    float* roi = rois.data<float>() + r * 4;
    roi[0] = pos(rng);
    roi[1] = pos(rng);
    roi[2] = roi[0] + size(rng);
    roi[3] = roi[1] + size(rng);
  }
  // An inverted roi and one narrower than a pixel, inside the image (output_half_pixel makes
  // both at least 1x1).
  for (int64_t i = 0; i < 4; ++i) {
    rois.data<float>()[16 + i] = std::vector<float>{6.5f, 2.0f, 4.0f, 7.5f}[i];
    rois.data<float>()[20 + i] = std::vector<float>{3.2f, 4.1f, 3.8f, 4.4f}[i];
  }
  HostTensor idx = I64({6}, {0, 1, 1, 0, 1, 0});
  std::vector<RoiAlignCase> cases = {{"avg", true, 3, 4, 2, 1.0f},
                                     {"avg", false, 2, 3, 0, 0.75f},
                                     {"max", false, 3, 2, 2, 1.0f},
                                     {"max", true, 2, 2, 0, 1.25f}};
  auto g = std::make_unique<ir::Graph>();
  ir::Value* xv = g->AddInput("x", {DType::kFloat32, x.shape});
  ir::Value* rv = g->AddInput("rois", {DType::kFloat32, rois.shape});
  ir::Value* iv = g->AddInput("idx", {DType::kInt64, idx.shape});
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& k = cases[i];
    g->AddOutput(g->AddNode(ir::OpKind::kRoiAlign, {xv, rv, iv},
                            {{"mode", k.mode},
                             {"half_pixel", int64_t{k.half_pixel}},
                             {"output_height", k.out_h},
                             {"output_width", k.out_w},
                             {"sampling_ratio", k.ratio},
                             {"spatial_scale", double{k.scale}}},
                            "roialign" + std::to_string(i))
                     ->outputs[0]);
  }
  std::vector<HostTensor> out =
      CompileAndRun(std::move(g), {{"x", x}, {"rois", rois}, {"idx", idx}});
  ASSERT_EQ(out.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i)
    ExpectClose(out[i], RefRoiAlign(x, rois, idx, cases[i]),
                "RoiAlign " + cases[i].mode + (cases[i].half_pixel ? " half_pixel" : "") +
                    " ratio " + std::to_string(cases[i].ratio));
}

}  // namespace
}  // namespace texel
