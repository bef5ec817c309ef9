// Devices and contexts: texel_device_*, texel_context_*.
#include <cstring>

#include "capi/handles.h"
#include "runtime/cl/device.h"

namespace texel::capi {
namespace {

void Copy(char* dst, size_t size, const std::string& src) {
  std::strncpy(dst, src.c_str(), size - 1);
  dst[size - 1] = '\0';
}

void Describe(const cl::DeviceInfo& d, texel_device_info_t* out) {
  texel_device_info_t info{};
  Copy(info.label, sizeof(info.label), d.Label());
  Copy(info.name, sizeof(info.name), d.name);
  Copy(info.vendor, sizeof(info.vendor), d.vendor);
  Copy(info.type, sizeof(info.type), cl::DeviceKindName(d.kind));
  info.platform = d.platform;
  info.device = d.device;
  *out = info;
}

}  // namespace
}  // namespace texel::capi

using texel::ErrorCode;
using texel::Fail;
using texel::capi::Guard;
using texel::capi::Require;

extern "C" {

texel_status_t texel_device_count(size_t* out_count) {
  return Guard(__func__, [&] {
    Require(out_count, "out_count");
    *out_count = texel::cl::ListDevices().size();
  });
}

texel_status_t texel_device_get_info(size_t index, texel_device_info_t* out_info) {
  return Guard(__func__, [&] {
    Require(out_info, "out_info");
    std::vector<texel::cl::DeviceInfo> devices = texel::cl::ListDevices();
    if (index >= devices.size())
      Fail(ErrorCode::kNotFound, "device {} does not exist; there are {}", index, devices.size());
    texel::capi::Describe(devices[index], out_info);
  });
}

void texel_context_options_init(texel_context_options_t* options) {
  texel::capi::ResetStruct(options);
}

texel_status_t texel_context_create(const texel_context_options_t* options,
                                    texel_context_t* out_context) {
  return Guard(__func__, [&] {
    Require(out_context, "out_context");
    if (options && options->struct_size < sizeof(*options))
      Fail(ErrorCode::kInvalidArgument, "options were not set up by texel_context_options_init");
    std::string spec = options && options->device ? options->device : "";
    auto ctx = std::make_shared<texel::cl::Context>(texel::cl::SelectDevice(spec));
    auto* handle = new texel_context_s;
    handle->context = std::move(ctx);
    *out_context = handle;
  });
}

texel_status_t texel_context_adopt(cl_context context, cl_device_id device, cl_command_queue queue,
                                   texel_context_t* out_context) {
  return Guard(__func__, [&] {
    Require(out_context, "out_context");
    auto ctx = std::make_shared<texel::cl::Context>(context, device, queue);
    auto* handle = new texel_context_s;
    handle->context = std::move(ctx);
    *out_context = handle;
  });
}

texel_status_t texel_context_retain(texel_context_t context) {
  return texel::capi::RetainHandle(__func__, context, "context");
}

texel_status_t texel_context_release(texel_context_t context) {
  return texel::capi::ReleaseHandle(__func__, context, "context");
}

texel_status_t texel_context_get_device_info(texel_context_t context,
                                             texel_device_info_t* out_info) {
  return Guard(__func__, [&] {
    Require(context, "context");
    Require(out_info, "out_info");
    texel::capi::Describe(context->context->info(), out_info);
  });
}

texel_status_t texel_context_get_queue(texel_context_t context, cl_command_queue* out_queue) {
  return Guard(__func__, [&] {
    Require(context, "context");
    Require(out_queue, "out_queue");
    *out_queue = context->context->queue();
  });
}

texel_status_t texel_context_get_host_counters(texel_context_t context,
                                               texel_host_counters_t* out_counters) {
  return Guard(__func__, [&] {
    Require(context, "context");
    Require(out_counters, "out_counters");
    const auto& c = context->context->counters();
    out_counters->transfers = c.transfers.load();
    out_counters->syncs = c.syncs.load();
  });
}

}  // extern "C"
