#include "runtime/executable.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "core/error.h"
#include "runtime/memory_plan.h"

namespace texel::runtime {

Executable::Executable(std::shared_ptr<cl::Context> ctx, Plan plan, cl::ProgramCache* cache)
    : ctx_(std::move(ctx)), plan_(std::move(plan)) {
  if (std::any_of(plan_.steps.begin(), plan_.steps.end(),
                  [](const KernelStep& s) { return s.call.empty(); }))
    program_ = std::make_unique<cl::Program>(*ctx_, plan_.source, plan_.build_options, cache);
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const BufferDesc& b = plan_.buffers[i];
    if (!b.constant) continue;
    cl::Buffer buf = b.is_image()
                         ? cl::Buffer::Image2D(*ctx_, b.image_width, b.image_height, b.image_half)
                         : cl::Buffer(*ctx_, static_cast<size_t>(b.bytes));
    if (b.bytes > 0) buf.Write(*ctx_, b.constant->bytes.data(), b.constant->bytes.size());
    constants_.emplace(static_cast<int>(i), std::move(buf));
  }
}

Session::Session(const Executable& exe) : exe_(exe) {
  const Plan& plan = exe.plan();
  // Without the arena every buffer has its own allocation: with TEXEL_ARENA=off (to rule the
  // arena out when debugging), and on NVIDIA's driver, whose processes crash when a sub-buffer
  // of the arena is released (580.x, H100; see docs/decisions.md).
  const char* arena_env = std::getenv("TEXEL_ARENA");
  bool no_arena = (arena_env && std::string(arena_env) == "off") ||
                  exe.context().info().vendor.find("NVIDIA") != std::string::npos;
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
    if (offset < 0) {
      buffers_[i] = cl::Buffer(exe.context(), static_cast<size_t>(b.bytes));
      slot_[i] = static_cast<int>(i);
      continue;
    }
    auto [it, fresh] = region_slot.try_emplace({offset, b.bytes}, static_cast<int>(i));
    if (fresh)
      buffers_[i] = cl::Buffer(arena_, static_cast<size_t>(offset), static_cast<size_t>(b.bytes));
    slot_[i] = it->second;
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const KernelStep& s = plan.steps[i];
    calls_.push_back(nullptr);
    call_buffers_.emplace_back();
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
    if (!t.bytes.empty()) BufferAt(in.buffer).Write(exe_.context(), t.bytes.data(), t.bytes.size());
    return;
  }
  Fail(ErrorCode::kInvalidArgument, "the model has no input named '{}'", name);
}

void Session::Execute(std::vector<StepTiming>* timings) {
  const Plan& plan = exe_.plan();
  std::vector<cl::Event> events(timings ? plan.steps.size() : 0);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const KernelStep& s = plan.steps[i];
    try {
      if (calls_[i]) {
        cl_event ev = nullptr;
        (*calls_[i])(exe_.context().queue(), call_buffers_[i], s.call_args,
                     timings ? &ev : nullptr);
        if (timings) events[i] = cl::Event(ev);
      } else {
        cl::Launch(exe_.context(), kernels_[i], s.global, s.local, timings ? &events[i] : nullptr);
      }
    } catch (Error& e) {
      e.AddContext(fmt::format("step {} ({} '{}')", i, s.op, s.node));
      throw;
    }
  }
  exe_.context().Finish();
  if (timings) {
    timings->clear();
    for (size_t i = 0; i < events.size(); ++i)
      timings->push_back({&plan.steps[i], static_cast<double>(events[i].DurationNs()) * 1e-6});
  }
}

HostTensor Session::GetOutput(size_t index) const {
  const TensorBinding& out = exe_.plan().outputs.at(index);
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

}  // namespace texel::runtime
