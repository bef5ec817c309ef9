// The run-time routines of CLBlast that plans call (backends/clblast lowers nodes to them):
// registered as library calls, so that the runtime runs such plans without the compiler.
#include <fmt/format.h>

#include <mutex>
#include <string>
#include <string_view>

#include "core/error.h"
#include "runtime/clblast/clblast_library.h"
#include "runtime/library_call.h"

namespace texel::runtime {
namespace {

// The loaded API; an error saying why when CLBlast is missing (a plan made where it was).
const ClblastApi* RequireClblast() {
  std::string why;
  const ClblastApi* api = LoadClblast(&why);
  if (!api) Fail(ErrorCode::kUnsupported, "CLBlast is not available: {}", why);
  return api;
}

// What a CLBlast status means (its own codes; the others are OpenCL error codes).
std::string_view StatusMeaning(CLBlastStatusCode s) {
  switch (s) {
    case CLBlastNotImplemented: return "not implemented";
    case CLBlastInvalidMatrixA: return "matrix A is not a valid buffer";
    case CLBlastInvalidMatrixB: return "matrix B is not a valid buffer";
    case CLBlastInvalidMatrixC: return "matrix C is not a valid buffer";
    case CLBlastInvalidDimension: return "M, N and K must be positive";
    case CLBlastInvalidLeadDimA: return "leading dimension of A too small";
    case CLBlastInvalidLeadDimB: return "leading dimension of B too small";
    case CLBlastInvalidLeadDimC: return "leading dimension of C too small";
    case CLBlastInsufficientMemoryA: return "A's buffer is too small";
    case CLBlastInsufficientMemoryB: return "B's buffer is too small";
    case CLBlastInsufficientMemoryC: return "C's buffer is too small";
    case CLBlastInvalidBatchCount: return "the batch count must be positive";
    case CLBlastInvalidLocalMemUsage: return "not enough local memory";
    case CLBlastDatabaseError: return "no tuning database entry for the device";
    case CLBlastOpenCLBuildProgramFailure: return "its kernel failed to compile";
    case CLBlastOpenCLOutOfResources: return "out of resources";
    default: return "an OpenCL error";
  }
}

// CLBlast's calls, one at a time in the process: two threads whose first calls build CLBlast's
// tuning databases at once free each other's entries (AddressSanitizer: a heap use after free
// in clblast::Database's constructor, NodeTimerTest.CompilesMeasuringOnTwoThreads), and texel
// lets sessions run on several threads. Process-wide, as CLBlast's own caches are.
std::mutex& CallLock() {
  static std::mutex mu;
  return mu;
}

void CheckStatus(CLBlastStatusCode status, const char* routine) {
  if (status != CLBlastSuccess)
    Fail(ErrorCode::kDevice, "CLBlast {} failed with status {} ({})", routine,
         static_cast<int>(status), StatusMeaning(status));
}

// args: the Gemm fields in order; buffers: a, b, out.
void EnqueueSgemm(cl_command_queue queue, const std::vector<cl_mem>& buf,
                  const std::vector<int64_t>& args, cl_event* event) {
  const ClblastApi* api = RequireClblast();
  TEXEL_CHECK(buf.size() == 3 && args.size() == 8, "clblast.sgemm: bad step");
  auto u = [&](size_t i) { return static_cast<size_t>(args[i]); };
  size_t batch = u(0), m = u(1), n = u(2), k = u(3);
  auto trans = [](int64_t t) { return t ? CLBlastTransposeYes : CLBlastTransposeNo; };
  std::lock_guard<std::mutex> lock(CallLock());
  CheckStatus(
      api->sgemm_strided_batched(CLBlastLayoutRowMajor, trans(args[6]), trans(args[7]), m, n, k,
                                 1.0f, buf[0], 0, args[6] ? m : k, u(4), buf[1], 0, args[7] ? k : n,
                                 u(5), 0.0f, buf[2], 0, n, m * n, batch, &queue, event),
      "SgemmStridedBatched");
}

// args: the ConvGemm fields in order; buffers: x, w, y.
void EnqueueSconvgemm(cl_command_queue queue, const std::vector<cl_mem>& buf,
                      const std::vector<int64_t>& args, cl_event* event) {
  const ClblastApi* api = RequireClblast();
  TEXEL_CHECK(buf.size() == 3 && args.size() == 13, "clblast.sconvgemm: bad step");
  auto u = [&](size_t i) { return static_cast<size_t>(args[i]); };
  std::lock_guard<std::mutex> lock(CallLock());
  CheckStatus(api->sconvgemm(CLBlastKernelModeCrossCorrelation, u(0), u(1), u(2), u(3), u(4), u(5),
                             u(6), u(7), u(8), u(9), u(10), u(11), u(12), buf[0], 0, buf[1], 0,
                             buf[2], 0, &queue, event),
              "Sconvgemm");
}

}  // namespace

void RegisterClblastCalls() {
  RegisterLibraryCall("clblast.sgemm", EnqueueSgemm);
  RegisterLibraryCall("clblast.sconvgemm", EnqueueSconvgemm);
}

}  // namespace texel::runtime
