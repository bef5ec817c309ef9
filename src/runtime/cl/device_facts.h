// A device's facts saved as JSON (`texel devices --facts FILE`), so that a model can be compiled
// for a device that is not on the compiling machine (`texel compile --facts FILE`): the facts
// are everything the compiler reads from DeviceInfo. Thread safety: pure functions.
#pragma once

#include <string>

#include "runtime/cl/device.h"

namespace texel::cl {

std::string DeviceFactsJson(const DeviceInfo& device);

// The facts in path, as DeviceInfo without platform and device handles. Throws Error(kNotFound)
// for a missing file and Error(kInvalidArgument) naming path and the field for a bad one.
DeviceInfo ReadDeviceFacts(const std::string& path);

}  // namespace texel::cl
