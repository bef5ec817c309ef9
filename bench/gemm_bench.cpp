// texel_gemm_bench: texel's generated SGEMM kernel against CLBlast's SGEMM on the same device and
// queue, square row-major fp32 C = A x B. Both are timed the same way: warm-up, then R launches
// enqueued back to back and one clFinish, wall-clock / R (R chosen to fill about 0.3 s).
// Correctness: max |texel - CLBlast| over all of C, and max |texel - host| over 256 sampled
// elements (double accumulation on the host).
//
// Usage: texel_gemm_bench [--device SPEC] [--sizes 512,1024] [--gemv 4096] [--no-clblast]
//                         [--shapes MxNxK,...] [--params TMxTNxTK:WMxWN ...] [--seconds S]
//                         [--modes fp32,tf32,tf32x3,fp16,fp16h] [--warp BMxBNxBK:WMxWN ...]
//                         [--layout nn|nt|tn|tt] [--wgmma BMxBNxSTAGES[:rROWBYTES] ...]
//                         [--profile N]
//   --modes    also times texel_gemm's engine (api/gemm.h) in these compute modes on f32 storage
//              (fp16h: fp16 on f16 storage), with the heuristic's tiles and each --warp's
//              (BMxBNxBK:WMxWN[:sSTAGES][:raw][:kgGROUPS][:kSPLIT], raw: tf32 operands not
//              rounded, kg: warp groups along K, k: K split SPLIT ways) and each --wgmma's (the
//              warpgroup kernel's tile, stages and bytes of K per stored row, 32, 64 or 128);
//              --layout nt passes B transposed, tn A, tt both (the same product).
//   --profile N  the engine's rows also give the median device time of N launches from their
//              profiling events (small products, whose back-to-back launches the host bounds;
//              the driver's profiling adds its own few microseconds to each).
//   --params   extra texel kernels with explicit parameters (beside the heuristic's choice), to
//              compare candidates on one device in one run: TMxTNxTK:WMxWN[:sSPLIT] (tiled, K
//              split SPLIT ways; 4-wide loads where K and N allow), direct:WMxWN:LXxSPLIT or
//              panel:WMxWN:LXxLY:PK.
//   --gemv N   also times 1 x N x N (the M = 1 path); --shapes any M x N x K.
#include <clblast.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "api/gemm.h"
#include "backends/native/native_backend.h"
#include "bench_util.h"
#include "codegen/opencl/gemm/wgmma_gemm.h"
#include "codegen/opencl/matmul.h"
#include "core/error.h"
#include "core/tensor.h"
#include "ir/graph.h"
#include "runtime/cl/context.h"
#include "runtime/cl/device.h"

namespace {

using namespace texel;

std::vector<int64_t> ParseList(const std::string& s) {
  std::vector<int64_t> v;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    v.push_back(std::stoll(s.substr(pos, end - pos)));
    pos = end + 1;
  }
  return v;
}

// "128x128x16:8x8" -> tiled parameters (vector widths filled in later from the shape);
// "direct:8x16:4x1" -> the direct kernel, wi_m x wi_n (= vector width), LX x split_k;
// "panel:8x16:8x8:64" -> the same with LX x LY row blocks sharing 64-row panels of B.
codegen::MatMulParams ParseParams(const std::string& s) {
  codegen::MatMulParams p;
  int lx = 0;
  if (std::sscanf(s.c_str(), "direct:%dx%d:%dx%d", &p.wi_m, &p.wi_n, &lx, &p.split_k) == 4) {
    p.kind = codegen::MatMulParams::Kind::kDirect;
    p.tile_m = p.wi_m, p.vec_b = p.wi_n, p.tile_n = lx * p.wi_n;
    return p;
  }
  int ly = 0;
  if (std::sscanf(s.c_str(), "panel:%dx%d:%dx%d:%d", &p.wi_m, &p.wi_n, &lx, &ly, &p.panel_k) == 5) {
    p.kind = codegen::MatMulParams::Kind::kDirect;
    p.tile_m = ly * p.wi_m, p.vec_b = p.wi_n, p.tile_n = lx * p.wi_n;
    return p;
  }
  int n = std::sscanf(s.c_str(), "%dx%dx%d:%dx%d:s%d", &p.tile_m, &p.tile_n, &p.tile_k, &p.wi_m,
                      &p.wi_n, &p.split_k);
  if (n != 5 && n != 6)
    Fail(ErrorCode::kInvalidArgument,
         "--params '{}': want TMxTNxTK:WMxWN[:sSPLIT], direct:WMxWN:LXxSPLIT or "
         "panel:WMxWN:LXxLY:PK",
         s);
  return p;
}

double g_seconds = 0.3;  // --seconds: timed span per measurement
int g_profile = 0;       // --profile: launches timed by their events

struct Problem {
  int64_t m, n, k;
  std::vector<float> a, b;
  cl::Buffer da, db, dc;
};

// Runs texel's kernel for p (heuristic when params is null); returns seconds per run and
// leaves C in p.dc.
double RunTexel(const cl::Context& ctx, Problem& p, const codegen::MatMulParams* params,
                std::string* label) {
  ir::Graph g;
  ir::Value* a = g.AddInput("a", {DType::kFloat32, {p.m, p.k}});
  ir::Value* b = g.AddInput("b", {DType::kFloat32, {p.k, p.n}});
  ir::Node* node = g.AddNode(ir::OpKind::kMatMul, {a, b}, {}, "mm");
  codegen::Target target = backends::NativeBackend::TargetOf(ctx.info());
  codegen::GemmShape shape{1, p.m, p.n, p.k, DType::kFloat32};
  codegen::MatMulParams chosen = codegen::ChooseMatMulParams(shape, target);
  if (params) {
    codegen::MatMulParams q = *params;
    if (q.kind == codegen::MatMulParams::Kind::kTiled) {
      q.vec_a = p.k % 4 == 0 ? 4 : 1;
      q.vec_b = p.n % 4 == 0 ? 4 : 1;
    }
    chosen = q;
  }
  *label = chosen.ToString();
  backends::BoundKernels run(ctx, codegen::GenerateMatMulWith(*node, "gemm", target, chosen),
                             [&](int id) -> const cl::Buffer& {
                               return id == a->id ? p.da : id == b->id ? p.db : p.dc;
                             });
  // C still holds the previous result: clear it so that a kernel that writes nothing shows.
  std::vector<float> nan(static_cast<size_t>(p.m * p.n), std::nanf(""));
  p.dc.Write(ctx, nan.data(), nan.size() * sizeof(float));
  return bench::TimeRuns(ctx, g_seconds, [&] { run.Launch(ctx); });
}

double RunClblast(const cl::Context& ctx, Problem& p) {
  cl_command_queue queue = ctx.queue();
  return bench::TimeRuns(ctx, g_seconds, [&] {
    auto status = clblast::Gemm(clblast::Layout::kRowMajor, clblast::Transpose::kNo,
                                clblast::Transpose::kNo, p.m, p.n, p.k, 1.0f, p.da.mem(), 0, p.k,
                                p.db.mem(), 0, p.n, 0.0f, p.dc.mem(), 0, p.n, &queue, nullptr);
    if (status != clblast::StatusCode::kSuccess)
      Fail(ErrorCode::kDevice, "CLBlast Gemm failed: status {}", static_cast<int>(status));
  });
}

std::vector<float> Read(const cl::Context& ctx, const cl::Buffer& buf, size_t n) {
  std::vector<float> v(n);
  buf.Read(ctx, v.data(), n * sizeof(float));
  return v;
}

// max |c - host reference| over 256 sampled elements.
double SampledError(const Problem& p, const std::vector<float>& c) {
  std::mt19937 rng(7);
  double err = 0;
  for (int s = 0; s < 256; ++s) {
    int64_t i = static_cast<int64_t>(rng() % p.m), j = static_cast<int64_t>(rng() % p.n);
    double ref = 0;
    for (int64_t q = 0; q < p.k; ++q) ref += double{p.a[i * p.k + q]} * p.b[q * p.n + j];
    if (double d = std::fabs(ref - c[i * p.n + j]); !(d <= err)) err = d;  // NaN sticks
  }
  return err;
}

struct GemmRuns {
  std::vector<std::string> modes;  // "fp32", "tf32", "tf32x3", "fp16", "fp16h"
  std::vector<codegen::WarpGemmParams> warp;
  std::vector<codegen::WgmmaTiling> wgmma;  // --wgmma
  bool ta = false;                          // A passed transposed ([k, m]): the same product
  bool nt = false;                          // B passed transposed ([n, k]): the same product
};

codegen::WarpGemmParams ParseWarp(const std::string& s) {
  codegen::WarpGemmParams p;
  int n =
      std::sscanf(s.c_str(), "%dx%dx%d:%dx%d:s%d", &p.bm, &p.bn, &p.bk, &p.wm, &p.wn, &p.stages);
  if (n != 5 && n != 6)
    Fail(ErrorCode::kInvalidArgument,
         "--warp '{}': want BMxBNxBK:WMxWN[:sSTAGES][:raw][:kgGROUPS][:kSPLIT]", s);
  p.raw_tf32 = s.find(":raw") != std::string::npos;
  if (size_t at = s.find(":kg"); at != std::string::npos) p.kgroups = std::atoi(s.c_str() + at + 3);
  for (size_t at = s.find(":k"); at != std::string::npos; at = s.find(":k", at + 1))
    if (s.compare(at, 3, ":kg") != 0) p.split_k = std::atoi(s.c_str() + at + 2);
  return p;
}

codegen::WgmmaTiling ParseWgmma(const std::string& s) {
  codegen::WgmmaTiling w;
  int n = std::sscanf(s.c_str(), "%dx%dx%d:r%d", &w.bm, &w.bn, &w.stages, &w.row_bytes);
  if (n != 3 && n != 4)
    Fail(ErrorCode::kInvalidArgument, "--wgmma '{}': want BMxBNxSTAGES[:rROWBYTES]", s);
  return w;
}

// The rows x cols row-major matrix v stored transposed ([cols][rows]).
std::vector<float> Transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  return t;
}

cl::Buffer Upload(const cl::Context& ctx, const std::vector<float>& v) {
  cl::Buffer buf(ctx, v.size() * sizeof(float));
  buf.Write(ctx, v.data(), v.size() * sizeof(float));
  return buf;
}

// texel_gemm's engine in each requested mode on p (C = A B, row-major), one line per tiling.
void RunEngine(const std::shared_ptr<cl::Context>& ctx, Problem& p, const GemmRuns& runs) {
  api::GemmKernels kernels(ctx);
  codegen::Target target = backends::NativeBackend::TargetOf(ctx->info());
  double flop = 2.0 * static_cast<double>(p.m) * p.n * p.k;
  cl::Buffer ha, hb, hc;  // f16 copies, made when a mode asks for them
  // A and B as passed: row-major, or stored transposed with --layout tn, nt or tt.
  std::vector<float> a = runs.ta ? Transposed(p.a, p.m, p.k) : p.a;
  std::vector<float> b = runs.nt ? Transposed(p.b, p.k, p.n) : p.b;
  cl::Buffer at = runs.ta ? Upload(*ctx, a) : cl::Buffer(),
             bt = runs.nt ? Upload(*ctx, b) : cl::Buffer();
  // The label's layout: A and B as passed, when not both as stored.
  std::string layout =
      runs.ta || runs.nt ? fmt::format(" {}{}", runs.ta ? "t" : "n", runs.nt ? "t" : "n") : "";
  for (const std::string& name : runs.modes) {
    bool half = name == "fp16h";
    codegen::GemmProblem g;
    g.m = p.m, g.n = p.n, g.k = p.k, g.lda = runs.ta ? p.m : p.k, g.ldb = runs.nt ? p.k : p.n;
    g.ldc = p.n;
    g.trans_a = runs.ta, g.trans_b = runs.nt;
    g.elem = half ? DType::kFloat16 : DType::kFloat32;
    if (!ParseComputeMode(half ? "fp16" : name, &g.mode))
      Fail(ErrorCode::kInvalidArgument, "--modes: unknown mode '{}'", name);
    if (half && !ha.mem()) {
      auto upload = [&](const std::vector<float>& v) {
        std::vector<uint16_t> h(v.size());
        for (size_t i = 0; i < v.size(); ++i) h[i] = FloatToHalf(v[i]);
        cl::Buffer b(*ctx, h.size() * 2);
        b.Write(*ctx, h.data(), h.size() * 2);
        return b;
      };
      ha = upload(a), hb = upload(b);
      hc = cl::Buffer(*ctx, static_cast<size_t>(p.m * p.n) * 2);
    }
    api::GemmOperands ops{half ? ha.mem() : (runs.ta ? at.mem() : p.da.mem()),
                          half ? hb.mem() : (runs.nt ? bt.mem() : p.db.mem()),
                          half ? hc.mem() : p.dc.mem(), 1.0f, 0.0f};
    // The heuristic's choice, then each --warp tiling, then each --wgmma one.
    std::vector<std::pair<const codegen::WarpGemmParams*, const codegen::WgmmaTiling*>> tilings{
        {nullptr, nullptr}};
    for (const auto& w : runs.warp) tilings.push_back({&w, nullptr});
    for (const auto& w : runs.wgmma) tilings.push_back({nullptr, &w});
    for (auto [params, forced] : tilings) {
      codegen::WarpGemmParams chosen = params ? *params : codegen::WarpGemmParams{};
      std::string label;
      try {
        label = fmt::format("gemm {}{} {}{}", name, layout,
                            kernels.KernelClass(g, target, params, forced),
                            params || forced ? "" : " *");
      } catch (const Error&) {  // reported below, where the product is checked and run
        label = fmt::format("gemm {}{} {}", name, layout,
                            params   ? params->ToString()
                            : forced ? forced->ToString()
                                     : std::string("(heuristic)"));
      }
      double secs = 0;
      try {
        api::CheckGemm(g, ops, target);
        // A forced tiling runs the problem with its operands packed where they must be.
        auto packed = codegen::PackForWgmma(g);
        if (auto why = forced
                           ? codegen::CheckWgmmaTiling(*forced, packed ? packed->packed : g, target)
                       : params ? codegen::CheckWarpGemmParams(chosen, g, target)
                                : std::nullopt)
          Fail(ErrorCode::kInvalidArgument, "{}", *why);
        std::vector<uint8_t> nan(static_cast<size_t>(p.m * p.n) * DTypeSize(g.elem), 0xff);
        (half ? hc : p.dc).Write(*ctx, nan.data(), nan.size());
        secs = bench::TimeRuns(*ctx, g_seconds, [&] {
          kernels.Enqueue(g, ops, nullptr, {}, nullptr, target, params ? &chosen : nullptr, forced);
        });
      } catch (const Error& e) {
        std::printf("%5lldx%-5lldx%-5lld  %-36s  skipped: %s\n", (long long)p.m, (long long)p.n,
                    (long long)p.k, label.c_str(), e.what());
        continue;
      }
      std::string device_us;
      if (g_profile > 0) {
        std::vector<double> us;
        for (int r = 0; r < g_profile; ++r) {
          cl::Event ev;
          kernels.Enqueue(g, ops, nullptr, {}, ev.out(), target, params ? &chosen : nullptr,
                          forced);
          ev.Wait();
          us.push_back(static_cast<double>(ev.DurationNs()) * 1e-3);
        }
        std::sort(us.begin(), us.end());
        device_us = fmt::format("  device {:.2f} us", us[us.size() / 2]);
      }
      std::vector<float> c(static_cast<size_t>(p.m * p.n));
      if (half) {
        std::vector<uint16_t> h(c.size());
        hc.Read(*ctx, h.data(), h.size() * 2);
        for (size_t i = 0; i < c.size(); ++i) c[i] = HalfToFloat(h[i]);
      } else {
        c = Read(*ctx, p.dc, c.size());
      }
      std::printf("%5lldx%-5lldx%-5lld  %-36s %9.3f %8.3f %38s %9.2e%s\n", (long long)p.m,
                  (long long)p.n, (long long)p.k, label.c_str(), secs * 1e3, flop / secs * 1e-12,
                  "", SampledError(p, c), device_us.c_str());
      std::fflush(stdout);
    }
  }
}

void RunSize(const std::shared_ptr<cl::Context>& shared, int64_t m, int64_t n, int64_t k,
             bool clblast, const std::vector<codegen::MatMulParams>& extra,
             const GemmRuns& engine) {
  const cl::Context& ctx = *shared;
  Problem p{m, n, k, std::vector<float>(m * k), std::vector<float>(k * n), {}, {}, {}};
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : p.a) v = dist(rng);
  for (float& v : p.b) v = dist(rng);
  p.da = cl::Buffer(ctx, p.a.size() * sizeof(float));
  p.db = cl::Buffer(ctx, p.b.size() * sizeof(float));
  p.dc = cl::Buffer(ctx, static_cast<size_t>(m * n) * sizeof(float));
  p.da.Write(ctx, p.a.data(), p.a.size() * sizeof(float));
  p.db.Write(ctx, p.b.data(), p.b.size() * sizeof(float));
  double flop = 2.0 * static_cast<double>(m) * n * k;

  double cl_s = 0;
  std::vector<float> ref;
  if (clblast) {
    cl_s = RunClblast(ctx, p);
    ref = Read(ctx, p.dc, m * n);
  }
  // Explicit tiled parameters run on products of more than 8 rows, direct ones on all.
  std::vector<const codegen::MatMulParams*> runs{nullptr};
  for (const auto& e : extra)
    if (e.kind == codegen::MatMulParams::Kind::kDirect || m > 8) runs.push_back(&e);
  for (const codegen::MatMulParams* params : runs) {
    std::string label;
    double tx_s = 0;
    try {
      tx_s = RunTexel(ctx, p, params, &label);
    } catch (const Error& e) {
      std::printf("%5lldx%-5lldx%-5lld  %-36s  skipped: %s\n", (long long)m, (long long)n,
                  (long long)k, params ? "explicit" : "heuristic", e.what());
      continue;
    }
    std::vector<float> c = Read(ctx, p.dc, m * n);
    double err_cl = 0;
    for (size_t i = 0; i < ref.size(); ++i)
      if (double d = std::fabs(c[i] - ref[i]); !(d <= err_cl)) err_cl = d;  // NaN sticks
    std::printf("%5lldx%-5lldx%-5lld  %-36s %9.3f %8.3f", (long long)m, (long long)n, (long long)k,
                (label + (params ? "" : " *")).c_str(), tx_s * 1e3, flop / tx_s * 1e-12);
    if (clblast)
      std::printf(" %9.3f %8.3f %6.2fx %9.2e", cl_s * 1e3, flop / cl_s * 1e-12, cl_s / tx_s,
                  err_cl);
    std::printf(" %9.2e\n", SampledError(p, c));
    std::fflush(stdout);
  }
  if (!engine.modes.empty()) RunEngine(shared, p, engine);
}

int Main(int argc, char** argv) {
  std::string device;
  std::vector<int64_t> sizes{512, 1024, 2048, 4096}, gemv;
  std::string shapes;
  std::vector<codegen::MatMulParams> extra;
  bool clblast = true;
  GemmRuns engine;
  bench::ForEachFlag(argc, argv, [&](const std::string& arg, const bench::FlagValue& value) {
    if (arg == "--device")
      device = value();
    else if (arg == "--sizes")
      sizes = ParseList(value());
    else if (arg == "--gemv")
      gemv = ParseList(value());
    else if (arg == "--shapes")
      shapes = value();
    else if (arg == "--seconds")
      g_seconds = std::stod(value());
    else if (arg == "--profile")
      g_profile = std::stoi(value());
    else if (arg == "--params")
      extra.push_back(ParseParams(value()));
    else if (arg == "--no-clblast")
      clblast = false;
    else if (arg == "--modes") {
      std::string v = value();
      for (size_t pos = 0; pos < v.size();) {
        size_t end = std::min(v.find(',', pos), v.size());
        engine.modes.push_back(v.substr(pos, end - pos));
        pos = end + 1;
      }
    } else if (arg == "--warp") {
      engine.warp.push_back(ParseWarp(value()));
    } else if (arg == "--wgmma") {
      engine.wgmma.push_back(ParseWgmma(value()));
    } else if (arg == "--layout") {
      std::string v = value();
      if (v != "nn" && v != "nt" && v != "tn" && v != "tt")
        Fail(ErrorCode::kInvalidArgument, "--layout: nn, nt, tn or tt");
      engine.ta = v[0] == 't', engine.nt = v[1] == 't';
    } else
      return false;
    return true;
  });
  auto shared = std::make_shared<cl::Context>(cl::SelectDevice(device));
  const cl::Context& ctx = *shared;
  std::printf("device: %s\n", ctx.info().Label().c_str());
  std::printf("%-19s  %-36s %9s %8s %9s %8s %7s %9s %9s\n", "m x n x k",
              "texel kernel (* heuristic)", "texel ms", "TFLOP/s", "clblas ms", "TFLOP/s", "ratio",
              "err/clbl", "err/host");
  for (int64_t n : sizes) RunSize(shared, n, n, n, clblast, extra, engine);
  for (int64_t n : gemv) RunSize(shared, 1, n, n, clblast, extra, engine);
  for (size_t pos = 0; pos < shapes.size();) {
    size_t end = std::min(shapes.find(',', pos), shapes.size());
    long long m = 0, n = 0, k = 0;
    if (std::sscanf(shapes.substr(pos, end - pos).c_str(), "%lldx%lldx%lld", &m, &n, &k) != 3)
      Fail(ErrorCode::kInvalidArgument, "--shapes: want MxNxK,...");
    RunSize(shared, m, n, k, clblast, extra, engine);
    pos = end + 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return texel::bench::GuardedMain("texel_gemm_bench", Main, argc, argv);
}
