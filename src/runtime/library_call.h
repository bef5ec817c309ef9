// Library calls: plan steps that enqueue a routine of an external library (CLBlast's, which a
// backend lowers nodes to) instead of launching a generated kernel, on texel's queue and
// buffers. Routines are registered under a name ("clblast.sgemm"; the runtime's own are there
// before the first lookup, runtime/clblast/); a plan step names the routine and its integer
// arguments (sizes, offsets, flags), so plans stay plain data and the runtime, alone, runs them.
// Thread safety: lookups and registrations are safe from any thread.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace texel::runtime {

// Enqueues the routine on `queue` over `buffers` (the step's buffers, in order) with `args`;
// sets *event when event is not null. Throws Error (naming the routine and status) on failure.
using LibraryCall = std::function<void(cl_command_queue queue, const std::vector<cl_mem>& buffers,
                                       const std::vector<int64_t>& args, cl_event* event)>;

void RegisterLibraryCall(const std::string& name, LibraryCall call);
const LibraryCall* FindLibraryCall(std::string_view name);  // nullptr when unknown

}  // namespace texel::runtime
