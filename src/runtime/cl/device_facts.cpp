#include "runtime/cl/device_facts.h"

#include <filesystem>
#include <optional>
#include <system_error>

#include "core/error.h"
#include "core/file_io.h"
#include "runtime/json_fields.h"

namespace texel::cl {
namespace {

constexpr int kFactsVersion = 1;

constexpr auto kFactsFields = [](auto& d, auto&& f) {
  f("platform_name", d.platform_name), f("platform_version", d.platform_version);
  f("name", d.name), f("vendor", d.vendor), f("driver_version", d.driver_version);
  f("device_version", d.device_version), f("opencl_c_version", d.opencl_c_version);
  f("type", d.kind), f("compute_units", d.compute_units), f("max_clock_mhz", d.max_clock_mhz);
  f("global_mem_bytes", d.global_mem_bytes), f("max_alloc_bytes", d.max_alloc_bytes);
  f("local_mem_bytes", d.local_mem_bytes), f("max_work_group_size", d.max_work_group_size);
  f("max_work_item_sizes", d.max_work_item_sizes);
  f("mem_base_addr_align_bits", d.mem_base_addr_align_bits);
  f("image_support", d.image_support), f("image2d_max_width", d.image2d_max_width);
  f("image2d_max_height", d.image2d_max_height), f("fp16", d.fp16), f("fp64", d.fp64);
  f("subgroups", d.subgroups), f("nv_cc_major", d.nv_cc_major), f("nv_cc_minor", d.nv_cc_minor);
  f("nv_warp_size", d.nv_warp_size), f("intel_sub_group_sizes", d.intel_sub_group_sizes);
  f("svm", d.svm), f("extensions", d.extensions);
};

// Facts added after version 1's files were written: read where present.
constexpr auto kLaterFactsFields = [](auto& d, auto&& f) {
  f("fp32_correct_divide", d.fp32_correct_divide);
};

}  // namespace

std::string DeviceFactsJson(const DeviceInfo& device) {
  runtime::json j = runtime::Write(device, kFactsFields);
  j.update(runtime::Write(device, kLaterFactsFields));
  j["texel_device_facts"] = kFactsVersion;
  return j.dump(2) + "\n";
}

DeviceInfo ReadDeviceFacts(const std::string& path) {
  std::optional<std::string> text = ReadFile(path);
  std::error_code ec;
  if (!text && !std::filesystem::exists(path, ec))
    Fail(ErrorCode::kNotFound, "{}: no such file", path);
  if (!text) Fail(ErrorCode::kIo, "{}: cannot read the file (a directory, or no permission)", path);
  try {
    runtime::json j = runtime::json::parse(*text);
    if (!j.is_object() || !j.contains("texel_device_facts"))
      Fail(ErrorCode::kInvalidArgument, "not device facts (texel devices --facts writes them)");
    if (j.at("texel_device_facts") != kFactsVersion)
      Fail(ErrorCode::kInvalidArgument, "device facts of version {}, this texel reads {}",
           j.at("texel_device_facts").dump(), kFactsVersion);
    DeviceInfo d = runtime::Read<DeviceInfo>(j, kFactsFields);
    runtime::ReadPresent(j, kLaterFactsFields, &d);
    return d;
  } catch (const runtime::json::exception& e) {
    Fail(ErrorCode::kInvalidArgument, "{}: not valid device facts: {}", path, e.what());
  } catch (Error& e) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace texel::cl
