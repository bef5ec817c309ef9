// texel devices: every OpenCL platform and device with the facts codegen uses.
#include <cstdio>

#include "commands.h"
#include "runtime/cl/device.h"

namespace texel::cli {

Runner AddDevicesCommand(CLI::App& app) {
  app.add_subcommand("devices", "List OpenCL platforms and devices");
  return [] {
    auto devices = cl::ListDevices();
    if (devices.empty()) {
      std::fprintf(stderr,
                   "texel: error: no OpenCL device found (is an OpenCL driver such as "
                   "pocl-opencl-icd installed?)\n");
      return 1;
    }
    std::fputs(cl::FormatDevices(devices).c_str(), stdout);
    return 0;
  };
}

}  // namespace texel::cli
