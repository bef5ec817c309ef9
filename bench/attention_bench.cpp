// texel_attention_bench: texel's attention kernels with the heuristic's parameters and with
// explicit ones, on [B, H, S, D] problems, to compare candidates on one device in one run.
// Each run: warm-up, then R runs enqueued back to back and one clFinish, wall-clock / R
// (R filling about 0.3 s). TFLOP/s counts 2 * B * H * S * S * (D + D) (half of it with causal).
// Correctness: max |texel - host| over 64 sampled rows (double accumulation on the host).
//
// Usage: texel_attention_bench [--device SPEC] [--shapes BxHxSxD[c],...] [--params P ...]
//                              [--dtype f32|f16] [--build-options OPTIONS]
//   --shapes  e.g. 1x12x1024x64,1x12x128x64c (c: causal); default 1x12x1024x64,1x12x128x64
//   --params  rows:BQxBK:SPLITS[:fast] or tiled[ROWSxRM]:SPLITS[:fast][:warp][:async] (tiled: ROWS
//   32 or
//             64 per work-group, RM 4 or 8 per work-item, 64x4 if left out; fast: native_exp;
//             warp: the rows' exchanges synchronise a warp, on NVIDIA; async: K and V tiles
//             copied by cp.async, on NVIDIA compute capability 8.0 and later), or
//             mmaWARPSxBKV:SPLITS (f16 on the matrix engine: WARPS of 16 rows, BKV keys a tile;
//             always native_exp)
//   --dtype   storage of q, k, v and the output (f16: inputs rounded to f16, the host reference
//             computed on the rounded values)
//   --build-options  OpenCL build options for the kernels (e.g. -cl-nv-maxrregcount=96)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/native/native_backend.h"
#include "bench_util.h"
#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "runtime/cl/context.h"
#include "runtime/cl/device.h"

namespace {

using namespace texel;

codegen::AttentionParams ParseParams(const std::string& s) {
  codegen::AttentionParams p;
  p.fast_exp = s.find(":fast") != std::string::npos;
  p.warp_sync = s.find(":warp") != std::string::npos;
  p.async_copy = s.find(":async") != std::string::npos;
  if (std::sscanf(s.c_str(), "rows:%dx%d:%d", &p.bq, &p.bk, &p.splits) == 3) {
    p.vw = 4;
    return p;
  }
  int warps = 0;
  if (std::sscanf(s.c_str(), "mma%dx%d:%d", &warps, &p.bk, &p.splits) == 3) {
    p.mma = true;
    p.bq = 16 * warps;
    p.fast_exp = true;
    return p;
  }
  p.bq = 64;
  if (std::sscanf(s.c_str(), "tiled%dx%d:%d", &p.bq, &p.rm, &p.splits) == 3 ||
      std::sscanf(s.c_str(), "tiled:%d", &p.splits) == 1) {
    p.tiled = true;
    return p;
  }
  Fail(ErrorCode::kInvalidArgument,
       "--params '{}': want rows:BQxBK:SPLITS, tiled:SPLITS, tiledROWSxRM:SPLITS or "
       "mmaWARPSxBKV:SPLITS",
       s);
}

std::string Label(const codegen::AttentionParams& p) {
  std::string s = p.mma     ? fmt::format("mma {}x{}", p.bq / 16, p.bk)
                  : p.tiled ? fmt::format("tiled {}x{}", p.bq, p.rm)
                            : fmt::format("rows bq {} bk {} vw {}", p.bq, p.bk, p.vw);
  return s + fmt::format(" split {}{}{}{}", p.splits, p.fast_exp ? " fast" : "",
                         p.warp_sync ? " warp" : "", p.async_copy ? " async" : "");
}

struct Shape4 {
  int64_t b, h, s, d;
  bool causal;
};

void RunShape(const cl::Context& ctx, const Shape4& sh,
              const std::vector<codegen::AttentionParams>& extra, const std::string& options,
              DType dtype) {
  ir::Graph g;
  Shape shape{sh.b, sh.h, sh.s, sh.d};
  ir::Value* q = g.AddInput("q", {dtype, shape});
  ir::Value* k = g.AddInput("k", {dtype, shape});
  ir::Value* v = g.AddInput("v", {dtype, shape});
  double scale = 1 / std::sqrt(static_cast<double>(sh.d));
  ir::Node* node = g.AddNode(ir::OpKind::kAttention, {q, k, v},
                             {{"scale", scale}, {"causal", int64_t{sh.causal}}}, "attention");
  size_t n = static_cast<size_t>(NumElements(shape));
  std::vector<float> hq(n), hk(n), hv(n), ho(n);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  bool half = dtype == DType::kFloat16;
  size_t bytes = n * (half ? 2 : 4);
  std::vector<uint16_t> bits(n);
  // Host values in the storage type (rounded to f16 for f16), written to the device as stored.
  auto upload = [&](std::vector<float>& h, cl::Buffer& d) {
    for (size_t i = 0; i < n; ++i) {
      bits[i] = FloatToHalf(h[i]);
      if (half) h[i] = HalfToFloat(bits[i]);
    }
    d.Write(ctx, half ? static_cast<const void*>(bits.data()) : h.data(), bytes);
  };
  for (auto* h : {&hq, &hk, &hv})
    for (float& x : *h) x = dist(rng);
  cl::Buffer dq(ctx, bytes), dk(ctx, bytes), dv(ctx, bytes), dout(ctx, bytes);
  upload(hq, dq);
  upload(hk, dk);
  upload(hv, dv);
  codegen::Target target = backends::NativeBackend::TargetOf(ctx.info());
  double flop = 4.0 * sh.b * sh.h * sh.s * sh.s * sh.d / (sh.causal ? 2 : 1);
  std::vector<const codegen::AttentionParams*> runs{nullptr};
  for (const auto& e : extra) runs.push_back(&e);
  for (const codegen::AttentionParams* params : runs) {
    codegen::AttentionParams chosen =
        params ? *params
               : codegen::ChooseAttentionParams(sh.s, sh.s, sh.b * sh.h, sh.d, sh.d, dtype,
                                                sh.causal, target);
    double secs = 0;
    try {
      backends::BoundKernels run(
          ctx, codegen::GenerateAttentionWith(*node, "att", target, &chosen),
          [&](int id) -> const cl::Buffer& {
            return id == q->id ? dq : id == k->id ? dk : id == v->id ? dv : dout;
          },
          "", options);
      std::vector<char> nan(bytes, '\xff');
      dout.Write(ctx, nan.data(), bytes);
      secs = bench::TimeRuns(ctx, 0.3, [&] { run.Launch(ctx); });
    } catch (const Error& e) {
      std::printf("%-22s %-36s skipped: %s\n", "", Label(chosen).c_str(), e.what());
      continue;
    }
    if (half) {
      dout.Read(ctx, bits.data(), bytes);
      for (size_t i = 0; i < n; ++i) ho[i] = HalfToFloat(bits[i]);
    } else {
      dout.Read(ctx, ho.data(), bytes);
    }
    double err = 0;
    std::mt19937 pick(7);
    for (int sample = 0; sample < 64; ++sample) {
      int64_t bh = pick() % (sh.b * sh.h), i = pick() % sh.s, base = bh * sh.s * sh.d;
      int64_t kend = sh.causal ? i + 1 : sh.s;
      std::vector<double> p(kend);
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < kend; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < sh.d; ++c)
          acc += double{hq[base + i * sh.d + c]} * hk[base + j * sh.d + c];
        m = std::max(m, p[j] = acc * scale);
      }
      for (double& x : p) sum += (x = std::exp(x - m));
      for (int64_t c = 0; c < sh.d; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < kend; ++j) acc += p[j] / sum * hv[base + j * sh.d + c];
        double d = std::fabs(acc - ho[base + i * sh.d + c]);
        if (!(d <= err)) err = d;  // NaN sticks
      }
    }
    std::printf("%3lldx%-3lldx%-5lldx%-3lld%-3s %-36s %9.4f %8.3f %9.2e\n", (long long)sh.b,
                (long long)sh.h, (long long)sh.s, (long long)sh.d, sh.causal ? " c" : "",
                (Label(chosen) + (params ? "" : " *")).c_str(), secs * 1e3, flop / secs * 1e-12,
                err);
    std::fflush(stdout);
  }
}

int Main(int argc, char** argv) {
  std::string device, shapes = "1x12x1024x64,1x12x128x64", options, dtype = "f32";
  std::vector<codegen::AttentionParams> extra;
  bench::ForEachFlag(argc, argv, [&](const std::string& arg, const bench::FlagValue& value) {
    if (arg == "--device")
      device = value();
    else if (arg == "--shapes")
      shapes = value();
    else if (arg == "--dtype")
      dtype = value();
    else if (arg == "--build-options")
      options = value();
    else if (arg == "--params")
      extra.push_back(ParseParams(value()));
    else
      return false;
    return true;
  });
  if (dtype != "f32" && dtype != "f16") Fail(ErrorCode::kInvalidArgument, "--dtype: f32 or f16");
  cl::Context ctx(cl::SelectDevice(device));
  std::printf("device: %s\n", ctx.info().Label().c_str());
  std::printf("%-22s %-36s %9s %8s %9s\n", "b x h x s x d", "kernel (* heuristic)", "ms", "TFLOP/s",
              "err/host");
  for (size_t pos = 0; pos < shapes.size();) {
    size_t end = std::min(shapes.find(',', pos), shapes.size());
    std::string one = shapes.substr(pos, end - pos);
    Shape4 sh{};
    long long b, h, s, d;
    if (std::sscanf(one.c_str(), "%lldx%lldx%lldx%lld", &b, &h, &s, &d) != 4)
      Fail(ErrorCode::kInvalidArgument, "--shapes: want BxHxSxD[c],...");
    sh = {b, h, s, d, one.back() == 'c'};
    RunShape(ctx, sh, extra, options, dtype == "f16" ? DType::kFloat16 : DType::kFloat32);
    pos = end + 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return texel::bench::GuardedMain("texel_attention_bench", Main, argc, argv);
}
