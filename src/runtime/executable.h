// Executable: a Plan made ready on one device — program built (through the on-disk program
// cache), constants uploaded (and their host copies in the plan released: plan() keeps their
// types and shapes only). Sessions (runtime/session.h) run it. Lifetime: the Context outlives
// Executables. Thread safety: an Executable is immutable and may be shared between threads.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/artifact.h"
#include "runtime/cl/context.h"
#include "runtime/cl/program_cache.h"
#include "runtime/library_call.h"
#include "runtime/plan.h"

namespace texel::runtime {

class Executable {
 public:
  // binary: a program binary for ctx's device, tried before the cache and the source.
  // constant_bytes: the bytes of constants whose plan tensor holds none (Artifact's), each
  // passed to release once uploaded.
  Executable(std::shared_ptr<cl::Context> ctx, Plan plan, cl::ProgramCache* cache,
             const std::vector<uint8_t>* binary = nullptr,
             const std::map<int, std::string_view>* constant_bytes = nullptr,
             const std::function<void(std::string_view)>& release = {});
  // An artifact's plan, on ctx's device: its binary for the device when it carries one, else
  // built from source (through cache); the memory plan made again when the device demands
  // another alignment. Throws Error(kUnsupported) naming `what` and everything the device lacks.
  static std::unique_ptr<Executable> FromArtifact(std::shared_ptr<cl::Context> ctx,
                                                  Artifact artifact, cl::ProgramCache* cache,
                                                  const std::string& what);
  // An artifact file, mapped and read with its pages released as they are used (each section
  // after its checksum, each constant once on the device), then as FromArtifact.
  static std::unique_ptr<Executable> FromArtifactFile(std::shared_ptr<cl::Context> ctx,
                                                      const std::string& path,
                                                      cl::ProgramCache* cache);
  // The artifact that FromArtifact makes this Executable again from; with_binary: with the
  // program's binary for this device.
  Artifact ToArtifact(bool with_binary) const;
  const Plan& plan() const { return plan_; }
  cl::Context& context() const { return *ctx_; }
  // False when the program was built from source (or there is no kernel at all).
  bool program_from_cache() const { return program_ && program_->from_cache(); }
  bool program_from_binary() const { return program_ && program_->from_binary(); }
  double program_ms() const { return program_ms_; }  // the time the program took to be ready
  const cl::Program* program() const { return program_.get(); }
  const cl::Buffer& constant_buffer(int index) const { return constants_.at(index); }

 private:
  std::shared_ptr<cl::Context> ctx_;
  Plan plan_;
  std::unique_ptr<cl::Program> program_;
  double program_ms_ = 0;
  std::map<int, cl::Buffer> constants_;
};

}  // namespace texel::runtime
