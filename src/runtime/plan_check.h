// Checks of a Plan that comes from outside the compiler (an artifact): its internal consistency,
// and whether a device has what it needs. Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "runtime/cl/device.h"
#include "runtime/plan.h"

namespace texel::runtime {

// Every index in range and every size consistent (buffers, images, constants, bindings, steps,
// the memory plan), so that a Session made from the plan never reads or writes outside the
// memory it allocates. Throws Error(kInvalidModel) naming the part that is wrong.
void CheckPlan(const Plan& plan);

// What device lacks to run plan, one line each ("images (the plan keeps 12 values in images)",
// "extension cl_khr_fp16"); empty when it has everything. Read from the plan itself: its images,
// work-group sizes, library routines, the extensions its program enables, and its DeviceNeeds.
std::vector<std::string> MissingFeatures(const Plan& plan, const cl::DeviceInfo& device);

}  // namespace texel::runtime
