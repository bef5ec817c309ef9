#include "runtime/cl/context.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <utility>

#include "core/error.h"
#include "runtime/cl/fault_injection.h"
#include "runtime/cl/program_cache.h"
#include "runtime/cl/ptx_sm90a.h"

namespace texel::cl {
namespace {

bool IsOpenCl20OrLater(std::string_view version) {
  // "OpenCL M.N ..." — 1.x is the only family without clCreateCommandQueueWithProperties.
  constexpr std::string_view kPrefix = "OpenCL ";
  if (version.substr(0, kPrefix.size()) != kPrefix || version.size() <= kPrefix.size()) {
    return false;
  }
  char major = version[kPrefix.size()];
  return major >= '2' && major <= '9';
}

cl_command_queue CreateQueue(cl_context context, const DeviceInfo& info) {
  cl_int err = CL_SUCCESS;
  // Both must be >= 2.0: a 1.2 platform's ICD dispatch table may lack the 2.0 entry point.
  if (IsOpenCl20OrLater(info.device_version) && IsOpenCl20OrLater(info.platform_version)) {
    const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q = clCreateCommandQueueWithProperties(context, info.device, props, &err);
    if (err == CL_SUCCESS) return q;
  }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  cl_command_queue q = clCreateCommandQueue(context, info.device, CL_QUEUE_PROFILING_ENABLE, &err);
#pragma GCC diagnostic pop
  CheckCL(err, "clCreateCommandQueue");
  return q;
}

std::string BuildLog(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
          CL_SUCCESS ||
      size == 0) {
    return "";
  }
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
      CL_SUCCESS) {
    return "";
  }
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// Names of the kernels (marked "// texel-kernel: NAME" in source) that the log's error lines
// point into, in order of first mention.
std::vector<std::string> KernelsWithErrors(const std::string& source, const std::string& log) {
  // marks[i] = kernel name owning source line i + 1 (empty before the first mark).
  std::vector<std::string> marks;
  static const std::regex kMark(R"(^\s*//\s*texel-kernel:\s*(\S+))");
  std::string current;
  size_t start = 0;
  while (start <= source.size()) {
    size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    std::string line = source.substr(start, end - start);
    std::smatch m;
    if (std::regex_search(line, m, kMark)) current = m[1].str();
    marks.push_back(current);
    start = end + 1;
  }

  // Drivers word their diagnostics differently; each pattern captures the source line:
  //   clang/NVIDIA/Intel  "<source>:12:5: error: ..."   "input.cl:12: fatal error: ..."
  //   PoCL                "error: /tmp/tempfile.cl:12:5: expected expression"
  //   AMD (EDG)           "\"/tmp/OCL1.cl\", line 12: error: ..."
  static const std::regex kErrorPatterns[] = {
      std::regex(R"(:(\d+):(?:\d+:)?\s*(?:fatal\s+)?error)", std::regex::icase),
      std::regex(R"(error:\s*\S*?:(\d+):\d+:)", std::regex::icase),
      std::regex(R"(line (\d+):\s*(?:catastrophic\s+)?error)", std::regex::icase),
  };
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(pos, end - pos);
    pos = end + 1;
    for (const std::regex& pattern : kErrorPatterns) {
      std::smatch m;
      if (!std::regex_search(line, m, pattern)) continue;
      size_t line_no = 0;
      try {
        line_no = std::stoul(m[1].str());
      } catch (const std::exception&) {
        break;
      }
      if (line_no == 0 || line_no > marks.size()) break;
      const std::string& name = marks[line_no - 1];
      if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
      break;
    }
  }
  return names;
}

cl_program BuildFromSource(const Context& ctx, const std::string& source,
                           const std::string& options) {
  cl_int err = CL_SUCCESS;
  const char* src = source.c_str();
  size_t len = source.size();
  cl_program program = nullptr;
  if ((err = InjectedFault(FaultPoint::kBuild)) == CL_SUCCESS)
    program = clCreateProgramWithSource(ctx.context(), 1, &src, &len, &err);
  CheckCL(err, "clCreateProgramWithSource");
  cl_device_id device = ctx.device();
  err = Guarded(FaultPoint::kBuild, [&] {
    return clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
  });
  if (err == CL_SUCCESS) {
    // $TEXEL_CL_BUILD_LOG: the driver's log of a successful build on stderr (with NVIDIA's
    // -cl-nv-verbose, each kernel's registers and spills).
    if (const char* show = std::getenv("TEXEL_CL_BUILD_LOG"); show && *show)
      fmt::print(stderr, "build log:\n{}\n", BuildLog(program, device));
    return program;
  }

  std::string log = BuildLog(program, device);
  clReleaseProgram(program);
  std::vector<std::string> kernels = KernelsWithErrors(source, log);
  std::string head = kernels.empty() ? "OpenCL build failed"
                                     : fmt::format("OpenCL build failed in kernel(s) {}",
                                                   fmt::join(kernels, ", "));
  if (log.empty()) log = "(empty build log)";
  // Only a failure of the source itself is a build error; the driver running out of memory or
  // resources on the way is the device's (the same source builds on a retry).
  if (err != CL_BUILD_PROGRAM_FAILURE && err != CL_INVALID_BUILD_OPTIONS)
    throw Error(ErrorCode::kDevice, fmt::format("{} ({})\n{}", head, CLErrorName(err), log));
  throw Error(ErrorCode::kBuild, head + "\n" + log);
}

// Any failure (corrupt, foreign or stale binary, or the driver out of resources) yields nullptr,
// with the error in *error when given: the caller rebuilds from source.
cl_program BuildFromBinary(const Context& ctx, const std::vector<uint8_t>& binary,
                           const std::string& options, cl_int* error = nullptr) {
  cl_device_id device = ctx.device();
  const unsigned char* data = binary.data();
  size_t len = binary.size();
  cl_int binary_status = CL_SUCCESS;
  cl_int err = CL_SUCCESS;
  cl_program program =
      clCreateProgramWithBinary(ctx.context(), 1, &device, &len, &data, &binary_status, &err);
  if (err == CL_SUCCESS && (binary_status != CL_SUCCESS || program == nullptr))
    err = CL_INVALID_BINARY;
  if (err == CL_SUCCESS)
    err = Guarded(FaultPoint::kBuild, [&] {
      return clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
    });
  if (error != nullptr) *error = err;
  if (err == CL_SUCCESS) return program;
  if (program != nullptr) clReleaseProgram(program);
  return nullptr;
}

// The program's binary for its single device; empty when the driver cannot provide one.
std::vector<uint8_t> ProgramBinary(cl_program program) {
  cl_uint num_devices = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof(num_devices), &num_devices,
                       nullptr) != CL_SUCCESS ||
      num_devices != 1) {
    return {};
  }
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) !=
          CL_SUCCESS ||
      size == 0) {
    return {};
  }
  std::vector<uint8_t> binary(size);
  unsigned char* ptr = binary.data();
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) {
    return {};
  }
  return binary;
}

}  // namespace

// ---- Context ----

Context::Context(const DeviceInfo& info) : info_(info) {
  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {
      CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info_.platform), 0};
  context_ = clCreateContext(props, 1, &info_.device, nullptr, nullptr, &err);
  CheckCL(err, "clCreateContext");
  try {
    queue_ = CreateQueue(context_, info_);
  } catch (...) {
    clReleaseContext(context_);
    throw;
  }
}

Context::Context(cl_context context, cl_device_id device, cl_command_queue queue) : adopted_(true) {
  if (!context || !device || !queue)
    Fail(ErrorCode::kInvalidArgument,
         "adopting a context needs a cl_context, a cl_device_id and a "
         "cl_command_queue; the {} is null",
         !context  ? "cl_context"
         : !device ? "cl_device_id"
                   : "cl_command_queue");
  cl_uint num_devices = 0;
  CheckCL(
      clGetContextInfo(context, CL_CONTEXT_NUM_DEVICES, sizeof(num_devices), &num_devices, nullptr),
      "clGetContextInfo(CL_CONTEXT_NUM_DEVICES) on the adopted context");
  std::vector<cl_device_id> devices(num_devices);
  CheckCL(clGetContextInfo(context, CL_CONTEXT_DEVICES, num_devices * sizeof(cl_device_id),
                           devices.data(), nullptr),
          "clGetContextInfo(CL_CONTEXT_DEVICES)");
  if (std::find(devices.begin(), devices.end(), device) == devices.end())
    Fail(ErrorCode::kInvalidArgument, "the adopted device is not one of the context's {} device(s)",
         num_devices);
  cl_context queue_context = nullptr;
  cl_device_id queue_device = nullptr;
  cl_command_queue_properties props = 0;
  CheckCL(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(queue_context), &queue_context,
                                nullptr),
          "clGetCommandQueueInfo(CL_QUEUE_CONTEXT) on the adopted queue");
  if (queue_context != context)
    Fail(ErrorCode::kInvalidArgument, "the adopted queue belongs to another OpenCL context");
  CheckCL(
      clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(queue_device), &queue_device, nullptr),
      "clGetCommandQueueInfo(CL_QUEUE_DEVICE)");
  if (queue_device != device)
    Fail(ErrorCode::kInvalidArgument, "the adopted queue is on another device");
  CheckCL(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof(props), &props, nullptr),
          "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
  info_ = DescribeDevice(device);
  out_of_order_ = (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0;
  profiling_ = (props & CL_QUEUE_PROFILING_ENABLE) != 0;
  CheckCL(clRetainContext(context), "clRetainContext");
  context_ = context;
  CheckCL(clRetainCommandQueue(queue), "clRetainCommandQueue");
  queue_ = queue;
}

Context::~Context() {
  if (queue_ != nullptr) clReleaseCommandQueue(queue_);
  if (context_ != nullptr) clReleaseContext(context_);
}

void Context::Finish() const {
  ++counters_.syncs;
  CheckCL(Guarded(FaultPoint::kWait, [&] { return clFinish(queue_); }), "clFinish");
}

// ---- Buffer ----

Buffer::Buffer(const Context& ctx, size_t bytes) : bytes_(bytes) {
  cl_int err = CL_SUCCESS;
  // OpenCL rejects zero-sized buffers; a 1-byte stand-in keeps empty tensors uniform.
  if ((err = InjectedFault(FaultPoint::kBuffer)) == CL_SUCCESS)
    mem_ =
        clCreateBuffer(ctx.context(), CL_MEM_READ_WRITE, std::max<size_t>(bytes, 1), nullptr, &err);
  CheckCL(err, fmt::format("clCreateBuffer({} bytes)", bytes));
}

Buffer::Buffer(const Buffer& parent, size_t offset, size_t bytes) : bytes_(bytes) {
  TEXEL_CHECK(bytes > 0 && offset <= parent.bytes_ && bytes <= parent.bytes_ - offset,
              "sub-buffer of {} bytes at {} in {}", bytes, offset, parent.bytes_);
  cl_buffer_region region{offset, bytes};
  cl_int err = CL_SUCCESS;
  if ((err = InjectedFault(FaultPoint::kBuffer)) == CL_SUCCESS)
    mem_ = clCreateSubBuffer(parent.mem_, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region,
                             &err);
  CheckCL(err, fmt::format("clCreateSubBuffer({} bytes at {})", bytes, offset));
}

Buffer Buffer::Image2D(const Context& ctx, size_t width, size_t height, bool half) {
  TEXEL_CHECK(width > 0 && height > 0, "a {}x{} image", width, height);
  const DeviceInfo& d = ctx.info();
  if (!d.image_support) Fail(ErrorCode::kUnsupported, "device '{}' has no image support", d.name);
  if (width > d.image2d_max_width || height > d.image2d_max_height)
    Fail(ErrorCode::kUnsupported, "a {}x{} image exceeds the device's largest, {}x{}", width,
         height, d.image2d_max_width, d.image2d_max_height);
  cl_image_format format{CL_RGBA, static_cast<cl_channel_type>(half ? CL_HALF_FLOAT : CL_FLOAT)};
  cl_image_desc desc{};
  desc.image_type = CL_MEM_OBJECT_IMAGE2D;
  desc.image_width = width;
  desc.image_height = height;
  cl_int err = CL_SUCCESS;
  Buffer b;
  if ((err = InjectedFault(FaultPoint::kImage)) == CL_SUCCESS)
    b.mem_ = clCreateImage(ctx.context(), CL_MEM_READ_WRITE, &format, &desc, nullptr, &err);
  CheckCL(err, fmt::format("clCreateImage({}x{} RGBA {})", width, height,
                           half ? "CL_HALF_FLOAT" : "CL_FLOAT"));
  b.bytes_ = width * height * 4 * (half ? 2 : 4);
  b.width_ = width;
  b.height_ = height;
  return b;
}

Buffer Buffer::Adopt(cl_mem mem, size_t bytes) {
  Buffer b;
  b.mem_ = mem;
  b.bytes_ = bytes;
  return b;
}

Buffer::~Buffer() {
  if (mem_ != nullptr) clReleaseMemObject(mem_);
}

Buffer::Buffer(Buffer&& o) noexcept
    : mem_(std::exchange(o.mem_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      width_(std::exchange(o.width_, 0)),
      height_(std::exchange(o.height_, 0)) {}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (mem_ != nullptr) clReleaseMemObject(mem_);
    mem_ = std::exchange(o.mem_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    width_ = std::exchange(o.width_, 0);
    height_ = std::exchange(o.height_, 0);
  }
  return *this;
}

namespace {

// One blocking copy between the host and b: a byte range of a buffer, or a whole image.
void Transfer(const Context& ctx, const Buffer& b, bool write, void* host, size_t bytes,
              size_t offset) {
  TEXEL_CHECK(offset <= b.bytes() && bytes <= b.bytes() - offset, "{} of {} bytes at {} of {}",
              write ? "write" : "read", bytes, offset, b.bytes());
  if (bytes == 0) return;
  ++ctx.counters().transfers;
  if (b.is_image()) {
    TEXEL_CHECK(offset == 0 && bytes == b.bytes(), "images are copied whole");
    size_t origin[3] = {0, 0, 0}, region[3] = {b.width(), b.height(), 1};
    CheckCL(Guarded(FaultPoint::kTransfer,
                    [&] {
                      return write ? clEnqueueWriteImage(ctx.queue(), b.mem(), CL_TRUE, origin,
                                                         region, 0, 0, host, 0, nullptr, nullptr)
                                   : clEnqueueReadImage(ctx.queue(), b.mem(), CL_TRUE, origin,
                                                        region, 0, 0, host, 0, nullptr, nullptr);
                    }),
            write ? "clEnqueueWriteImage" : "clEnqueueReadImage");
    return;
  }
  CheckCL(Guarded(FaultPoint::kTransfer,
                  [&] {
                    return write ? clEnqueueWriteBuffer(ctx.queue(), b.mem(), CL_TRUE, offset,
                                                        bytes, host, 0, nullptr, nullptr)
                                 : clEnqueueReadBuffer(ctx.queue(), b.mem(), CL_TRUE, offset, bytes,
                                                       host, 0, nullptr, nullptr);
                  }),
          write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer");
}

}  // namespace

void Buffer::Write(const Context& ctx, const void* src, size_t bytes, size_t offset) const {
  Transfer(ctx, *this, true, const_cast<void*>(src), bytes, offset);  // OpenCL reads src only
}

void Buffer::Read(const Context& ctx, void* dst, size_t bytes, size_t offset) const {
  Transfer(ctx, *this, false, dst, bytes, offset);
}

void Buffer::Zero(const Context& ctx) const {
  TEXEL_CHECK(!is_image(), "images are not zeroed");
  if (bytes_ == 0) return;
  const cl_uchar zero = 0;
  cl_event done = nullptr;
  CheckCL(Guarded(FaultPoint::kTransfer,
                  [&] {
                    return clEnqueueFillBuffer(ctx.queue(), mem_, &zero, 1, 0, bytes_, 0, nullptr,
                                               &done);
                  }),
          "clEnqueueFillBuffer");
  Event owned(done);
  owned.Wait();
}

// ---- Event ----

Event::~Event() {
  if (event_ != nullptr) clReleaseEvent(event_);
}

Event::Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_ != nullptr) clReleaseEvent(event_);
    event_ = std::exchange(o.event_, nullptr);
  }
  return *this;
}

void Event::Wait() const {
  TEXEL_CHECK(event_ != nullptr, "Wait on an empty event");
  CheckCL(Guarded(FaultPoint::kWait, [&] { return clWaitForEvents(1, &event_); }),
          "clWaitForEvents");
}

uint64_t Event::DurationNs() const {
  TEXEL_CHECK(event_ != nullptr, "DurationNs on an empty event");
  cl_ulong start = 0, end = 0;
  CheckCL(
      clGetEventProfilingInfo(event_, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr),
      "clGetEventProfilingInfo(START)");
  CheckCL(clGetEventProfilingInfo(event_, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr),
          "clGetEventProfilingInfo(END)");
  return end > start ? end - start : 0;
}

// ---- Kernel ----

Kernel::Kernel(cl_program program, const std::string& name) : name_(name) {
  cl_int err = CL_SUCCESS;
  if ((err = InjectedFault(FaultPoint::kKernel)) == CL_SUCCESS)
    kernel_ = clCreateKernel(program, name.c_str(), &err);
  CheckCL(err, fmt::format("clCreateKernel('{}')", name));
}

Kernel::~Kernel() {
  if (kernel_ != nullptr) clReleaseKernel(kernel_);
}

Kernel::Kernel(Kernel&& o) noexcept
    : kernel_(std::exchange(o.kernel_, nullptr)), name_(std::move(o.name_)) {
  o.name_.clear();
}

Kernel& Kernel::operator=(Kernel&& o) noexcept {
  if (this != &o) {
    if (kernel_ != nullptr) clReleaseKernel(kernel_);
    kernel_ = std::exchange(o.kernel_, nullptr);
    name_ = std::move(o.name_);
    o.name_.clear();
  }
  return *this;
}

void Kernel::SetArg(unsigned index, const Buffer& b) {
  cl_mem mem = b.mem();
  SetArg(index, sizeof(mem), &mem);
}

void Kernel::SetArgSvm(unsigned index, const void* pointer) {
  // Messages are formatted only on failure: arguments are set for every launch.
  if (cl_int err = clSetKernelArgSVMPointer(kernel_, index, pointer); err != CL_SUCCESS)
    CheckCL(err, fmt::format("clSetKernelArgSVMPointer('{}', {})", name_, index));
}

void Kernel::SetArg(unsigned index, size_t bytes, const void* value) {
  if (cl_int err = clSetKernelArg(kernel_, index, bytes, value); err != CL_SUCCESS)
    CheckCL(err, fmt::format("clSetKernelArg('{}', {})", name_, index));
}

// ---- Launch ----

void Launch(const Context& ctx, const Kernel& k, const std::vector<size_t>& global,
            const std::vector<size_t>& local, Event* event, const std::vector<cl_event>& wait) {
  TEXEL_CHECK(!global.empty() && global.size() <= 3, "kernel '{}': {} global dims", k.name(),
              global.size());
  TEXEL_CHECK(local.empty() || local.size() == global.size(),
              "kernel '{}': {} local dims for {} global dims", k.name(), local.size(),
              global.size());
  if (event != nullptr) *event = Event();
  cl_int err = Guarded(FaultPoint::kEnqueue, [&] {
    return clEnqueueNDRangeKernel(
        ctx.queue(), k.get(), static_cast<cl_uint>(global.size()), nullptr, global.data(),
        local.empty() ? nullptr : local.data(), static_cast<cl_uint>(wait.size()),
        wait.empty() ? nullptr : wait.data(), event != nullptr ? event->out() : nullptr);
  });
  if (err != CL_SUCCESS) {
    CheckCL(err, fmt::format("clEnqueueNDRangeKernel('{}', global {}, local {})", k.name(),
                             fmt::join(global, "x"),
                             local.empty() ? std::string("auto")
                                           : fmt::format("{}", fmt::join(local, "x"))));
  }
}

// ---- Program ----

Program::Program(const Context& ctx, const std::string& source, const std::string& plan_options,
                 ProgramCache* cache, const std::vector<uint8_t>* binary) {
  // $TEXEL_CL_BUILD_OPTIONS: appended to every build (kernel development, e.g. a driver's
  // register cap or verbose flags); part of the cache key like the plan's own options.
  std::string options = plan_options;
  if (const char* extra = std::getenv("TEXEL_CL_BUILD_OPTIONS"); extra && *extra)
    options += (options.empty() ? "" : " ") + std::string(extra);
  if (binary != nullptr && !binary->empty()) {
    program_ = BuildFromBinary(ctx, *binary, options);
    from_binary_ = program_ != nullptr;
    if (from_binary_) return;
  }
  const bool use_cache = cache != nullptr && cache->enabled();
  std::string key;
  if (use_cache) {
    key = ProgramCache::Key(ctx.info(), source, options);
    if (std::optional<std::vector<uint8_t>> binary = cache->Load(key)) {
      program_ = BuildFromBinary(ctx, *binary, options);
      if (program_ != nullptr) {
        from_cache_ = true;
        build_seconds_ = cache->BuildSeconds(key).value_or(0);
        return;
      }
      cache->Remove(key);  // never trust an entry that failed once
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  program_ = BuildFromSource(ctx, source, options);
  if (NeedsSm90a(source)) {
    try {
      RebuildForSm90a(ctx, options);
    } catch (...) {  // the destructor does not run for a constructor that throws
      clReleaseProgram(std::exchange(program_, nullptr));
      throw;
    }
  }
  build_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (use_cache) {
    std::vector<uint8_t> binary = ProgramBinary(program_);
    if (!binary.empty()) cache->Store(key, binary, build_seconds_);
  }
}

void Program::RebuildForSm90a(const Context& ctx, const std::string& options) {
  std::vector<uint8_t> binary = ProgramBinary(program_);
  std::optional<std::string> ptx =
      ActivateSm90a(std::string(binary.begin(), std::find(binary.begin(), binary.end(), 0)));
  if (!ptx)
    Fail(ErrorCode::kUnsupported,
         "a kernel needs sm_90a instructions (wgmma), but the device's program binary is not PTX "
         "for sm_90");
  std::vector<uint8_t> patched(ptx->begin(), ptx->end());
  patched.push_back(0);
  cl_int err = CL_SUCCESS;
  cl_program rebuilt = BuildFromBinary(ctx, patched, options, &err);
  if (rebuilt == nullptr)
    Fail(err == CL_INVALID_BINARY || err == CL_BUILD_PROGRAM_FAILURE ? ErrorCode::kBuild
                                                                     : ErrorCode::kDevice,
         "the driver did not assemble the kernel's PTX retargeted to sm_90a: {} ({})",
         CLErrorName(err), err);
  clReleaseProgram(program_);
  program_ = rebuilt;
}

std::vector<uint8_t> Program::Binary(
    const std::vector<std::vector<size_t>>& pocl_local_sizes) const {
  if (pocl_local_sizes.empty()) return ProgramBinary(program_);
  // PoCL's names for the specialised kernels in its cache: "X-Y-Z", then "-goffs0" for a zero
  // global offset and "-smallgrid" for grids that fit 32 bits (texel's launches are both).
  std::set<std::string> names;
  for (const auto& l : pocl_local_sizes) {
    if (l.empty()) continue;  // the driver's choice: covered by the generic kernel
    names.insert(fmt::format("{}-{}-{}-goffs0-smallgrid", l[0], l.size() > 1 ? l[1] : 1,
                             l.size() > 2 ? l[2] : 1));
  }
  static std::mutex mutex;  // the variable is process-wide
  std::lock_guard<std::mutex> lock(mutex);
  const char* before = std::getenv("POCL_BINARY_SPECIALIZE_WG");
  std::string saved = before ? before : "";
  ::setenv("POCL_BINARY_SPECIALIZE_WG", fmt::format("{}", fmt::join(names, ",")).c_str(), 1);
  std::vector<uint8_t> binary = ProgramBinary(program_);
  if (before)
    ::setenv("POCL_BINARY_SPECIALIZE_WG", saved.c_str(), 1);
  else
    ::unsetenv("POCL_BINARY_SPECIALIZE_WG");
  return binary;
}

Program::~Program() {
  if (program_ != nullptr) clReleaseProgram(program_);
}

}  // namespace texel::cl
