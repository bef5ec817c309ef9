// texel_soak: many sessions of one model on one context, on several threads, for a long time.
//
//   texel_soak MODEL [--threads N] [--runs N | --seconds S] [--own-context] [--device NAME]
//                    [--max-rss-growth-mb M]
//
// Compiles MODEL once. By default the OpenCL context and in-order queue are the tool's own,
// made with plain OpenCL calls and adopted (texel_context_adopt), as a host framework's would
// be; --own-context lets texel make them. Before the threads start, one session computes each
// thread's reference outputs for two input sets (random, from the thread's seed). Then every
// thread makes its own session and runs it N times (or for S seconds), alternating the two sets
// through host memory, and compares each output bit for bit with its reference. Resident
// memory (/proc/self/statm) is sampled once every thread has done a tenth of its runs (or after
// a tenth of the time) and again at the end: growth past --max-rss-growth-mb (default 32) fails.
// Exit status 0 when every run matched and memory stayed flat, 1 otherwise, 2 on bad usage.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <texel/texel.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <texel/texel.hpp>
#include <thread>
#include <vector>

#include "common/tool_support.h"

namespace {

using texel::test::RandomInput;
using texel::test::ResidentMb;

struct Options {
  std::string model, device;
  int threads = 8;
  long runs = 1000;
  double seconds = 0;  // > 0: run for this long instead of `runs` times
  bool own_context = false;
  double max_rss_growth_mb = 32;
};

Options Parse(int argc, char** argv) {
  texel::test::ArgReader args(argc, argv, "texel_soak",
                              "texel_soak MODEL [--threads N] [--runs N | --seconds S] "
                              "[--own-context] [--device NAME] [--max-rss-growth-mb M]");
  Options o;
  while (args.Next()) {
    const std::string& a = args.arg();
    if (a == "--threads")
      o.threads = static_cast<int>(args.Number(1));
    else if (a == "--runs")
      o.runs = static_cast<long>(args.Number(1));
    else if (a == "--seconds")
      o.seconds = args.Number(0.001);
    else if (a == "--own-context")
      o.own_context = true;
    else if (a == "--device")
      o.device = args.Value();
    else if (a == "--max-rss-growth-mb")
      o.max_rss_growth_mb = args.Number(0);
    else
      args.Model(o.model);
  }
  if (o.model.empty()) args.Fail("no model");
  if (!o.own_context && !o.device.empty()) args.Fail("--device goes with --own-context");
  return o;
}

// The host's side: a context and an in-order queue on the first GPU, else the first device.
struct HostQueue {
  cl_context context = nullptr;
  cl_device_id device = nullptr;
  cl_command_queue queue = nullptr;
  HostQueue() {
    cl_platform_id platforms[8];
    cl_uint n = 0;
    if (clGetPlatformIDs(8, platforms, &n) != CL_SUCCESS || n == 0)
      throw std::runtime_error("no OpenCL platform");
    for (cl_device_type type :
         {cl_device_type{CL_DEVICE_TYPE_GPU}, cl_device_type{CL_DEVICE_TYPE_ALL}})
      for (cl_uint p = 0; p < n && !device; ++p)
        if (clGetDeviceIDs(platforms[p], type, 1, &device, nullptr) != CL_SUCCESS) device = nullptr;
    if (!device) throw std::runtime_error("no OpenCL device");
    cl_int err = CL_SUCCESS;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) throw std::runtime_error("clCreateContext failed");
    queue = clCreateCommandQueueWithProperties(context, device, nullptr, &err);
    if (err != CL_SUCCESS) throw std::runtime_error("clCreateCommandQueueWithProperties failed");
  }
  ~HostQueue() {
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
};

using Bytes = std::vector<std::vector<uint8_t>>;  // one entry per input or output

void Bind(texel::Session& s, const std::vector<texel_tensor_info_t>& ins,
          const std::vector<texel_tensor_info_t>& outs, const Bytes& in, Bytes& out) {
  for (size_t i = 0; i < ins.size(); ++i)
    s.BindInput(ins[i].name,
                texel::Tensor::Host(static_cast<const void*>(in[i].data()), in[i].size()));
  for (size_t i = 0; i < outs.size(); ++i)
    s.BindOutput(outs[i].name,
                 texel::Tensor::Host(static_cast<void*>(out[i].data()), out[i].size()));
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  try {
    std::unique_ptr<HostQueue> host;
    std::unique_ptr<texel::Context> ctx;
    if (o.own_context) {
      ctx = std::make_unique<texel::Context>(o.device);
    } else {
      host = std::make_unique<HostQueue>();
      ctx = std::make_unique<texel::Context>(
          texel::Context::Adopt(host->context, host->device, host->queue));
    }
    texel::Model model = texel::Model::FromFile(*ctx, o.model);
    std::vector<texel_tensor_info_t> ins = model.inputs(), outs = model.outputs();

    // Each thread's two input sets and their outputs from one session, before any concurrency.
    std::vector<Bytes> inputs(2 * o.threads), want(2 * o.threads);
    {
      texel::Session s(model);
      for (int i = 0; i < 2 * o.threads; ++i) {
        for (size_t k = 0; k < ins.size(); ++k)
          inputs[i].push_back(RandomInput(ins[k], 1000 * static_cast<uint64_t>(i) + k));
        for (const auto& info : outs) want[i].emplace_back(info.bytes, 0);
        Bind(s, ins, outs, inputs[i], want[i]);
        s.Run();
      }
    }
    for (int t = 0; t < o.threads; ++t)
      if (want[2 * t] == want[2 * t + 1]) {
        std::fprintf(stderr, "texel_soak: thread %d's two input sets give the same outputs\n", t);
        return 1;
      }

    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(o.seconds);
    const long warm_runs = std::max(1L, o.runs / 10);
    std::atomic<long> runs{0}, mismatches{0}, warm{0};
    std::atomic<int> failed{0};
    std::vector<std::string> errors(o.threads);
    double rss_warm = 0;  // written by the one thread that completes the warm-up count
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t)
      threads.emplace_back([&, t] {
        try {
          texel::Session s(model);
          bool counted = false;
          Bytes got[2];
          for (int v = 0; v < 2; ++v)
            for (const auto& info : outs) got[v].emplace_back(info.bytes, 0);
          for (long r = 0;; ++r) {
            if (o.seconds > 0 ? Clock::now() >= deadline : r >= o.runs) break;
            int v = static_cast<int>(r % 2);
            Bind(s, ins, outs, inputs[2 * t + v], got[v]);  // every run: binding is exercised too
            s.Run();
            if (got[v] != want[2 * t + v]) ++mismatches;
            ++runs;
            // The last thread through its warm-up samples resident memory.
            if (!counted && (o.seconds > 0 ? Clock::now() - start >= (deadline - start) / 10
                                           : r + 1 >= warm_runs)) {
              counted = true;
              if (++warm == o.threads) rss_warm = ResidentMb();
            }
          }
        } catch (const std::exception& e) {
          errors[t] = e.what();
          ++failed;
        }
      });
    for (std::thread& th : threads) th.join();
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    if (warm < o.threads) rss_warm = ResidentMb();  // a thread failed before its warm-up
    double rss_end = ResidentMb();
    for (int t = 0; t < o.threads; ++t)
      if (!errors[t].empty())
        std::fprintf(stderr, "texel_soak: thread %d: %s\n", t, errors[t].c_str());
    bool flat = rss_end - rss_warm <= o.max_rss_growth_mb;
    std::printf(
        "texel_soak: %s, %d threads, %ld runs in %.1f s (%.0f runs/s), %ld mismatches, %d failed "
        "threads; resident memory %.1f MB after warm-up, %.1f MB at the end (%+.1f MB, limit "
        "%.0f)%s\n",
        o.model.c_str(), o.threads, runs.load(), secs, runs.load() / secs, mismatches.load(),
        failed.load(), rss_warm, rss_end, rss_end - rss_warm, o.max_rss_growth_mb,
        o.own_context ? "" : "; adopted context and queue");
    return mismatches == 0 && failed == 0 && flat ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "texel_soak: %s\n", e.what());
    return 1;
  }
}
