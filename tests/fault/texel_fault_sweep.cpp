// texel_fault_sweep: every OpenCL call of a model's compile and run made to fail, one at a time.
//
//   texel_fault_sweep MODEL [--points buffer,image,...] [--every K] [--set NAME=VALUE ...]
//                           [--device NAME] [--max-rss-growth-mb M]
//
// One texel context for the whole sweep. First a clean pass: compile MODEL, make a session, run
// it on random inputs, and count the OpenCL calls at each fault point (runtime/cl/
// fault_injection.h); --set gives compile options as texel_compile_options_t::settings lines
// (storage=texture, precision=fp16, backends=clblast,native). Then, for each point and each call n
// of that count (every K-th with
// --every), the same pass with the n-th call failing. Each pass must end in one of two ways:
//   - an error: status TEXEL_ERROR_DEVICE and a message naming the OpenCL call and the error
//     code the driver would have returned;
//   - success with outputs bit-identical to the clean pass (texel recovered: a program binary
//     from the cache that fails to build is rebuilt from source).
// After each pass every model and session is released, and the context's reference count must
// be back where it was (each buffer, image, program, kernel and event holds one on PoCL: an
// OpenCL object left behind shows here), and a clean pass on the same context must succeed
// with the same outputs. At the end the program cache holds only whole entries, and resident
// memory after the first tenth of the passes and at the end differ by at most M MB (default 64).
// Exit status 0 when every pass held, 1 otherwise, 2 on bad usage.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <texel/texel.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <texel/texel.hpp>
#include <vector>

#include "common/tool_support.h"
#include "runtime/cl/device.h"
#include "runtime/cl/fault_injection.h"
#include "runtime/cl/program_cache.h"

namespace {

namespace fs = std::filesystem;
using texel::cl::FaultPoint;
using texel::test::RandomInput;
using texel::test::ResidentMb;

struct Options {
  std::string model, device;
  texel::ModelOptions compile;
  std::vector<FaultPoint> points;
  long every = 1;
  double max_rss_growth_mb = 64;
};

Options Parse(int argc, char** argv) {
  texel::test::ArgReader args(argc, argv, "texel_fault_sweep",
                              "texel_fault_sweep MODEL [--points P,...] [--every K] "
                              "[--set NAME=VALUE ...] [--device NAME] [--max-rss-growth-mb M]");
  Options o;
  while (args.Next()) {
    const std::string& a = args.arg();
    if (a == "--points") {
      std::string list = args.Value();
      for (size_t at = 0; at <= list.size();) {
        size_t comma = std::min(list.find(',', at), list.size());
        std::string name = list.substr(at, comma - at);
        auto p = texel::cl::ParseFaultPoint(name);
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
    } else if (a == "--device") {
      o.device = args.Value();
    } else {
      args.Model(o.model);
    }
  }
  if (o.model.empty()) args.Fail("no model");
  if (o.points.empty())
    for (int p = 0; p < texel::cl::kFaultPointCount; ++p)
      o.points.push_back(static_cast<FaultPoint>(p));
  return o;
}

// The context's reference count once its queue has drained (commands still running when a wait
// failed hold their objects until they end).
cl_uint ContextReferences(texel::Context& ctx) {
  cl_command_queue q = nullptr;
  texel::Check(texel_context_get_queue(ctx.get(), &q));
  cl_context c = nullptr;
  cl_uint refs = 0;
  if (clFinish(q) != CL_SUCCESS ||
      clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(c), &c, nullptr) != CL_SUCCESS ||
      clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof(refs), &refs, nullptr) != CL_SUCCESS)
    return 0;
  return refs;
}

using Bytes = std::vector<std::vector<uint8_t>>;

// One pass: compile, session, bind, run. Outputs into *out; throws texel::Exception.
void Pass(texel::Context& ctx, const Options& o, Bytes& inputs, Bytes* out) {
  texel::Model model = texel::Model::FromFile(ctx, o.model, o.compile);
  std::vector<texel_tensor_info_t> ins = model.inputs(), outs = model.outputs();
  if (inputs.empty())
    for (size_t k = 0; k < ins.size(); ++k) inputs.push_back(RandomInput(ins[k], 7 + k));
  texel::Session s(model);
  out->assign(outs.size(), {});
  for (size_t i = 0; i < ins.size(); ++i)
    s.BindInput(ins[i].name,
                texel::Tensor::Host(static_cast<const void*>(inputs[i].data()), inputs[i].size()));
  for (size_t i = 0; i < outs.size(); ++i) {
    (*out)[i].assign(outs[i].bytes, 0xAB);
    s.BindOutput(outs[i].name,
                 texel::Tensor::Host(static_cast<void*>((*out)[i].data()), (*out)[i].size()));
  }
  s.Run();
}

// The error each point's calls fail with (fault_injection.h) as CheckCL names it.
const char* ExpectedCode(FaultPoint p) {
  switch (p) {
    case FaultPoint::kBuffer:
    case FaultPoint::kImage: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case FaultPoint::kBuild: return "CL_OUT_OF_HOST_MEMORY";
    case FaultPoint::kWait: return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    default: return "CL_OUT_OF_RESOURCES";
  }
}

// Program cache entries that fail their checksum, and temporary files left behind.
int BadCacheFiles() {
  texel::cl::ProgramCache cache = texel::cl::ProgramCache::Default();
  if (!cache.enabled() || !fs::is_directory(cache.dir())) return 0;
  int bad = 0;
  for (const auto& entry : fs::directory_iterator(cache.dir())) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".bin" || !cache.Load(entry.path().stem().string())) {
      std::fprintf(stderr, "texel_fault_sweep: program cache: bad or partial file %s\n",
                   name.c_str());
      ++bad;
    }
  }
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  try {
    texel::Context ctx(o.device);
    const cl_uint base_refs = ContextReferences(ctx);
    Bytes inputs, want, got;
    texel::cl::DisarmFaults();
    Pass(ctx, o, inputs, &want);  // fills the program cache
    texel::cl::DisarmFaults();
    Pass(ctx, o, inputs, &got);  // the pass the sweep repeats: programs from the cache
    if (got != want) {
      std::fprintf(stderr, "texel_fault_sweep: two clean passes differ\n");
      return 1;
    }
    std::vector<int64_t> calls;
    long total = 0;
    for (FaultPoint p : o.points) {
      calls.push_back(texel::cl::FaultPointCalls(p));
      total += (calls.back() + o.every - 1) / o.every;
    }
    std::printf("%s: %ld passes; calls per clean pass:", o.model.c_str(), total);
    for (size_t i = 0; i < o.points.size(); ++i)
      std::printf(" %s %lld", texel::cl::FaultPointName(o.points[i]),
                  static_cast<long long>(calls[i]));
    std::printf("\n");

    int failures = 0;
    long done = 0;
    double rss_warm = 0;
    for (size_t i = 0; i < o.points.size(); ++i) {
      const FaultPoint p = o.points[i];
      long errors = 0, recovered = 0;
      for (int64_t n = 1; n <= calls[i]; n += o.every) {
        std::string where = std::string(texel::cl::FaultPointName(p)) + ":" + std::to_string(n);
        auto fail = [&](const std::string& why) {
          std::fprintf(stderr, "texel_fault_sweep: %s: %s\n", where.c_str(), why.c_str());
          ++failures;
        };
        texel::cl::ArmFault(p, n);
        try {
          Pass(ctx, o, inputs, &got);
          if (got != want) fail("succeeded with different outputs");
          ++recovered;
        } catch (const texel::Exception& e) {
          const std::string msg = e.what();
          if (e.status() != TEXEL_ERROR_DEVICE)
            fail(std::string("status ") + texel_status_name(e.status()) + ": " + msg);
          else if (msg.find(ExpectedCode(p)) == std::string::npos ||
                   msg.find("failed") == std::string::npos)
            fail("the message names neither the call nor the error: " + msg);
          ++errors;
        }
        if (!texel::cl::FaultInjected()) fail("the pass made fewer calls than the clean one");
        texel::cl::DisarmFaults();
        // PoCL frees released objects on its own thread, shortly after the queue drains.
        cl_uint refs = ContextReferences(ctx);
        for (int t = 0; t < 100 && refs != base_refs; ++t) {
          usleep(20000);
          refs = ContextReferences(ctx);
        }
        if (refs != base_refs)
          fail("context reference count " + std::to_string(refs) + " after the pass, " +
               std::to_string(base_refs) + " before: an OpenCL object was left behind");
        try {
          Pass(ctx, o, inputs, &got);
          if (got != want) fail("the next clean pass gave different outputs");
        } catch (const texel::Exception& e) {
          fail(std::string("the next clean pass failed: ") + e.what());
        }
        if (++done == std::max(1L, total / 10)) rss_warm = ResidentMb();
      }
      std::printf("  %-8s %4lld calls, %4ld swept: %ld clear errors, %ld recovered\n",
                  texel::cl::FaultPointName(p), static_cast<long long>(calls[i]),
                  errors + recovered, errors, recovered);
    }
    failures += BadCacheFiles();
    const double rss_end = ResidentMb();
    std::printf("resident memory after a tenth of the passes %.1f MB, at the end %.1f MB\n",
                rss_warm, rss_end);
    if (rss_warm > 0 && rss_end - rss_warm > o.max_rss_growth_mb) {
      std::fprintf(stderr, "texel_fault_sweep: resident memory grew %.1f MB (limit %.1f)\n",
                   rss_end - rss_warm, o.max_rss_growth_mb);
      ++failures;
    }
    if (failures) std::fprintf(stderr, "texel_fault_sweep: %d failure(s)\n", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "texel_fault_sweep: %s\n", e.what());
    return 1;
  }
}
