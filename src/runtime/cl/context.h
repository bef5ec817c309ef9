// Context: one cl_context and one cl_command_queue on one device, plus thin RAII wrappers for
// buffers, programs, kernels and events. Either texel's own (created here: an in-order queue with
// profiling) or adopted from a host framework (its context, device and queue, retained here and
// released with the Context; the queue may be out-of-order and need not profile).
// Lifetime: a Context must outlive every Buffer/Program/Kernel/Event made from it.
// Thread safety: a Context may be shared; Buffers/Kernels are not synchronised (one per session).
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/cl/device.h"

namespace texel::cl {

class ProgramCache;

class Context {
 public:
  explicit Context(const DeviceInfo& info);
  // Adopts a host's objects. Throws Error(kInvalidArgument) when one is null, the device is not
  // one of the context's, or the queue belongs to another context or device.
  Context(cl_context context, cl_device_id device, cl_command_queue queue);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  cl_context context() const { return context_; }
  cl_device_id device() const { return info_.device; }
  cl_command_queue queue() const { return queue_; }
  bool adopted() const { return adopted_; }
  bool out_of_order() const { return out_of_order_; }  // commands ordered only by events
  bool profiling() const { return profiling_; }
  void Finish() const;

  // What texel's own calls made the host wait for: transfers between host and device memory
  // (Buffer::Read/Write) and queue synchronisations (Finish). Tests read them to
  // prove that a run has no host round trip between its first and its last step.
  struct HostCounters {
    std::atomic<int64_t> transfers{0}, syncs{0};
  };
  HostCounters& counters() const { return counters_; }

 private:
  mutable HostCounters counters_;
  DeviceInfo info_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  bool adopted_ = false, out_of_order_ = false, profiling_ = true;
};

// A memory object: a buffer, or a 2D RGBA image (texture storage, core/texture_layout.h).
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Context& ctx, size_t bytes);  // CL_MEM_READ_WRITE; bytes == 0 allocates 1 byte
  // A width x height image of RGBA texels with float32 (CL_FLOAT) or, with half, float16
  // (CL_HALF_FLOAT) channels. Kernels read float4 from either (read_imagef needs no
  // cl_khr_fp16). Write and Read move the whole image: width * height * 4 channels.
  static Buffer Image2D(const Context& ctx, size_t width, size_t height, bool half);
  bool is_image() const { return width_ > 0; }
  size_t width() const { return width_; }
  size_t height() const { return height_; }
  // A sub-buffer: bytes (> 0) of parent from offset, which must be a multiple of the device's
  // base address alignment. The parent must outlive it.
  Buffer(const Buffer& parent, size_t offset, size_t bytes);
  // Takes ownership of mem (a buffer of bytes), released with the Buffer.
  static Buffer Adopt(cl_mem mem, size_t bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  cl_mem mem() const { return mem_; }
  size_t bytes() const { return bytes_; }
  void Write(const Context& ctx, const void* src, size_t bytes,
             size_t offset = 0) const;                                              // blocking
  void Read(const Context& ctx, void* dst, size_t bytes, size_t offset = 0) const;  // blocking
  void Zero(const Context& ctx) const;  // every byte of a buffer (not an image) 0; blocking

 private:
  cl_mem mem_ = nullptr;
  size_t bytes_ = 0;
  size_t width_ = 0, height_ = 0;  // images only
};

class Event {
 public:
  Event() = default;
  explicit Event(cl_event e) : event_(e) {}
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  cl_event get() const { return event_; }
  cl_event* out() { return &event_; }  // for clEnqueue*(..., out()); must be empty
  cl_event release() { return std::exchange(event_, nullptr); }  // the caller owns it now
  void Wait() const;
  // Profiling: nanoseconds between CL_PROFILING_COMMAND_START and _END.
  uint64_t DurationNs() const;

 private:
  cl_event event_ = nullptr;
};

class Kernel {
 public:
  Kernel() = default;
  Kernel(cl_program program, const std::string& name);
  ~Kernel();
  Kernel(Kernel&& o) noexcept;
  Kernel& operator=(Kernel&& o) noexcept;
  cl_kernel get() const { return kernel_; }
  const std::string& name() const { return name_; }
  void SetArg(unsigned index, const Buffer& b);
  void SetArg(unsigned index, size_t bytes, const void* value);
  void SetArgSvm(unsigned index, const void* pointer);  // a coarse-grained SVM pointer

 private:
  cl_kernel kernel_ = nullptr;
  std::string name_;
};

// Enqueues kernel on ctx's queue after the events in wait. local may be empty (driver's
// choice). global is rounded up to a multiple of local by the caller. Sets *event when given.
void Launch(const Context& ctx, const Kernel& k, const std::vector<size_t>& global,
            const std::vector<size_t>& local, Event* event = nullptr,
            const std::vector<cl_event>& wait = {});

class Program {
 public:
  // Builds source for ctx's device, through cache when given (binary looked up first, stored
  // after a successful build). When the source does not compile, throws Error(kBuild) whose
  // message names the kernels whose source lines the build log points at (source marks each
  // kernel with a line "// texel-kernel: NAME") followed by the full build log; when the driver
  // fails otherwise (out of memory or resources), Error(kDevice) with the same message.
  // With binary (an artifact's, for this device), that is tried first, then the cache, then
  // the source. A source with hidden sm_90a instructions (ptx_sm90a.h) is rebuilt from its PTX
  // with them made live.
  Program(const Context& ctx, const std::string& source, const std::string& options,
          ProgramCache* cache, const std::vector<uint8_t>* binary = nullptr);
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  cl_program get() const { return program_; }
  bool from_cache() const { return from_cache_; }
  bool from_binary() const { return from_binary_; }  // the binary given to the constructor
  // What its build from source took: here, or from the cache where it came from there and the
  // entry recorded it; 0 when unknown (a binary given, an entry without the record).
  double build_seconds() const { return build_seconds_; }
  // The device's binary of the program; empty when the driver cannot provide one.
  // pocl_local_sizes (PoCL only): the work-group sizes the kernels are launched with, named in
  // POCL_BINARY_SPECIALIZE_WG for this call so that the binary holds the kernels PoCL compiled
  // for them (without, only generic ones). PoCL makes the binary once, at the first call.
  std::vector<uint8_t> Binary(const std::vector<std::vector<size_t>>& pocl_local_sizes = {}) const;

 private:
  // A source with hidden sm_90a instructions (ptx_sm90a.h): the program built again from its
  // PTX with them made live; what the cache then stores.
  void RebuildForSm90a(const Context& ctx, const std::string& options);

  cl_program program_ = nullptr;
  bool from_cache_ = false, from_binary_ = false;
  double build_seconds_ = 0;
};

}  // namespace texel::cl
