#include "codegen/opencl/kernel_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/file_io.h"

namespace texel::codegen {

const char* FindKernelTemplate(std::string_view name);  // generated at build time

namespace {

// The template `name`: from $TEXEL_KERNEL_DIR/<name>.cl where that variable is set and the file
// exists (kernel development: variants tried on a device without rebuilding texel; the program
// cache keys on the source, so an edited file is rebuilt), otherwise the embedded copy.
const char* KernelTemplate(std::string_view name) {
  const char* dir = std::getenv("TEXEL_KERNEL_DIR");
  if (dir == nullptr || *dir == '\0') return FindKernelTemplate(name);
  static std::mutex mutex;
  static std::map<std::string, std::string, std::less<>> loaded;  // texts live for the process
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(name); it != loaded.end()) return it->second.c_str();
  std::optional<std::string> text = ReadFile(fmt::format("{}/{}.cl", dir, name));
  if (!text) return FindKernelTemplate(name);
  return loaded.emplace(std::string(name), std::move(*text)).first->second.c_str();
}

}  // namespace

KernelSource::KernelSource(std::string kernel_name, std::string_view template_name)
    : name_(std::move(kernel_name)), template_(KernelTemplate(template_name)) {
  TEXEL_CHECK(template_ != nullptr, "no kernel template '{}'", template_name);
  Define("KERNEL_NAME", name_);
}

KernelSource& KernelSource::Retarget(std::string kernel_name, std::string_view template_name) {
  name_ = std::move(kernel_name);
  template_ = KernelTemplate(template_name);
  TEXEL_CHECK(template_ != nullptr, "no kernel template '{}'", template_name);
  for (auto& [key, value] : defines_)
    if (key == "KERNEL_NAME") value = name_;
  return *this;
}

KernelSource& KernelSource::Define(const std::string& key, const std::string& value) {
  defines_.emplace_back(key, value);
  return *this;
}

KernelSource& KernelSource::Define(const std::string& key, int64_t value) {
  return Define(key, std::to_string(value));
}

KernelSource& KernelSource::Prelude(const std::string& code) {
  prelude_ += code;
  return *this;
}

std::string KernelSource::Render() const {
  std::string out = fmt::format("// texel-kernel: {}\n", name_);
  for (const auto& [k, v] : defines_) out += fmt::format("#define {} {}\n", k, v);
  out += prelude_;
  out += template_;
  for (const auto& [k, v] : defines_) out += fmt::format("#undef {}\n", k.substr(0, k.find('(')));
  return out;
}

std::string FloatLiteral(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  std::string s = fmt::format("{:.9g}", static_cast<float>(v));
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return "(" + s + "f)";
}

}  // namespace texel::codegen
