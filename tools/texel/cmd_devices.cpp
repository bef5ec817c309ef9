// texel devices: every OpenCL platform and device with the facts codegen uses.
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "core/error.h"
#include "core/file_io.h"
#include "runtime/cl/device.h"
#include "runtime/cl/device_facts.h"

namespace texel::cli {

Runner AddDevicesCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List OpenCL platforms and devices");
  struct Args {
    std::string facts, device;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--facts", a->facts,
                  "write the facts of one device (-d) to FILE, for texel compile --facts");
  cmd->add_option("--device,-d", a->device, "with --facts: gpu, cpu, P:D or a name substring");
  return [a] {
    if (!a->facts.empty()) {
      cl::DeviceInfo device = cl::SelectDevice(a->device);
      WriteFileAtomically(a->facts, cl::DeviceFactsJson(device));
      std::printf("wrote %s: the facts of %s\n", a->facts.c_str(), device.Label().c_str());
      return 0;
    }
    if (!a->device.empty())
      Fail(ErrorCode::kInvalidArgument, "--device: selects the device whose --facts to write");
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
