// OpenCL platform/device enumeration and selection, with the facts codegen needs.
// Thread safety: functions are thread-safe; DeviceInfo is a plain value.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace texel::cl {

// CL_DEVICE_TYPE, as the code branches on it.
enum class DeviceKind { kGpu, kCpu, kAccelerator, kOther };
// "GPU", "CPU", "ACCELERATOR", "OTHER": how device lists, facts files and the C API name it.
const char* DeviceKindName(DeviceKind kind);
bool ParseDeviceKind(std::string_view name, DeviceKind* kind);  // false when name is none

struct DeviceInfo {
  int platform_index = 0;  // position in clGetPlatformIDs
  int device_index = 0;    // position in clGetDeviceIDs(CL_DEVICE_TYPE_ALL) of that platform
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  std::string platform_name, platform_version;
  std::string name, vendor, driver_version, device_version, opencl_c_version;
  DeviceKind kind = DeviceKind::kOther;
  uint32_t compute_units = 0;
  uint32_t max_clock_mhz = 0;
  uint64_t global_mem_bytes = 0, max_alloc_bytes = 0, local_mem_bytes = 0;
  size_t max_work_group_size = 0;
  std::vector<size_t> max_work_item_sizes;
  uint32_t mem_base_addr_align_bits = 0;
  bool image_support = false;
  size_t image2d_max_width = 0, image2d_max_height = 0;
  bool fp16 = false;  // cl_khr_fp16
  bool fp64 = false;  // cl_khr_fp64
  // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT in CL_DEVICE_SINGLE_FP_CONFIG: programs may be built with
  // -cl-fp32-correctly-rounded-divide-sqrt (else f32 division may be 2.5 ulp off).
  bool fp32_correct_divide = false;
  bool subgroups =
      false;  // cl_khr_subgroups, cl_intel_subgroups or an OpenCL 3.0 max_num_sub_groups > 0
  int nv_cc_major = -1, nv_cc_minor = -1;  // cl_nv_device_attribute_query; -1 when absent
  uint32_t nv_warp_size = 0;
  // CL_DEVICE_SUB_GROUP_SIZES_INTEL (cl_intel_required_subgroup_size); empty when absent.
  std::vector<size_t> intel_sub_group_sizes;
  std::string svm;  // "none" or a comma list: "coarse-grain buffer, fine-grain buffer, ..."
  std::vector<std::string> extensions;

  bool HasExtension(std::string_view ext) const;
  // "P:D name (platform)" as shown by `texel devices` and in run output.
  std::string Label() const;
};

// Every device of every platform. Returns an empty list when no platform is installed.
std::vector<DeviceInfo> ListDevices();

// The facts of a device handed over by a host, as ListDevices gives them.
DeviceInfo DescribeDevice(cl_device_id device);

// spec: "" (use env TEXEL_DEVICE, else the default), "gpu", "cpu", "P:D", or a case-insensitive
// substring of the device name. Default: first GPU, else first CPU, else first device.
// Throws Error(kNotFound) naming the spec and listing the available devices.
DeviceInfo SelectDevice(std::string_view spec);

// Multi-line human-readable report of all devices (for `texel devices`).
std::string FormatDevices(const std::vector<DeviceInfo>& devices);

// "clEnqueueNDRangeKernel failed: CL_OUT_OF_RESOURCES (-5)"; throws Error(kDevice) if err != 0.
void CheckCL(cl_int err, std::string_view what);
const char* CLErrorName(cl_int err);

}  // namespace texel::cl
