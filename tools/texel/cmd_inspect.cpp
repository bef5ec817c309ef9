// texel inspect: what an artifact holds (its metadata, sections and plan in numbers) and whether
// it will run on each device present, without building anything.
#include <cstdio>

#include "core/error.h"
#include "core/file_io.h"
#include "model_session.h"
#include "runtime/artifact.h"
#include "runtime/plan_check.h"

namespace texel::cli {
namespace {

int RunInspect(const std::string& path) {
  std::shared_ptr<const MappedFile> file = MappedFile::Open(path);
  std::string_view bytes = file->bytes();
  runtime::Artifact a = runtime::ReadArtifact(bytes, path);
  const runtime::PlanInfo& info = a.plan.info;
  std::printf("artifact %s: %s, format version %u\n", path.c_str(),
              FormatBytes(static_cast<int64_t>(bytes.size())).c_str(), a.format_version);
  std::printf("texel    %s\n", info.texel_version.c_str());
  std::printf("model    sha256 %s\n", info.model_sha256.c_str());
  std::printf("options  %s\n", info.options.c_str());
  std::printf("compiled for %s (%s, %s; driver %s; %s)\n", info.device_name.c_str(),
              info.device_vendor.c_str(), info.device_type.c_str(), info.driver_version.c_str(),
              info.platform_version.c_str());
  std::printf("plan     %zu kernels (%s), %zu buffers; %s\n", a.plan.steps.size(),
              KernelMix(a.plan).c_str(), a.plan.buffers.size(),
              FormatMemory(a.plan.memory).c_str());
  for (const auto& [kind, list] :
       {std::pair{"input ", &a.plan.inputs}, {"output", &a.plan.outputs}})
    for (const runtime::TensorBinding& t : *list)
      std::printf("%s   %s: %s[%s]\n", kind, t.name.c_str(),
                  std::string(DTypeName(t.dtype)).c_str(), ShapeStr(t.shape).c_str());
  const runtime::DeviceNeeds& n = a.plan.needs;
  std::printf("needs    %s\n", n.tensor_cores ? "inline PTX, tensor cores (mma.sync)"
                               : n.inline_ptx ? "inline PTX"
                                              : "OpenCL C only (and the extensions it enables)");
  std::printf("sections\n");
  for (const runtime::ArtifactSection& s : a.sections)
    std::printf("  %-12s %10s at %-10llu sha256 %.16s...\n", s.name.c_str(),
                FormatBytes(static_cast<int64_t>(s.size)).c_str(),
                static_cast<unsigned long long>(s.offset), s.sha256.c_str());
  for (const runtime::ProgramBinary& b : a.binaries)
    std::printf("binary   for %s (driver %s, %s), texel %s: %s\n", b.device_name.c_str(),
                b.driver_version.c_str(), b.platform_version.c_str(), b.texel_version.c_str(),
                FormatBytes(static_cast<int64_t>(b.bytes.size())).c_str());
  std::vector<cl::DeviceInfo> devices = cl::ListDevices();
  if (devices.empty()) std::printf("devices  none present\n");
  for (const cl::DeviceInfo& d : devices) {
    std::vector<std::string> missing = runtime::MissingFeatures(a.plan, d);
    bool binary = false;
    for (const runtime::ProgramBinary& b : a.binaries) binary = binary || b.Matches(d);
    if (missing.empty()) {
      std::printf("device   %s: runs (%s)\n", d.Label().c_str(),
                  binary ? "from the artifact's binary" : "program built from source");
      continue;
    }
    std::printf("device   %s: cannot run it; lacks\n", d.Label().c_str());
    for (const std::string& m : missing) std::printf("           %s\n", m.c_str());
  }
  return 0;
}

}  // namespace

Runner AddInspectCommand(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "inspect", "Show what an artifact (.texel) holds and on which present devices it runs");
  auto path = std::make_shared<std::string>();
  cmd->add_option("artifact", *path, "artifact file (texel compile -o FILE.texel)")->required();
  return [path] { return RunInspect(*path); };
}

}  // namespace texel::cli
