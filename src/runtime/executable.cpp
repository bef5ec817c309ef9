#include "runtime/executable.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>

#include "core/error.h"
#include "core/file_io.h"
#include "runtime/memory_plan.h"
#include "runtime/plan_check.h"

namespace texel::runtime {

Executable::Executable(std::shared_ptr<cl::Context> ctx, Plan plan, cl::ProgramCache* cache,
                       const std::vector<uint8_t>* binary,
                       const std::map<int, std::string_view>* constant_bytes,
                       const std::function<void(std::string_view)>& release)
    : ctx_(std::move(ctx)), plan_(std::move(plan)) {
  auto t0 = std::chrono::steady_clock::now();
  if (std::any_of(plan_.steps.begin(), plan_.steps.end(),
                  [](const KernelStep& s) { return s.call.empty(); }))
    program_ =
        std::make_unique<cl::Program>(*ctx_, plan_.source, plan_.build_options, cache, binary);
  program_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const BufferDesc& b = plan_.buffers[i];
    if (!b.constant) continue;
    cl::Buffer buf = b.is_image()
                         ? cl::Buffer::Image2D(*ctx_, b.image_width, b.image_height, b.image_half)
                         : cl::Buffer(*ctx_, static_cast<size_t>(b.bytes));
    std::string_view bytes(reinterpret_cast<const char*>(b.constant->bytes.data()),
                           b.constant->bytes.size());
    if (bytes.empty() && constant_bytes && constant_bytes->count(static_cast<int>(i)))
      bytes = constant_bytes->at(static_cast<int>(i));
    TEXEL_CHECK(static_cast<int64_t>(bytes.size()) == b.bytes,
                "constant buffer {} has {} bytes for {}", i, bytes.size(), b.bytes);
    if (b.bytes > 0) buf.Write(*ctx_, bytes.data(), bytes.size());
    if (release && b.constant->bytes.empty()) release(bytes);
    constants_.emplace(static_cast<int>(i), std::move(buf));
    // The plan's host copy goes once the device has the bytes (ToArtifact reads them back), so
    // that the constants are not held twice; their type and shape stay.
    auto shell = std::make_shared<HostTensor>();
    shell->dtype = b.constant->dtype;
    shell->shape = b.constant->shape;
    plan_.buffers[i].constant = std::move(shell);
  }
}

std::unique_ptr<Executable> Executable::FromArtifact(std::shared_ptr<cl::Context> ctx,
                                                     Artifact artifact, cl::ProgramCache* cache,
                                                     const std::string& what) {
  const cl::DeviceInfo& device = ctx->info();
  std::vector<std::string> missing = MissingFeatures(artifact.plan, device);
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += "\n  " + m;
    Fail(ErrorCode::kUnsupported,
         "{}: compiled for {}; {} lacks what it needs (compile the model for this device):{}", what,
         artifact.plan.info.device_name, device.Label(), list);
  }
  int64_t alignment = ArenaAlignment(device);
  if (artifact.plan.memory.alignment % alignment != 0)
    artifact.plan.memory = PlanMemory(artifact.plan, alignment);
  const std::vector<uint8_t>* binary = nullptr;
  for (const ProgramBinary& b : artifact.binaries)
    if (b.Matches(device)) binary = &b.bytes;
  return std::make_unique<Executable>(std::move(ctx), std::move(artifact.plan), cache, binary,
                                      &artifact.constant_bytes, artifact.release);
}

std::unique_ptr<Executable> Executable::FromArtifactFile(std::shared_ptr<cl::Context> ctx,
                                                         const std::string& path,
                                                         cl::ProgramCache* cache) {
  std::shared_ptr<const MappedFile> file = MappedFile::Open(path);  // until the upload ends
  Artifact a =
      ReadArtifact(file->bytes(), path, [&file](std::string_view part) { file->Release(part); });
  return FromArtifact(std::move(ctx), std::move(a), cache, path);
}

Artifact Executable::ToArtifact(bool with_binary) const {
  Artifact a;
  a.plan = plan_;
  for (const auto& [i, buf] : constants_) {
    BufferDesc& b = a.plan.buffers[i];
    auto t = std::make_shared<HostTensor>();
    t->dtype = b.constant->dtype;
    t->shape = b.constant->shape;
    t->bytes.resize(static_cast<size_t>(b.bytes));
    if (b.bytes > 0) buf.Read(*ctx_, t->bytes.data(), t->bytes.size());
    b.constant = std::move(t);
  }
  if (with_binary && program_) {
    ProgramBinary b = ProgramBinary::KeyFor(ctx_->info());
    if (ctx_->info().platform_name.find("Portable Computing Language") != std::string::npos) {
      // PoCL compiles kernels for their work-group sizes at their first launch and makes a
      // program's binary once, when first asked (the program cache asked at build time): a
      // fresh build of the source, asked with the plan's work-group sizes, carries them.
      std::vector<std::vector<size_t>> local_sizes;
      for (const auto& step : plan_.steps) local_sizes.push_back(step.local);
      b.bytes = cl::Program(*ctx_, plan_.source, plan_.build_options, nullptr).Binary(local_sizes);
    } else {
      b.bytes = program_->Binary();
    }
    if (!b.bytes.empty()) a.binaries.push_back(std::move(b));
  }
  return a;
}

}  // namespace texel::runtime
