#include "runtime/cl/device.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

#include "core/enum_names.h"
#include "core/error.h"

namespace texel::cl {
namespace {

// Not in cl.h proper (cl_khr_icd): the ICD loader's answer when no platform is installed.
constexpr cl_int kPlatformNotFoundKhr = -1001;
// cl_nv_device_attribute_query.
constexpr cl_device_info kNvComputeCapabilityMajor = 0x4000;
constexpr cl_device_info kNvComputeCapabilityMinor = 0x4001;
constexpr cl_device_info kNvWarpSize = 0x4003;
// cl_intel_required_subgroup_size: the subgroup sizes a kernel may require (size_t[]).
constexpr cl_device_info kIntelSubGroupSizes = 0x4108;

constexpr const char* kNoDeviceMessage =
    "no OpenCL device found (is an OpenCL driver such as pocl-opencl-icd installed?)";

std::string Trim(std::string s) {
  // Drivers often NUL-pad or space-pad their strings.
  while (!s.empty() && (s.back() == '\0' || std::isspace(static_cast<unsigned char>(s.back())))) {
    s.pop_back();
  }
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string PlatformString(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  return Trim(std::move(s));
}

// Field queries are best effort: a driver that rejects one query should not hide the device.
std::string DeviceString(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetDeviceInfo(d, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  return Trim(std::move(s));
}

template <typename T>
bool DeviceValue(cl_device_id d, cl_device_info what, T* out) {
  T value{};
  if (clGetDeviceInfo(d, what, sizeof(T), &value, nullptr) != CL_SUCCESS) return false;
  *out = value;
  return true;
}

// "OpenCL 2.1 foo" -> 201; 0 when unparsable.
int ParseClVersion(std::string_view version) {
  constexpr std::string_view kPrefix = "OpenCL ";
  if (version.substr(0, kPrefix.size()) != kPrefix) return 0;
  version.remove_prefix(kPrefix.size());
  int major = 0, minor = 0;
  size_t i = 0;
  while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) {
    major = major * 10 + (version[i++] - '0');
  }
  if (i >= version.size() || version[i] != '.') return 0;
  ++i;
  while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) {
    minor = minor * 10 + (version[i++] - '0');
  }
  return major * 100 + minor;
}

DeviceKind KindOf(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return DeviceKind::kGpu;
  if (type & CL_DEVICE_TYPE_CPU) return DeviceKind::kCpu;
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return DeviceKind::kAccelerator;
  return DeviceKind::kOther;
}

std::string SvmName(cl_device_svm_capabilities caps) {
  std::vector<std::string> parts;
  if (caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) parts.push_back("coarse-grain buffer");
  if (caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) parts.push_back("fine-grain buffer");
  if (caps & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) parts.push_back("fine-grain system");
  if (caps & CL_DEVICE_SVM_ATOMICS) parts.push_back("atomics");
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

DeviceInfo QueryDevice(cl_platform_id platform, cl_device_id device) {
  DeviceInfo d;
  d.platform = platform;
  d.device = device;
  d.platform_name = PlatformString(platform, CL_PLATFORM_NAME);
  d.platform_version = PlatformString(platform, CL_PLATFORM_VERSION);
  d.name = DeviceString(device, CL_DEVICE_NAME);
  d.vendor = DeviceString(device, CL_DEVICE_VENDOR);
  d.driver_version = DeviceString(device, CL_DRIVER_VERSION);
  d.device_version = DeviceString(device, CL_DEVICE_VERSION);
  d.opencl_c_version = DeviceString(device, CL_DEVICE_OPENCL_C_VERSION);

  cl_device_type type = 0;
  DeviceValue(device, CL_DEVICE_TYPE, &type);
  d.kind = KindOf(type);

  cl_uint u32 = 0;
  if (DeviceValue(device, CL_DEVICE_MAX_COMPUTE_UNITS, &u32)) d.compute_units = u32;
  if (DeviceValue(device, CL_DEVICE_MAX_CLOCK_FREQUENCY, &u32)) d.max_clock_mhz = u32;
  if (DeviceValue(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, &u32)) d.mem_base_addr_align_bits = u32;
  cl_ulong u64 = 0;
  if (DeviceValue(device, CL_DEVICE_GLOBAL_MEM_SIZE, &u64)) d.global_mem_bytes = u64;
  if (DeviceValue(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, &u64)) d.max_alloc_bytes = u64;
  if (DeviceValue(device, CL_DEVICE_LOCAL_MEM_SIZE, &u64)) d.local_mem_bytes = u64;
  DeviceValue(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, &d.max_work_group_size);

  cl_uint dims = 0;
  if (DeviceValue(device, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, &dims) && dims > 0) {
    std::vector<size_t> sizes(dims);
    if (clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizes.size() * sizeof(size_t),
                        sizes.data(), nullptr) == CL_SUCCESS) {
      d.max_work_item_sizes = std::move(sizes);
    }
  }

  cl_bool b = CL_FALSE;
  if (DeviceValue(device, CL_DEVICE_IMAGE_SUPPORT, &b)) d.image_support = b == CL_TRUE;
  // TEXEL_IMAGES=off: act as a device without images (tests of --storage on such devices).
  if (const char* env = std::getenv("TEXEL_IMAGES"); env && std::string_view(env) == "off")
    d.image_support = false;
  if (d.image_support) {
    DeviceValue(device, CL_DEVICE_IMAGE2D_MAX_WIDTH, &d.image2d_max_width);
    DeviceValue(device, CL_DEVICE_IMAGE2D_MAX_HEIGHT, &d.image2d_max_height);
  }

  std::istringstream ext_stream(DeviceString(device, CL_DEVICE_EXTENSIONS));
  for (std::string ext; ext_stream >> ext;) d.extensions.push_back(ext);
  d.fp16 = d.HasExtension("cl_khr_fp16");
  d.fp64 = d.HasExtension("cl_khr_fp64");
  cl_device_fp_config single = 0;
  if (DeviceValue(device, CL_DEVICE_SINGLE_FP_CONFIG, &single))
    d.fp32_correct_divide = (single & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;

  int version = ParseClVersion(d.device_version);
  d.subgroups = d.HasExtension("cl_khr_subgroups") || d.HasExtension("cl_intel_subgroups");
  if (!d.subgroups && version >= 201) {
    cl_uint max_sub_groups = 0;
    d.subgroups =
        DeviceValue(device, CL_DEVICE_MAX_NUM_SUB_GROUPS, &max_sub_groups) && max_sub_groups > 0;
  }

  if (d.HasExtension("cl_nv_device_attribute_query")) {
    cl_uint major = 0, minor = 0, warp = 0;
    if (DeviceValue(device, kNvComputeCapabilityMajor, &major) &&
        DeviceValue(device, kNvComputeCapabilityMinor, &minor)) {
      d.nv_cc_major = static_cast<int>(major);
      d.nv_cc_minor = static_cast<int>(minor);
    }
    if (DeviceValue(device, kNvWarpSize, &warp)) d.nv_warp_size = warp;
  }

  if (d.HasExtension("cl_intel_required_subgroup_size")) {
    size_t bytes = 0;
    if (clGetDeviceInfo(device, kIntelSubGroupSizes, 0, nullptr, &bytes) == CL_SUCCESS &&
        bytes > 0) {
      d.intel_sub_group_sizes.resize(bytes / sizeof(size_t));
      if (clGetDeviceInfo(device, kIntelSubGroupSizes, bytes, d.intel_sub_group_sizes.data(),
                          nullptr) != CL_SUCCESS)
        d.intel_sub_group_sizes.clear();
    }
  }

  d.svm = "none";
  if (version >= 200) {
    cl_device_svm_capabilities caps = 0;
    if (DeviceValue(device, CL_DEVICE_SVM_CAPABILITIES, &caps)) d.svm = SvmName(caps);
  }
  return d;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  if (value == static_cast<double>(static_cast<uint64_t>(value))) {
    return fmt::format("{} {}", static_cast<uint64_t>(value), kUnits[unit]);
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

// Wraps words into lines of at most `width` columns, continuation lines indented by `indent`.
std::string Wrap(const std::vector<std::string>& words, size_t indent, size_t width) {
  std::string out;
  size_t column = indent;
  for (const auto& w : words) {
    if (column > indent && column + 1 + w.size() > width) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    }
    if (column > indent) {
      out += ' ';
      ++column;
    }
    out += w;
    column += w.size();
  }
  return out;
}

std::string AvailableList(const std::vector<DeviceInfo>& devices) {
  std::vector<std::string> labels;
  for (const auto& d : devices) labels.push_back(d.Label());
  return fmt::format("{}", fmt::join(labels, ", "));
}

bool ParseIndexPair(std::string_view spec, int* p, int* d) {
  size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == spec.size()) return false;
  auto parse = [](std::string_view s, int* out) {
    if (s.size() > 6) return false;
    int v = 0;
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
      v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
  };
  return parse(spec.substr(0, colon), p) && parse(spec.substr(colon + 1), d);
}

// Whether the process may run on every online CPU, 0 to n - 1 (no taskset, no narrower cpuset).
bool RunsOnEveryCpu() {
  cpu_set_t set;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n <= 0 || n > CPU_SETSIZE || sched_getaffinity(0, sizeof(set), &set) != 0) return false;
  for (long i = 0; i < n; ++i)
    if (!CPU_ISSET(i, &set)) return false;
  return true;
}

// PoCL's CPU driver leaves its worker threads unpinned unless POCL_AFFINITY=1, which it reads
// when the platforms are first listed. Pinned, MobileNetV2's 54 kernels ran 6.0-6.3 ms against
// 6.9-7.5 on a 2-core machine (three alternations; SqueezeNet and ResNet-18 within the noise),
// so texel asks for it unless the process chose already (POCL_AFFINITY=0 keeps them unpinned).
// PoCL pins worker i to CPU i, which fails where the process may not run on all of them, so
// only where it may. Other drivers ignore the variable; a context adopted from the host was
// listed by the host. The variable is set once, at the first listing (setenv is not safe
// beside other threads reading the environment: list devices before starting them).
void PreferPinnedPoclThreads() {
  static const bool once =
      (RunsOnEveryCpu() && setenv("POCL_AFFINITY", "1", /*overwrite=*/0) == 0, true);
  (void)once;
}

constexpr EnumName<DeviceKind> kKindNames[] = {{DeviceKind::kGpu, "GPU"},
                                               {DeviceKind::kCpu, "CPU"},
                                               {DeviceKind::kAccelerator, "ACCELERATOR"},
                                               {DeviceKind::kOther, "OTHER"}};

}  // namespace

const char* DeviceKindName(DeviceKind kind) { return NameIn(kKindNames, kind); }

bool ParseDeviceKind(std::string_view name, DeviceKind* kind) {
  return ParseIn(kKindNames, name, kind);
}

bool DeviceInfo::HasExtension(std::string_view ext) const {
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

std::string DeviceInfo::Label() const {
  return fmt::format("{}:{} {} ({})", platform_index, device_index, name, platform_name);
}

std::vector<DeviceInfo> ListDevices() {
  PreferPinnedPoclThreads();
  cl_uint num_platforms = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (err == kPlatformNotFoundKhr || (err == CL_SUCCESS && num_platforms == 0)) return {};
  CheckCL(err, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(num_platforms);
  CheckCL(clGetPlatformIDs(num_platforms, platforms.data(), nullptr), "clGetPlatformIDs");

  std::vector<DeviceInfo> result;
  for (cl_uint p = 0; p < num_platforms; ++p) {
    cl_uint num_devices = 0;
    err = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices);
    // A platform without devices (e.g. an ICD whose hardware is absent) is simply skipped.
    if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && num_devices == 0)) continue;
    CheckCL(err, "clGetDeviceIDs");
    std::vector<cl_device_id> devices(num_devices);
    CheckCL(clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, num_devices, devices.data(), nullptr),
            "clGetDeviceIDs");
    for (cl_uint d = 0; d < num_devices; ++d) {
      DeviceInfo info = QueryDevice(platforms[p], devices[d]);
      info.platform_index = static_cast<int>(p);
      info.device_index = static_cast<int>(d);
      result.push_back(std::move(info));
    }
  }
  return result;
}

DeviceInfo DescribeDevice(cl_device_id device) {
  // The listed entry carries the platform/device indices that labels and caches use.
  for (DeviceInfo& d : ListDevices())
    if (d.device == device) return d;
  cl_platform_id platform = nullptr;
  CheckCL(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof(platform), &platform, nullptr),
          "clGetDeviceInfo(CL_DEVICE_PLATFORM) on the adopted device");
  return QueryDevice(platform, device);
}

DeviceInfo SelectDevice(std::string_view spec) {
  std::string chosen = Trim(std::string(spec));
  bool from_env = false;
  if (chosen.empty()) {
    if (const char* env = std::getenv("TEXEL_DEVICE")) {
      chosen = Trim(env);
      from_env = !chosen.empty();
    }
  }
  std::vector<DeviceInfo> devices = ListDevices();
  if (devices.empty()) Fail(ErrorCode::kNotFound, "{}", kNoDeviceMessage);

  auto first_of_kind = [&](DeviceKind kind) -> const DeviceInfo* {
    for (const auto& d : devices) {
      if (d.kind == kind) return &d;
    }
    return nullptr;
  };

  std::string lower = ToLower(chosen);
  const DeviceInfo* found = nullptr;
  int p = 0, d = 0;
  if (lower.empty()) {
    found = first_of_kind(DeviceKind::kGpu);
    if (!found) found = first_of_kind(DeviceKind::kCpu);
    if (!found) found = &devices.front();
  } else if (lower == "gpu" || lower == "cpu") {
    found = first_of_kind(lower == "gpu" ? DeviceKind::kGpu : DeviceKind::kCpu);
  } else if (ParseIndexPair(lower, &p, &d)) {
    for (const auto& dev : devices) {
      if (dev.platform_index == p && dev.device_index == d) found = &dev;
    }
  } else {
    for (const auto& dev : devices) {
      if (ToLower(dev.name).find(lower) != std::string::npos) {
        found = &dev;
        break;
      }
    }
  }
  if (!found) {
    Fail(ErrorCode::kNotFound, "no OpenCL device matches '{}'{}; available: {}", chosen,
         from_env ? " (from TEXEL_DEVICE)" : "", AvailableList(devices));
  }
  return *found;
}

std::string FormatDevices(const std::vector<DeviceInfo>& devices) {
  if (devices.empty()) return std::string(kNoDeviceMessage) + "\n";
  constexpr size_t kIndent = 18;  // "  " + 16-column field name
  std::string out;
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceInfo& d = devices[i];
    if (i > 0) out += '\n';
    auto field = [&](std::string_view name, const std::string& value) {
      out += fmt::format("  {:<16}{}\n", name, value);
    };
    out += fmt::format("[{}:{}] {}  ({})\n", d.platform_index, d.device_index, d.name,
                       DeviceKindName(d.kind));
    field("platform", fmt::format("{}, {}", d.platform_name, d.platform_version));
    field("vendor/driver", fmt::format("{} / {}", d.vendor, d.driver_version));
    field("version", fmt::format("{}, {}", d.device_version, d.opencl_c_version));
    field("compute units", fmt::format("{} @ {} MHz", d.compute_units, d.max_clock_mhz));
    field("memory", fmt::format("global {}, max alloc {}, local {}, base align {} bits",
                                FormatBytes(d.global_mem_bytes), FormatBytes(d.max_alloc_bytes),
                                FormatBytes(d.local_mem_bytes), d.mem_base_addr_align_bits));
    field("work-group", fmt::format("max {}, item sizes {}", d.max_work_group_size,
                                    fmt::join(d.max_work_item_sizes, "x")));
    field("images", d.image_support ? fmt::format("yes, 2D max {}x{}", d.image2d_max_width,
                                                  d.image2d_max_height)
                                    : "no");
    field("fp16 / fp64", fmt::format("{} / {}", d.fp16 ? "yes" : "no", d.fp64 ? "yes" : "no"));
    field("fp32 division",
          d.fp32_correct_divide ? "correctly rounded on request" : "as the device divides");
    field("sub-groups", d.subgroups ? "yes" : "no");
    field("nvidia cc", d.nv_cc_major < 0 ? "n/a"
                                         : fmt::format("{}.{}, warp {}", d.nv_cc_major,
                                                       d.nv_cc_minor, d.nv_warp_size));
    field("svm", d.svm);
    field("extensions", d.extensions.empty() ? "none" : Wrap(d.extensions, kIndent, 100));
  }
  return out;
}

void CheckCL(cl_int err, std::string_view what) {
  if (err != CL_SUCCESS) {
    Fail(ErrorCode::kDevice, "{} failed: {} ({})", what, CLErrorName(err), err);
  }
}

const char* CLErrorName(cl_int err) {
#define TEXEL_CL_ERROR(code) \
  case code: return #code;
  switch (err) {
    TEXEL_CL_ERROR(CL_SUCCESS)
    TEXEL_CL_ERROR(CL_DEVICE_NOT_FOUND)
    TEXEL_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    TEXEL_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    TEXEL_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    TEXEL_CL_ERROR(CL_OUT_OF_RESOURCES)
    TEXEL_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    TEXEL_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    TEXEL_CL_ERROR(CL_MEM_COPY_OVERLAP)
    TEXEL_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    TEXEL_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    TEXEL_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    TEXEL_CL_ERROR(CL_MAP_FAILURE)
    TEXEL_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    TEXEL_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    TEXEL_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    TEXEL_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    TEXEL_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    TEXEL_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    TEXEL_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    TEXEL_CL_ERROR(CL_INVALID_VALUE)
    TEXEL_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    TEXEL_CL_ERROR(CL_INVALID_PLATFORM)
    TEXEL_CL_ERROR(CL_INVALID_DEVICE)
    TEXEL_CL_ERROR(CL_INVALID_CONTEXT)
    TEXEL_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    TEXEL_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    TEXEL_CL_ERROR(CL_INVALID_HOST_PTR)
    TEXEL_CL_ERROR(CL_INVALID_MEM_OBJECT)
    TEXEL_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    TEXEL_CL_ERROR(CL_INVALID_IMAGE_SIZE)
    TEXEL_CL_ERROR(CL_INVALID_SAMPLER)
    TEXEL_CL_ERROR(CL_INVALID_BINARY)
    TEXEL_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    TEXEL_CL_ERROR(CL_INVALID_PROGRAM)
    TEXEL_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    TEXEL_CL_ERROR(CL_INVALID_KERNEL_NAME)
    TEXEL_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    TEXEL_CL_ERROR(CL_INVALID_KERNEL)
    TEXEL_CL_ERROR(CL_INVALID_ARG_INDEX)
    TEXEL_CL_ERROR(CL_INVALID_ARG_VALUE)
    TEXEL_CL_ERROR(CL_INVALID_ARG_SIZE)
    TEXEL_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    TEXEL_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    TEXEL_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    TEXEL_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    TEXEL_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    TEXEL_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    TEXEL_CL_ERROR(CL_INVALID_EVENT)
    TEXEL_CL_ERROR(CL_INVALID_OPERATION)
    TEXEL_CL_ERROR(CL_INVALID_GL_OBJECT)
    TEXEL_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    TEXEL_CL_ERROR(CL_INVALID_MIP_LEVEL)
    TEXEL_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    TEXEL_CL_ERROR(CL_INVALID_PROPERTY)
    TEXEL_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    TEXEL_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    TEXEL_CL_ERROR(CL_INVALID_LINKER_OPTIONS)
    TEXEL_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
    TEXEL_CL_ERROR(CL_INVALID_PIPE_SIZE)
    TEXEL_CL_ERROR(CL_INVALID_DEVICE_QUEUE)
    TEXEL_CL_ERROR(CL_INVALID_SPEC_ID)
    TEXEL_CL_ERROR(CL_MAX_SIZE_RESTRICTION_EXCEEDED)
    case -1000: return "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR";
    case kPlatformNotFoundKhr: return "CL_PLATFORM_NOT_FOUND_KHR";
  }
#undef TEXEL_CL_ERROR
  return "CL_UNKNOWN_ERROR";
}

}  // namespace texel::cl
