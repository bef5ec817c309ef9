#include "runtime/session.h"

#include <CL/cl_ext.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "core/error.h"
#include "runtime/cl/fault_injection.h"
#include "runtime/memory_plan.h"

namespace texel::runtime {

const char* ExternalKindName(ExternalTensor::Kind kind) {
  switch (kind) {
    case ExternalTensor::Kind::kHost: return "host pointer";
    case ExternalTensor::Kind::kClBuffer: return "cl_mem buffer";
    case ExternalTensor::Kind::kSvm: return "SVM pointer";
    case ExternalTensor::Kind::kUsm: return "USM pointer";
  }
  return "?";
}

namespace {

// The device's sub-buffer origin alignment, and the vector loads' 16 bytes for pointers.
constexpr uintptr_t kPointerAlignment = 16;

using SetArgMemPointerIntel = cl_int(CL_API_CALL*)(cl_kernel, cl_uint, const void*);

SetArgMemPointerIntel FindSetArgMemPointer(const cl::DeviceInfo& d) {
  return reinterpret_cast<SetArgMemPointerIntel>(
      clGetExtensionFunctionAddressForPlatform(d.platform, "clSetKernelArgMemPointerINTEL"));
}

}  // namespace

// How one input or output reaches the kernels.
struct Session::Binding {
  enum class Mode {
    kInPlace,     // kernels use the caller's memory (buffer, sub-buffer, SVM or USM pointer)
    kStagedCopy,  // a device-side copy between the caller's cl_mem and the Session's buffer
    kStagedHost,  // a host copy between the caller's pointer and the Session's buffer
  };
  ExternalTensor tensor;
  int buffer = -1;
  bool output = false;
  size_t bytes = 0;  // the tensor's
  Mode mode = Mode::kInPlace;
  cl::Buffer sub;  // a sub-buffer at the caller's offset
};

Session::Session(const Executable& exe) : exe_(exe) {
  const Plan& plan = exe.plan();
  // Without the arena every buffer has its own allocation: with TEXEL_ARENA=off (to rule the
  // arena out when debugging), and on NVIDIA's driver, whose processes crash when a sub-buffer
  // of the arena is released (580.x, H100; see docs/decisions.md).
  const char* arena_env = std::getenv("TEXEL_ARENA");
  bool no_arena =
      (arena_env && std::string(arena_env) == "off") || !SubBuffersUsable(exe.context().info());
  static const MemoryPlan kNoPlan;
  const MemoryPlan& mem = no_arena ? kNoPlan : plan.memory;
  if (mem.arena_bytes > 0) {
    int64_t device_align = ArenaAlignment(exe.context().info());
    TEXEL_CHECK(mem.alignment % device_align == 0,
                "the memory plan's alignment {} is not a multiple of the device's {}",
                mem.alignment, device_align);
    arena_ = cl::Buffer(exe.context(), static_cast<size_t>(mem.arena_bytes));
  }
  // One sub-buffer per distinct arena region (buffers with disjoint lifetimes often share one).
  buffers_.resize(plan.buffers.size());
  slot_.assign(plan.buffers.size(), -1);
  uses_.resize(plan.buffers.size());
  std::map<std::pair<int64_t, int64_t>, int> region_slot;
  std::map<int, int> block_slot;  // texture pool block -> the buffers_ entry holding its image
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const BufferDesc& b = plan.buffers[i];
    if (b.constant) continue;
    if (b.is_image()) {  // a pool block's image, or (unplanned) its own
      int block = i < plan.memory.texture_block.size() ? plan.memory.texture_block[i] : -1;
      auto [it, fresh] =
          block_slot.try_emplace(block < 0 ? -1 - static_cast<int>(i) : block, static_cast<int>(i));
      if (fresh) {
        const TextureBlock k = block < 0 ? TextureBlock{b.image_width, b.image_height, b.image_half}
                                         : plan.memory.texture_blocks[block];
        buffers_[i] = cl::Buffer::Image2D(exe.context(), k.width, k.height, k.half);
      }
      slot_[i] = it->second;
      continue;
    }
    int64_t offset = i < mem.offsets.size() ? mem.offsets[i] : -1;
    if (offset < 0 && b.alias_of >= 0) continue;  // a part of its whole's own buffer, below
    if (offset < 0) {
      buffers_[i] = cl::Buffer(exe.context(), static_cast<size_t>(b.bytes));
      slot_[i] = static_cast<int>(i);
      if (b.zeroed) buffers_[i].Zero(exe.context());
      continue;
    }
    auto [it, fresh] = region_slot.try_emplace({offset, b.bytes}, static_cast<int>(i));
    if (fresh)
      buffers_[i] = cl::Buffer(arena_, static_cast<size_t>(offset), static_cast<size_t>(b.bytes));
    slot_[i] = it->second;
  }
  // Without the arena, a buffer that is part of another is a sub-buffer of that one's own.
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const BufferDesc& b = plan.buffers[i];
    if (b.alias_of < 0 || slot_[i] >= 0) continue;
    if (!SubBuffersUsable(exe.context().info()))
      Fail(ErrorCode::kUnsupported,
           "buffer {} is part of buffer {} (a concatenation computed in place), which needs a "
           "sub-buffer that this device's driver cannot release safely: compile the model for "
           "this device",
           i, b.alias_of);
    buffers_[i] = cl::Buffer(BufferAt(b.alias_of), static_cast<size_t>(b.alias_offset),
                             static_cast<size_t>(b.bytes));
    slot_[i] = static_cast<int>(i);
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const KernelStep& s = plan.steps[i];
    calls_.push_back(nullptr);
    call_buffers_.emplace_back();
    for (size_t a = 0; a < s.buffers.size(); ++a)
      uses_[s.buffers[a]].push_back({i, static_cast<unsigned>(a)});
    if (!s.call.empty()) {
      calls_.back() = FindLibraryCall(s.call);
      if (!calls_.back())
        Fail(ErrorCode::kUnsupported, "step {} ({} '{}') calls '{}', which is not available", i,
             s.op, s.node, s.call);
      for (int b : s.buffers) call_buffers_.back().push_back(BufferAt(b).mem());
      kernels_.emplace_back();
      continue;
    }
    cl::Kernel k(exe.program()->get(), s.kernel);
    for (size_t a = 0; a < s.buffers.size(); ++a)
      k.SetArg(static_cast<unsigned>(a), BufferAt(s.buffers[a]));
    kernels_.push_back(std::move(k));
  }
}

Session::~Session() = default;

const cl::Buffer& Session::BufferAt(int index) const {
  return exe_.plan().buffers[index].constant ? exe_.constant_buffer(index) : buffers_[slot_[index]];
}

void Session::SetInput(const std::string& name, const HostTensor& t) {
  for (const TensorBinding& in : exe_.plan().inputs) {
    if (in.name != name) continue;
    if (t.dtype != in.dtype)
      Fail(ErrorCode::kInvalidArgument, "input '{}' must be {}, got {}", name, DTypeName(in.dtype),
           DTypeName(t.dtype));
    if (t.shape != in.shape)
      Fail(ErrorCode::kInvalidArgument, "input '{}' must have shape {}, got {}", name,
           ShapeStr(in.shape), ShapeStr(t.shape));
    Unbind(false, name);
    AwaitPreviousRun();
    if (!t.bytes.empty()) BufferAt(in.buffer).Write(exe_.context(), t.bytes.data(), t.bytes.size());
    return;
  }
  Fail(ErrorCode::kInvalidArgument, "the model has no input named '{}'", name);
}

HostTensor Session::GetOutput(size_t index) const {
  const TensorBinding& out = exe_.plan().outputs.at(index);
  if (bound_.count({true, out.name}))
    Fail(ErrorCode::kInvalidArgument, "output '{}' is bound to the caller's memory", out.name);
  if (MemoryOf(out.buffer) != BufferAt(out.buffer).mem())
    Fail(ErrorCode::kInvalidArgument, "output '{}' is the memory of a bound input", out.name);
  AwaitPreviousRun();
  Shape shape = out.shape;
  if (out.rows_buffer >= 0) {  // a data-dependent output: keep the rows the device counted
    int64_t rows = 0;
    BufferAt(out.rows_buffer).Read(exe_.context(), &rows, sizeof(rows));
    TEXEL_CHECK(rows >= 0 && rows <= shape[0], "output '{}' reports {} rows of at most {}",
                out.name, rows, shape[0]);
    shape[0] = rows;
  }
  HostTensor t(out.dtype, shape);
  if (!t.bytes.empty()) BufferAt(out.buffer).Read(exe_.context(), t.bytes.data(), t.bytes.size());
  return t;
}

void Session::BindInput(const std::string& name, const ExternalTensor& t) {
  for (const TensorBinding& in : exe_.plan().inputs)
    if (in.name == name) return Bind(in, false, t);
  Fail(ErrorCode::kNotFound, "the model has no input named '{}'", name);
}

void Session::BindOutput(const std::string& name, const ExternalTensor& t) {
  for (const TensorBinding& out : exe_.plan().outputs)
    if (out.name == name) return Bind(out, true, t);
  Fail(ErrorCode::kNotFound, "the model has no output named '{}'", name);
}

struct Session::BindSite {
  const TensorBinding& tensor;
  bool output;
  const ExternalTensor& t;
  const char* role() const { return output ? "output" : "input"; }
  [[noreturn]] void Fail(ErrorCode code, const std::string& why) const {
    texel::Fail(code, "{} '{}' bound to a {}: {}", role(), tensor.name, ExternalKindName(t.kind),
                why);
  }
  void CheckBytes(size_t needed, size_t have) const {
    if (have < needed)
      Fail(ErrorCode::kInvalidArgument,
           fmt::format("the tensor has {} bytes; the memory, {}", needed, have));
  }
};

void Session::Bind(const TensorBinding& tensor, bool output, const ExternalTensor& t) {
  const BindSite at{tensor, output, t};
  auto b = std::make_unique<Binding>();
  b->tensor = t;
  b->buffer = tensor.buffer;
  b->output = output;
  b->bytes = static_cast<size_t>(DTypeSize(tensor.dtype) * NumElements(tensor.shape));
  if (exe_.plan().buffers[tensor.buffer].is_image())
    at.Fail(ErrorCode::kUnsupported, "the tensor lives in an image");
  if (output && tensor.rows_buffer >= 0)
    at.Fail(ErrorCode::kUnsupported, "its row count is known only after the run; read it instead");
  bool aliased = output && AliasedOutput(tensor);  // then copied out after the run
  switch (t.kind) {
    case ExternalTensor::Kind::kHost:
      if (!t.pointer) at.Fail(ErrorCode::kInvalidArgument, "the pointer is null");
      at.CheckBytes(b->bytes, t.bytes);
      b->mode = Binding::Mode::kStagedHost;
      break;
    case ExternalTensor::Kind::kClBuffer: BindClBuffer(at, aliased, *b); break;
    case ExternalTensor::Kind::kSvm:
    case ExternalTensor::Kind::kUsm: CheckPointerMemory(at, aliased, *b); break;
  }
  // Kernels read inputs while they write outputs: the caller's output memory must overlap no
  // input's and no other output's.
  for (const auto& [key, other] : bound_)
    if ((key.first != output || (output && key.second != tensor.name)) && Overlap(*other, *b))
      at.Fail(ErrorCode::kInvalidArgument, fmt::format("its memory overlaps that of {} '{}'",
                                                       key.first ? "output" : "input", key.second));
  Commit({output, tensor.name}, std::move(b));
}

bool Session::AliasedOutput(const TensorBinding& tensor) const {
  const Plan& plan = exe_.plan();
  bool aliased = plan.buffers[tensor.buffer].constant != nullptr;
  for (const TensorBinding& in : plan.inputs) aliased |= in.buffer == tensor.buffer;
  for (const TensorBinding& o : plan.outputs)
    aliased |= o.buffer == tensor.buffer && o.name != tensor.name;
  return aliased;
}

void Session::BindClBuffer(const BindSite& at, bool aliased, Binding& b) const {
  const cl::Context& ctx = exe_.context();
  const ExternalTensor& t = at.t;
  if (!t.buffer) at.Fail(ErrorCode::kInvalidArgument, "the cl_mem is null");
  cl_context owner = nullptr;
  if (clGetMemObjectInfo(t.buffer, CL_MEM_CONTEXT, sizeof(owner), &owner, nullptr) != CL_SUCCESS)
    at.Fail(ErrorCode::kInvalidArgument, "it is not a valid cl_mem");
  if (owner != ctx.context())
    at.Fail(ErrorCode::kInvalidArgument, "the cl_mem belongs to another OpenCL context");
  cl_mem_object_type type = 0;
  size_t size = 0;
  cl_mem_flags flags = 0;
  cl::CheckCL(clGetMemObjectInfo(t.buffer, CL_MEM_TYPE, sizeof(type), &type, nullptr),
              "clGetMemObjectInfo(CL_MEM_TYPE)");
  cl::CheckCL(clGetMemObjectInfo(t.buffer, CL_MEM_SIZE, sizeof(size), &size, nullptr),
              "clGetMemObjectInfo(CL_MEM_SIZE)");
  cl::CheckCL(clGetMemObjectInfo(t.buffer, CL_MEM_FLAGS, sizeof(flags), &flags, nullptr),
              "clGetMemObjectInfo(CL_MEM_FLAGS)");
  if (type != CL_MEM_OBJECT_BUFFER) at.Fail(ErrorCode::kInvalidArgument, "it is not a buffer");
  if (t.offset > size || size - t.offset < b.bytes)
    at.Fail(ErrorCode::kInvalidArgument,
            fmt::format("the tensor has {} bytes; the buffer, {} after offset {}", b.bytes,
                        t.offset > size ? 0 : size - t.offset, t.offset));
  if (at.output && (flags & CL_MEM_READ_ONLY))
    at.Fail(ErrorCode::kInvalidArgument, "the buffer is CL_MEM_READ_ONLY");
  if (!at.output && (flags & CL_MEM_WRITE_ONLY))
    at.Fail(ErrorCode::kInvalidArgument, "the buffer is CL_MEM_WRITE_ONLY");
  if (aliased || b.bytes == 0) {
    b.mode = Binding::Mode::kStagedCopy;
    return;
  }
  if (t.offset == 0) return;  // in place
  // A sub-buffer needs an aligned origin; NVIDIA's driver crashes releasing sub-buffers
  // (docs/decisions.md). Otherwise the tensor is copied on the device.
  size_t align = std::max<size_t>(ctx.info().mem_base_addr_align_bits / 8, 1);
  if (t.offset % align != 0 || !SubBuffersUsable(ctx.info())) {
    b.mode = Binding::Mode::kStagedCopy;
    return;
  }
  cl_buffer_region region{t.offset, b.bytes};
  cl_int err = cl::InjectedFault(cl::FaultPoint::kBuffer);
  cl_mem sub = err != CL_SUCCESS
                   ? nullptr
                   : clCreateSubBuffer(t.buffer, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
  // The caller's buffer may itself be a sub-buffer, or another device of its context may want
  // a coarser alignment: then the tensor is copied instead.
  if (err == CL_INVALID_MEM_OBJECT || err == CL_MISALIGNED_SUB_BUFFER_OFFSET)
    b.mode = Binding::Mode::kStagedCopy;
  else
    cl::CheckCL(err, fmt::format("clCreateSubBuffer for {} '{}'", at.role(), at.tensor.name));
  if (err == CL_SUCCESS) b.sub = cl::Buffer::Adopt(sub, b.bytes);
}

void Session::CheckPointerMemory(const BindSite& at, bool aliased, const Binding& b) const {
  const cl::DeviceInfo& device = exe_.context().info();
  const ExternalTensor& t = at.t;
  bool svm = t.kind == ExternalTensor::Kind::kSvm;
  if (svm && device.svm == "none")
    at.Fail(ErrorCode::kUnsupported,
            fmt::format("device '{}' has no shared virtual memory", device.name));
  if (!svm && !device.HasExtension("cl_intel_unified_shared_memory"))
    at.Fail(ErrorCode::kUnsupported,
            fmt::format("device '{}' has no cl_intel_unified_shared_memory", device.name));
  if (!t.pointer) at.Fail(ErrorCode::kInvalidArgument, "the pointer is null");
  if (reinterpret_cast<uintptr_t>(t.pointer) % kPointerAlignment != 0)
    at.Fail(ErrorCode::kInvalidArgument,
            fmt::format("the pointer is not {}-byte aligned", kPointerAlignment));
  at.CheckBytes(b.bytes, t.bytes);
  if (aliased)
    at.Fail(ErrorCode::kUnsupported,
            "the output is a constant or another tensor's memory; bind a cl_mem or a host "
            "pointer");
  for (const Use& u : uses_[at.tensor.buffer])
    if (calls_[u.step])
      at.Fail(ErrorCode::kUnsupported,
              fmt::format("step {} ({}) is a library call, which takes cl_mem buffers only", u.step,
                          exe_.plan().steps[u.step].call));
  if (!svm && !FindSetArgMemPointer(device))
    at.Fail(ErrorCode::kUnsupported, "the platform has no clSetKernelArgMemPointerINTEL");
}

// Only when every argument points at the new memory; else the old binding is restored.
void Session::Commit(std::pair<bool, std::string> key, std::unique_ptr<Binding> b) {
  int buffer = b->buffer;
  std::unique_ptr<Binding> old;
  if (auto it = bound_.find(key); it != bound_.end()) old = std::move(it->second);
  bound_[key] = std::move(b);
  try {
    PointUses(buffer);
  } catch (...) {
    if (old)
      bound_[key] = std::move(old);
    else
      bound_.erase(key);
    PointUses(buffer);
    throw;
  }
}

bool Session::Overlap(const Binding& x, const Binding& y) {
  using Kind = ExternalTensor::Kind;
  const ExternalTensor &a = x.tensor, &b = y.tensor;
  if (x.bytes == 0 || y.bytes == 0 || a.kind == Kind::kHost || b.kind == Kind::kHost)
    return false;  // host memory is copied, so it may alias freely
  if ((a.kind == Kind::kClBuffer) != (b.kind == Kind::kClBuffer)) return false;
  if (a.kind == Kind::kClBuffer) {
    if (a.buffer != b.buffer) return false;
    return a.offset < b.offset + y.bytes && b.offset < a.offset + x.bytes;
  }
  auto pa = reinterpret_cast<uintptr_t>(a.pointer), pb = reinterpret_cast<uintptr_t>(b.pointer);
  return pa < pb + y.bytes && pb < pa + x.bytes;
}

cl_mem Session::MemoryOf(int buffer) const {
  for (const auto& [key, b] : bound_) {
    if (b->buffer != buffer || b->mode != Binding::Mode::kInPlace) continue;
    if (b->sub.mem()) return b->sub.mem();
    if (b->tensor.kind == ExternalTensor::Kind::kClBuffer) return b->tensor.buffer;
    return nullptr;  // an SVM or USM pointer
  }
  return BufferAt(buffer).mem();
}

namespace {

// Waits for e; when the wait fails, drains the queue before the error reaches the caller:
// later commands (staged output reads) may still be writing into the caller's host memory,
// which the caller may free as soon as it hears of the failure.
void WaitOrDrain(const cl::Context& ctx, const cl::Event& e) {
  ++ctx.counters().syncs;
  try {
    e.Wait();
  } catch (const Error&) {
    clFinish(ctx.queue());  // its own failure adds nothing to the error being reported
    throw;
  }
}

}  // namespace

void Session::AwaitPreviousRun() const {
  if (last_.get()) WaitOrDrain(exe_.context(), last_);
}

void Session::Unbind(bool output, const std::string& name) {
  auto it = bound_.find({output, name});
  if (it == bound_.end()) return;
  int buffer = it->second->buffer;
  bound_.erase(it);
  PointUses(buffer);
}

void Session::PointUses(int buffer) {
  const Binding* b = nullptr;  // the binding kernels use in place, if any
  for (const auto& [key, bp] : bound_)
    if (bp->buffer == buffer && bp->mode == Binding::Mode::kInPlace) b = bp.get();
  bool staged = !b || b->mode != Binding::Mode::kInPlace;
  const ExternalTensor* t = staged ? nullptr : &b->tensor;
  cl_mem mem = staged                                       ? BufferAt(buffer).mem()
               : b->sub.mem()                               ? b->sub.mem()
               : t->kind == ExternalTensor::Kind::kClBuffer ? t->buffer
                                                            : nullptr;
  for (const Use& u : uses_[buffer]) {
    if (calls_[u.step]) {
      call_buffers_[u.step][u.arg] = mem;
      continue;
    }
    cl::Kernel& k = kernels_[u.step];
    if (mem) {
      k.SetArg(u.arg, sizeof(mem), &mem);
    } else if (t->kind == ExternalTensor::Kind::kSvm) {
      k.SetArgSvm(u.arg, t->pointer);
    } else {
      cl::CheckCL(FindSetArgMemPointer(exe_.context().info())(k.get(), u.arg, t->pointer),
                  fmt::format("clSetKernelArgMemPointerINTEL('{}', {})", k.name(), u.arg));
    }
  }
}

cl::Event Session::EnqueueRun(const std::vector<cl_event>& wait_in,
                              std::vector<cl::Event>* step_events) {
  const cl::Context& ctx = exe_.context();
  const Plan& plan = exe_.plan();
  cl_command_queue q = ctx.queue();
  bool ooo = ctx.out_of_order();
  auto staged = [](const Binding& b, bool outputs) {
    return b.output == outputs && b.mode != Binding::Mode::kInPlace && b.bytes > 0;
  };
  size_t total = plan.steps.size();
  for (const auto& [key, b] : bound_) total += staged(*b, b->output);

  std::vector<cl_event> first = wait_in;
  if (ooo && last_.get()) first.push_back(last_.get());
  std::vector<cl_event> chained(1), none;
  cl::Event prev;
  size_t c = 0;  // commands issued so far
  // Issues one command of the run (step -1: a staging copy) after the right events: in order,
  // only the first command waits and only the last one's event is needed; out of order, each
  // waits for the one before. enqueue(wait, event) sets *event when event is not null.
  auto issue = [&](int step, auto&& enqueue) {
    bool want_event = ooo || step_events || c + 1 == total;
    const std::vector<cl_event>& w = c == 0 ? first : ooo ? chained : none;
    cl::Event ev;
    try {
      enqueue(w, want_event ? ev.out() : nullptr);
    } catch (Error& e) {
      if (step >= 0) {
        const KernelStep& k = plan.steps[step];
        e.AddContext(fmt::format("step {} ({} '{}')", step, k.op, k.node));
      }
      // What was enqueued still runs and may read the caller's host memory: wait for it before
      // the caller hears of the failure (an in-order marker follows everything before it).
      if (c > 0) {
        cl::Event partial;
        cl_event last = prev.get();
        // Not a fault point: this only waits out a failure that already happened.
        if (clEnqueueMarkerWithWaitList(q, last ? 1 : 0, last ? &last : nullptr, partial.out()) ==
            CL_SUCCESS)
          clWaitForEvents(1, partial.out());
      }
      throw;
    }
    ++c;
    if (!want_event) return;
    if (step_events && step >= 0) {
      cl::CheckCL(clRetainEvent(ev.get()), "clRetainEvent");
      (*step_events)[step] = cl::Event(ev.get());
    }
    prev = std::move(ev);
    chained[0] = prev.get();
  };
  auto stage = [&](bool outputs) {
    for (const auto& entry : bound_) {
      const Binding& b = *entry.second;
      if (staged(b, outputs))
        issue(-1,
              [&](const std::vector<cl_event>& w, cl_event* ev) { EnqueueStagingCopy(b, w, ev); });
    }
  };
  stage(false);
  for (size_t i = 0; i < plan.steps.size(); ++i)
    issue(static_cast<int>(i),
          [&](const std::vector<cl_event>& w, cl_event* ev) { EnqueueStep(i, w, ev); });
  stage(true);

  if (total == 0)
    cl::CheckCL(cl::Guarded(cl::FaultPoint::kEnqueue,
                            [&] {
                              return clEnqueueMarkerWithWaitList(
                                  q, static_cast<cl_uint>(first.size()),
                                  first.empty() ? nullptr : first.data(), prev.out());
                            }),
                "clEnqueueMarkerWithWaitList");
  if (ooo) {
    cl::CheckCL(clRetainEvent(prev.get()), "clRetainEvent");
    last_ = cl::Event(prev.get());
  }
  return prev;
}

// A bound tensor's copy between the caller's memory and the Session's buffer: in before the
// run's steps, out after them.
void Session::EnqueueStagingCopy(const Binding& b, const std::vector<cl_event>& w,
                                 cl_event* ev) const {
  const cl::Context& ctx = exe_.context();
  cl_command_queue q = ctx.queue();
  const bool outputs = b.output;
  // Outputs copy from where kernels wrote them: an aliased input may be the caller's.
  cl_mem own = outputs ? MemoryOf(b.buffer) : BufferAt(b.buffer).mem();
  if (!own)
    Fail(ErrorCode::kUnsupported,
         "an output is the memory of an input bound to an SVM or USM pointer; bind one of "
         "them as a cl_mem or host pointer");
  cl_uint n = static_cast<cl_uint>(w.size());
  const cl_event* list = w.empty() ? nullptr : w.data();
  const ExternalTensor& t = b.tensor;
  const bool copy = b.mode == Binding::Mode::kStagedCopy;
  if (!copy) ++ctx.counters().transfers;
  cl::CheckCL(
      cl::Guarded(
          cl::FaultPoint::kTransfer,
          [&] {
            if (copy)
              return outputs
                         ? clEnqueueCopyBuffer(q, own, t.buffer, 0, t.offset, b.bytes, n, list, ev)
                         : clEnqueueCopyBuffer(q, t.buffer, own, t.offset, 0, b.bytes, n, list, ev);
            return outputs
                       ? clEnqueueReadBuffer(q, own, CL_FALSE, 0, b.bytes, t.pointer, n, list, ev)
                       : clEnqueueWriteBuffer(q, own, CL_FALSE, 0, b.bytes, t.pointer, n, list, ev);
          }),
      copy      ? "clEnqueueCopyBuffer"
      : outputs ? "clEnqueueReadBuffer"
                : "clEnqueueWriteBuffer");
}

// Step i of the plan: its kernel, or its library routine behind a barrier on w (routines take
// no wait list).
void Session::EnqueueStep(size_t i, const std::vector<cl_event>& w, cl_event* ev) const {
  const cl::Context& ctx = exe_.context();
  const KernelStep& s = exe_.plan().steps[i];
  if (!calls_[i]) {
    cl::Event out;
    cl::Launch(ctx, kernels_[i], s.global, s.local, ev ? &out : nullptr, w);
    if (ev) *ev = out.release();
    return;
  }
  if (!w.empty())
    cl::CheckCL(cl::Guarded(cl::FaultPoint::kEnqueue,
                            [&] {
                              return clEnqueueBarrierWithWaitList(
                                  ctx.queue(), static_cast<cl_uint>(w.size()), w.data(), nullptr);
                            }),
                "clEnqueueBarrierWithWaitList");
  (*calls_[i])(ctx.queue(), call_buffers_[i], s.call_args, ev);
}

cl::Event Session::Enqueue(const std::vector<cl_event>& wait) { return EnqueueRun(wait, nullptr); }

void Session::Execute(std::vector<StepTiming>* timings) {
  const cl::Context& ctx = exe_.context();
  if (timings && !ctx.profiling())
    Fail(ErrorCode::kUnsupported,
         "step timings need a command queue made with CL_QUEUE_PROFILING_ENABLE");
  std::vector<cl::Event> events(timings ? exe_.plan().steps.size() : 0);
  cl::Event done = EnqueueRun({}, timings ? &events : nullptr);
  WaitOrDrain(ctx, done);
  if (timings) {
    timings->clear();
    for (size_t i = 0; i < events.size(); ++i)
      timings->push_back(
          {&exe_.plan().steps[i], static_cast<double>(events[i].DurationNs()) * 1e-6});
  }
}

std::vector<HostTensor> Session::Run(const std::map<std::string, HostTensor>& inputs) {
  for (const TensorBinding& in : exe_.plan().inputs)
    if (!inputs.count(in.name))
      Fail(ErrorCode::kInvalidArgument, "input '{}' ({}[{}]) is not given", in.name,
           DTypeName(in.dtype), ShapeStr(in.shape));
  for (const auto& [name, t] : inputs) SetInput(name, t);
  Execute();
  std::vector<HostTensor> outs;
  for (size_t i = 0; i < exe_.plan().outputs.size(); ++i) outs.push_back(GetOutput(i));
  return outs;
}

std::vector<std::vector<double>> TimeExecutions(const std::vector<Session*>& sessions, int warmup,
                                                int repeat) {
  for (int i = 0; i < warmup; ++i)
    for (Session* s : sessions) s->Execute();
  std::vector<std::vector<double>> ms(sessions.size());
  for (int r = 0; r < std::max(repeat, 1); ++r)
    for (size_t i = 0; i < sessions.size(); ++i) {
      auto t0 = std::chrono::steady_clock::now();
      sessions[i]->Execute();
      ms[i].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  for (auto& t : ms) std::sort(t.begin(), t.end());
  return ms;
}

}  // namespace texel::runtime
