// texel_fault_sweep: every OpenCL call of a model's compile and run made to fail, one at a time.
//
//   texel_fault_sweep MODEL [--points buffer,image,...] [--every K] [--set NAME=VALUE ...]
//                           [--bind host|buffer] [--device NAME] [--max-rss-growth-mb M]
//
// One texel context for the whole sweep. A pass compiles MODEL (--set: compile options as
// texel_compile_options_t::settings lines, e.g. storage=texture, precision=fp16), makes a
// session, binds random inputs and the outputs (--bind host: host memory; buffer: cl_mem
// objects of the tool's own, inputs at the device's base alignment, so that texel makes
// sub-buffers of them, outputs at 4 bytes, so that it copies), runs it and reads the outputs.
// A clean pass counts the OpenCL calls at each fault point (runtime/cl/fault_injection.h);
// then, for each point and each call n of that count (every K-th with --every), the pass is
// repeated with the n-th call failing. Each must end in one of two ways:
//   - an error: status TEXEL_ERROR_DEVICE, and a message naming an OpenCL call of that point
//     and the error code the injector returned;
//   - for build faults only, success with outputs bit-identical to the clean pass (a program
//     binary from the cache that fails to build is rebuilt from source).
// After each pass every model and session is released; the context's reference count must be
// back where it was (on drivers that count one reference per live buffer, image, program,
// kernel and event, as PoCL does: the tool checks that first), and a clean pass on the same
// context must give the same outputs. At the end the program cache holds only whole entries,
// and resident memory after the first tenth of the passes and at the end differ by at most M MB
// (default 64). Exit status 0 when every pass held, 1 otherwise, 2 on bad usage.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <texel/texel.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <texel/texel.hpp>
#include <vector>

#include "common/tool_support.h"
#include "runtime/cl/device.h"
#include "runtime/cl/fault_injection.h"
#include "runtime/cl/program_cache.h"

namespace {

namespace fs = std::filesystem;
namespace inject = texel::cl;
using inject::FaultPoint;
using Bytes = std::vector<std::vector<uint8_t>>;

struct Options {
  std::string model, device;
  texel::ModelOptions compile;
  std::vector<FaultPoint> points;
  long every = 1;
  bool bind_buffers = false;
  double max_rss_growth_mb = 64;
};

Options Parse(int argc, char** argv) {
  texel::test::ArgReader args(argc, argv, "texel_fault_sweep",
                              "texel_fault_sweep MODEL [--points P,...] [--every K] "
                              "[--set NAME=VALUE ...] [--bind host|buffer] [--device NAME] "
                              "[--max-rss-growth-mb M]");
  Options o;
  while (args.Next()) {
    const std::string& a = args.arg();
    if (a == "--points") {
      std::string list = args.Value();
      for (size_t at = 0; at <= list.size();) {
        size_t comma = std::min(list.find(',', at), list.size());
        std::string name = list.substr(at, comma - at);
        auto p = inject::ParseFaultPoint(name);
        if (!p) args.Fail("unknown fault point '" + name + "'");
        o.points.push_back(*p);
        at = comma + 1;
      }
    } else if (a == "--every") {
      o.every = static_cast<long>(args.Number(1));
    } else if (a == "--max-rss-growth-mb") {
      o.max_rss_growth_mb = args.Number(0);
    } else if (a == "--set") {
      o.compile.settings += args.Value() + "\n";
    } else if (a == "--bind") {
      std::string how = args.Value();
      if (how != "host" && how != "buffer") args.Fail("--bind '" + how + "': want host or buffer");
      o.bind_buffers = how == "buffer";
    } else if (a == "--device") {
      o.device = args.Value();
    } else {
      args.Model(o.model);
    }
  }
  if (o.model.empty()) args.Fail("no model");
  if (o.points.empty())
    for (int p = 0; p < inject::kFaultPointCount; ++p)
      o.points.push_back(static_cast<FaultPoint>(p));
  return o;
}

// The OpenCL calls each point covers, as the runtime's messages name them.
const std::regex& CallsOf(FaultPoint p) {
  static const std::regex kCalls[] = {
      std::regex("clCreate(Sub)?Buffer"),
      std::regex("clCreateImage"),
      std::regex("clCreateProgramWithSource|OpenCL build failed|sm_90a"),
      std::regex("clCreateKernel"),
      std::regex("clEnqueue(NDRangeKernel|BarrierWithWaitList|MarkerWithWaitList)"),
      std::regex("clEnqueue(Read|Write|Copy|Fill)(Buffer|Image)"),
      std::regex("clWaitForEvents|clFinish"),
  };
  return kCalls[static_cast<int>(p)];
}

// The tool's side of one context: the queue, the model's inputs and outputs, and (--bind
// buffer) the cl_mem objects they live in.
class Io {
 public:
  Io(texel::Context& ctx, bool buffers) : buffers_(buffers) {
    texel::Check(texel_context_get_queue(ctx.get(), &queue_));
    cl_device_id device = nullptr;
    cl_uint align_bits = 0;
    Check(clGetCommandQueueInfo(queue_, CL_QUEUE_CONTEXT, sizeof(context_), &context_, nullptr));
    Check(clGetCommandQueueInfo(queue_, CL_QUEUE_DEVICE, sizeof(device), &device, nullptr));
    Check(clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits,
                          nullptr));
    align_ = std::max<size_t>(align_bits / 8, 16);
  }
  ~Io() {
    for (cl_mem m : mems_) clReleaseMemObject(m);
  }
  cl_command_queue queue() const { return queue_; }
  cl_context context() const { return context_; }

  // Binds inputs (random, made at the first call) and outputs; after Run, Read gives outputs.
  void Bind(texel::Session& s, const std::vector<texel_tensor_info_t>& ins,
            const std::vector<texel_tensor_info_t>& outs) {
    if (inputs_.empty()) Allocate(ins, outs);
    for (size_t i = 0; i < ins.size(); ++i)
      s.BindInput(ins[i].name,
                  buffers_ ? texel::Tensor::Buffer(mems_[i], align_)
                           : texel::Tensor::Host(static_cast<const void*>(inputs_[i].data()),
                                                 inputs_[i].size()));
    for (size_t i = 0; i < outs.size(); ++i) {
      outputs_[i].assign(outs[i].bytes, 0xAB);
      s.BindOutput(outs[i].name, buffers_
                                     ? texel::Tensor::Buffer(mems_[ins.size() + i], 4)
                                     : texel::Tensor::Host(static_cast<void*>(outputs_[i].data()),
                                                           outputs_[i].size()));
    }
  }
  Bytes Read() {
    for (size_t i = 0; buffers_ && i < outputs_.size(); ++i)
      Check(clEnqueueReadBuffer(queue_, mems_[inputs_.size() + i], CL_TRUE, 4, outputs_[i].size(),
                                outputs_[i].data(), 0, nullptr, nullptr));
    return outputs_;
  }

 private:
  static void Check(cl_int err) {
    if (err != CL_SUCCESS) throw std::runtime_error("the tool's own OpenCL call failed");
  }
  void Allocate(const std::vector<texel_tensor_info_t>& ins,
                const std::vector<texel_tensor_info_t>& outs) {
    for (size_t k = 0; k < ins.size(); ++k)
      inputs_.push_back(texel::test::RandomInput(ins[k], 7 + k));
    outputs_.resize(outs.size());
    if (!buffers_) return;
    cl_int err = CL_SUCCESS;
    for (size_t i = 0; i < ins.size() + outs.size(); ++i) {
      bool in = i < ins.size();
      size_t bytes = in ? inputs_[i].size() + align_ : outs[i - ins.size()].bytes + 4;
      mems_.push_back(clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes, nullptr, &err));
      Check(err);
      if (in)
        Check(clEnqueueWriteBuffer(queue_, mems_.back(), CL_TRUE, align_, inputs_[i].size(),
                                   inputs_[i].data(), 0, nullptr, nullptr));
    }
  }

  bool buffers_;
  cl_command_queue queue_ = nullptr;
  cl_context context_ = nullptr;
  size_t align_ = 16;
  Bytes inputs_, outputs_;
  std::vector<cl_mem> mems_;
};

// One pass: compile, session, bind, run, read. Throws texel::Exception.
Bytes Pass(texel::Context& ctx, const Options& o, Io& io) {
  texel::Model model = texel::Model::FromFile(ctx, o.model, o.compile);
  texel::Session s(model);
  io.Bind(s, model.inputs(), model.outputs());
  s.Run();
  return io.Read();
}

// The context's reference count once its queue has drained (commands still running when a wait
// failed hold their objects until they end) and PoCL's thread has freed what was released
// (shortly after): read until it equals want, or has held still for 100 ms when want is 0;
// at most 2 s.
cl_uint References(const Io& io, cl_uint want = 0) {
  cl_uint refs = 0, last = 0;
  for (int t = 0, still = 0; t < 100 && still < 5; ++t) {
    if (clFinish(io.queue()) != CL_SUCCESS ||
        clGetContextInfo(io.context(), CL_CONTEXT_REFERENCE_COUNT, sizeof(refs), &refs, nullptr) !=
            CL_SUCCESS ||
        (want && refs == want))
      break;
    still = t > 0 && refs == last ? still + 1 : 0;
    last = refs;
    usleep(20000);
  }
  return refs;
}

// Whether the driver counts a context reference per object, so that References can find one
// left behind.
bool ReferencesCountObjects(const Io& io) {
  cl_uint before = References(io);
  cl_int err = CL_SUCCESS;
  cl_mem probe = clCreateBuffer(io.context(), CL_MEM_READ_WRITE, 64, nullptr, &err);
  if (err != CL_SUCCESS) return false;
  cl_uint during = References(io, before + 1);
  clReleaseMemObject(probe);
  return during == before + 1;
}

// Program cache entries that fail their checksum, build records (<key>.sec) without an entry or
// unreadable, and temporary files left behind.
int BadCacheFiles() {
  texel::cl::ProgramCache cache = texel::cl::ProgramCache::Default();
  if (!cache.enabled() || !fs::is_directory(cache.dir())) return 0;
  int bad = 0;
  for (const auto& entry : fs::directory_iterator(cache.dir())) {
    if (!entry.is_regular_file()) continue;
    const std::string key = entry.path().stem().string();
    const bool good = entry.path().extension() == ".sec"
                          ? cache.Load(key) && cache.BuildSeconds(key)
                          : entry.path().extension() == ".bin" && cache.Load(key);
    if (!good) {
      std::fprintf(stderr, "texel_fault_sweep: program cache: bad or partial file %s\n",
                   entry.path().filename().c_str());
      ++bad;
    }
  }
  return bad;
}

struct Sweep {
  const Options& o;
  texel::Context& ctx;
  Io& io;
  Bytes want;
  cl_uint base_refs = 0;
  bool check_refs = false;
  int failures = 0;

  void Fail(const std::string& where, const std::string& why) {
    std::fprintf(stderr, "texel_fault_sweep: %s: %s\n", where.c_str(), why.c_str());
    ++failures;
  }

  // The pass with call n of p failing; returns whether texel recovered (else it failed clearly).
  bool FailingPass(FaultPoint p, int64_t n) {
    const std::string where = std::string(inject::FaultPointName(p)) + ":" + std::to_string(n);
    bool recovered = false;
    inject::ArmFault(p, n);
    try {
      if (Pass(ctx, o, io) != want) Fail(where, "succeeded with different outputs");
      if (p != FaultPoint::kBuild) Fail(where, "succeeded: the injected error was lost");
      recovered = true;
    } catch (const texel::Exception& e) {
      const std::string msg = e.what();
      if (e.status() != TEXEL_ERROR_DEVICE)
        Fail(where, std::string("status ") + texel_status_name(e.status()) + ": " + msg);
      else if (!std::regex_search(msg, CallsOf(p)) ||
               msg.find(inject::CLErrorName(inject::FaultPointError(p))) == std::string::npos)
        Fail(where, "the message names neither the call nor the error: " + msg);
    }
    if (!inject::FaultInjected()) Fail(where, "the pass made fewer calls than the clean one");
    inject::DisarmFaults();
    if (cl_uint refs = check_refs ? References(io, base_refs) : 0; refs != base_refs && check_refs)
      Fail(where, "context reference count " + std::to_string(refs) + " after the pass, " +
                      std::to_string(base_refs) + " before: an OpenCL object was left behind");
    try {
      if (Pass(ctx, o, io) != want) Fail(where, "the next clean pass gave different outputs");
    } catch (const texel::Exception& e) {
      Fail(where, std::string("the next clean pass failed: ") + e.what());
    }
    return recovered;
  }
};

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  try {
    texel::Context ctx(o.device);
    Io io(ctx, o.bind_buffers);
    inject::DisarmFaults();
    Sweep sweep{o, ctx, io, Pass(ctx, o, io)};  // fills the program cache
    sweep.base_refs = References(io);
    sweep.check_refs = ReferencesCountObjects(io);
    inject::DisarmFaults();
    if (Pass(ctx, o, io) != sweep.want) {  // the pass the sweep repeats: programs from the cache
      std::fprintf(stderr, "texel_fault_sweep: two clean passes differ\n");
      return 1;
    }
    std::vector<int64_t> calls;
    long total = 0;
    for (FaultPoint p : o.points) {
      calls.push_back(inject::FaultPointCalls(p));
      total += (calls.back() + o.every - 1) / o.every;
    }
    std::printf("%s: %ld passes; calls per clean pass:", o.model.c_str(), total);
    for (size_t i = 0; i < o.points.size(); ++i)
      std::printf(" %s %lld", inject::FaultPointName(o.points[i]),
                  static_cast<long long>(calls[i]));
    std::printf("\nleft-behind objects: %s\n",
                sweep.check_refs ? "checked by the context's reference count"
                                 : "not checked (the driver counts no reference per object)");

    long done = 0;
    double rss_warm = 0;
    for (size_t i = 0; i < o.points.size(); ++i) {
      long errors = 0, recovered = 0;
      for (int64_t n = 1; n <= calls[i]; n += o.every) {
        (sweep.FailingPass(o.points[i], n) ? recovered : errors) += 1;
        if (++done == std::max(1L, total / 10)) rss_warm = texel::test::ResidentMb();
      }
      std::printf("  %-8s %4lld calls, %4ld swept: %ld clear errors, %ld recovered\n",
                  inject::FaultPointName(o.points[i]), static_cast<long long>(calls[i]),
                  errors + recovered, errors, recovered);
    }
    sweep.failures += BadCacheFiles();
    const double rss_end = texel::test::ResidentMb();
    std::printf("resident memory after a tenth of the passes %.1f MB, at the end %.1f MB\n",
                rss_warm, rss_end);
    if (rss_warm > 0 && rss_end - rss_warm > o.max_rss_growth_mb)
      sweep.Fail("memory", "resident memory grew " + std::to_string(rss_end - rss_warm) +
                               " MB (limit " + std::to_string(o.max_rss_growth_mb) + ")");
    if (sweep.failures) std::fprintf(stderr, "texel_fault_sweep: %d failure(s)\n", sweep.failures);
    return sweep.failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "texel_fault_sweep: %s\n", e.what());
    return 1;
  }
}
