#include "runtime/cl/fault_injection.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <atomic>
#include <charconv>
#include <cstdlib>

namespace texel::cl {
namespace {

constexpr std::array<const char*, kFaultPointCount> kNames = {
    "buffer", "image", "build", "kernel", "enqueue", "transfer", "wait"};

std::atomic<bool> g_active{false};  // counting (and perhaps armed) since a test asked
std::array<std::atomic<int64_t>, kFaultPointCount> g_calls{};
std::atomic<int> g_point{-1};  // the armed point, -1 when none
std::atomic<int64_t> g_nth{0};
std::atomic<cl_int> g_error{0};  // 0: the point's own
std::atomic<bool> g_injected{false};

void Arm(FaultPoint p, int64_t n, cl_int error) {
  g_point.store(-1);
  for (auto& c : g_calls) c.store(0);
  g_injected.store(false);
  g_nth.store(n);
  g_error.store(error);
  if (n >= 1) g_point.store(static_cast<int>(p));
  g_active.store(true);
}

// $TEXEL_INJECT_FAULT=POINT:N arms the process once, before its first OpenCL call.
bool ArmFromEnvironment() {
  const char* spec = std::getenv("TEXEL_INJECT_FAULT");
  if (spec == nullptr || *spec == '\0') return false;
  std::string_view s(spec);
  size_t colon = s.find(':');
  std::optional<FaultPoint> p = ParseFaultPoint(s.substr(0, colon));
  int64_t n = 0;
  const char* end = s.data() + s.size();
  if (colon != std::string_view::npos) {
    auto [ptr, ec] = std::from_chars(s.data() + colon + 1, end, n);
    if (ec != std::errc() || ptr != end) n = 0;
  }
  if (!p || n < 1) {
    fmt::print(stderr,
               "texel: ignoring TEXEL_INJECT_FAULT='{}' (want POINT:N, N >= 1, POINT one of {})\n",
               s, fmt::join(kNames, ", "));
    return false;
  }
  Arm(*p, n, 0);
  return true;
}

// The environment's arming comes first, so that an in-process arming is never replaced by it.
void ReadEnvironmentOnce() { [[maybe_unused]] static const bool armed = ArmFromEnvironment(); }

}  // namespace

const char* FaultPointName(FaultPoint p) { return kNames[static_cast<int>(p)]; }

std::optional<FaultPoint> ParseFaultPoint(std::string_view name) {
  for (int i = 0; i < kFaultPointCount; ++i)
    if (name == kNames[i]) return static_cast<FaultPoint>(i);
  return std::nullopt;
}

cl_int FaultPointError(FaultPoint p) {
  switch (p) {
    case FaultPoint::kBuffer:
    case FaultPoint::kImage: return CL_MEM_OBJECT_ALLOCATION_FAILURE;
    case FaultPoint::kBuild: return CL_OUT_OF_HOST_MEMORY;
    case FaultPoint::kWait: return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    default: return CL_OUT_OF_RESOURCES;
  }
}

cl_int InjectedFault(FaultPoint p) {
  ReadEnvironmentOnce();
  if (!g_active.load(std::memory_order_relaxed)) return CL_SUCCESS;
  const int i = static_cast<int>(p);
  const int64_t call = g_calls[i].fetch_add(1, std::memory_order_relaxed) + 1;
  if (g_point.load(std::memory_order_relaxed) != i || call != g_nth.load(std::memory_order_relaxed))
    return CL_SUCCESS;
  g_injected.store(true);
  cl_int error = g_error.load();
  return error != 0 ? error : FaultPointError(p);
}

void ArmFault(FaultPoint p, int64_t n, cl_int error) {
  ReadEnvironmentOnce();
  Arm(p, n, error);
}

void DisarmFaults() { ArmFault(FaultPoint::kBuffer, 0); }

int64_t FaultPointCalls(FaultPoint p) { return g_calls[static_cast<int>(p)].load(); }

bool FaultInjected() { return g_injected.load(); }

}  // namespace texel::cl
