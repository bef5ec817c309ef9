// Injected device faults, for tests: makes the n-th OpenCL call of one kind fail with the error a
// real driver returns for it, so that tests can prove every such failure becomes a clear error
// that leaks nothing and leaves the context usable (tests/fault, docs/reliability.md).
//
// Each call site in the runtime's OpenCL layer asks InjectedFault(point) before the real call
// (Guarded does both) and, when it gets an error, skips the call and handles the error as the
// driver's. Until a test first arms or counts, a call costs one relaxed atomic load. Armed
// in-process (ArmFault) or for a whole process by $TEXEL_INJECT_FAULT=POINT:N (the CLI's
// tests), which is read before the first call or arming. Arming and counting are not meant to
// overlap other threads' OpenCL calls: tests arm between passes.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace texel::cl {

enum class FaultPoint {
  kBuffer,    // clCreateBuffer, clCreateSubBuffer: CL_MEM_OBJECT_ALLOCATION_FAILURE
  kImage,     // clCreateImage: CL_MEM_OBJECT_ALLOCATION_FAILURE
  kBuild,     // clBuildProgram, from source or binary: CL_OUT_OF_HOST_MEMORY
  kKernel,    // clCreateKernel: CL_OUT_OF_RESOURCES
  kEnqueue,   // clEnqueueNDRangeKernel, markers and barriers: CL_OUT_OF_RESOURCES
  kTransfer,  // reads, writes, copies and fills of buffers and images: CL_OUT_OF_RESOURCES
  kWait,      // clWaitForEvents, clFinish: CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
};
inline constexpr int kFaultPointCount = 7;

const char* FaultPointName(FaultPoint p);  // "buffer", "image", ...
std::optional<FaultPoint> ParseFaultPoint(std::string_view name);
cl_int FaultPointError(FaultPoint p);  // the error injected at p (above)

// The error for this call at p: CL_SUCCESS, or p's error when this is the armed call.
cl_int InjectedFault(FaultPoint p);

// call() unless this call at p is the armed one; its cl_int result or the injected error.
template <class Call>
cl_int Guarded(FaultPoint p, Call&& call) {
  cl_int err = InjectedFault(p);
  return err != CL_SUCCESS ? err : call();
}

// Arms p: its n-th call from now (n >= 1) fails, once, with error (0: p's own, above); n == 0
// disarms. Resets every count and starts counting calls.
void ArmFault(FaultPoint p, int64_t n, cl_int error = 0);
void DisarmFaults();  // no call fails; calls are still counted
// Calls at p since the last ArmFault/DisarmFaults (or process start).
int64_t FaultPointCalls(FaultPoint p);
// Whether the armed call has happened (the fault was injected).
bool FaultInjected();

}  // namespace texel::cl
