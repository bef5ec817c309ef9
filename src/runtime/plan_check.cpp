#include "runtime/plan_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "core/error.h"
#include "runtime/library_call.h"
#include "runtime/memory_plan.h"

namespace texel::runtime {
namespace {

// Far above any real model (256 TiB), low enough that sums of a few never overflow int64.
constexpr int64_t kMaxBytes = int64_t{1} << 48;
constexpr int64_t kMaxImageSide = int64_t{1} << 20;

int64_t ElementCount(const Shape& shape, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxBytes)
      Fail(ErrorCode::kInvalidModel, "{}: dimension {} is invalid", what, d);
    n *= std::max<int64_t>(d, 1);
    if (n > kMaxBytes) Fail(ErrorCode::kInvalidModel, "{}: more than 2^48 elements", what);
  }
  return NumElements(shape);
}

void CheckBuffer(const BufferDesc& b, size_t i) {
  std::string what = fmt::format("buffer {}", i);
  if (b.bytes < 0 || b.bytes > kMaxBytes)
    Fail(ErrorCode::kInvalidModel, "{}: size {} bytes is invalid", what, b.bytes);
  if (b.image_width < 0 || b.image_height < 0 || b.image_width > kMaxImageSide ||
      b.image_height > kMaxImageSide)
    Fail(ErrorCode::kInvalidModel, "{}: image of {} x {} texels is invalid", what, b.image_width,
         b.image_height);
  if (b.is_image() && (b.image_height == 0 ||
                       b.bytes != b.image_width * b.image_height * 4 * (b.image_half ? 2 : 4)))
    Fail(ErrorCode::kInvalidModel, "{}: {} bytes do not fit an image of {} x {} texels", what,
         b.bytes, b.image_width, b.image_height);
  if (b.constant) {  // its bytes: the tensor's, or (none there) the artifact's, checked there
    int64_t n =
        ElementCount(b.constant->shape, what) * static_cast<int64_t>(DTypeSize(b.constant->dtype));
    int64_t held = static_cast<int64_t>(b.constant->bytes.size());
    if (n != b.bytes || (held != 0 && held != b.bytes))
      Fail(ErrorCode::kInvalidModel, "{}: its constant holds {} bytes, the buffer {}", what,
           held != 0 ? held : n, b.bytes);
  }
}

void CheckBinding(const TensorBinding& t, const Plan& plan, const char* kind) {
  std::string what = fmt::format("{} '{}'", kind, t.name);
  if (t.buffer < 0 || static_cast<size_t>(t.buffer) >= plan.buffers.size())
    Fail(ErrorCode::kInvalidModel, "{}: buffer {} does not exist", what, t.buffer);
  const BufferDesc& b = plan.buffers[t.buffer];
  if (b.is_image() || b.constant)
    Fail(ErrorCode::kInvalidModel, "{}: buffer {} is an image or a constant", what, t.buffer);
  int64_t bytes = ElementCount(t.shape, what) * DTypeSize(t.dtype);
  if (bytes > b.bytes)
    Fail(ErrorCode::kInvalidModel, "{}: {} bytes do not fit buffer {} of {}", what, bytes, t.buffer,
         b.bytes);
  if (t.rows_buffer >= 0 && (static_cast<size_t>(t.rows_buffer) >= plan.buffers.size() ||
                             plan.buffers[t.rows_buffer].bytes < 8))
    Fail(ErrorCode::kInvalidModel, "{}: row count buffer {} is invalid", what, t.rows_buffer);
}

void CheckStep(const KernelStep& s, size_t i, const Plan& plan) {
  std::string what = fmt::format("step {} ({} '{}')", i, s.op, s.node);
  for (int b : s.buffers)
    if (b < 0 || static_cast<size_t>(b) >= plan.buffers.size())
      Fail(ErrorCode::kInvalidModel, "{}: buffer {} does not exist", what, b);
  if (!s.call.empty()) {
    for (int64_t a : s.call_args)
      if (a < 0 || a > kMaxBytes)
        Fail(ErrorCode::kInvalidModel, "{}: argument {} is invalid", what, a);
    return;
  }
  if (s.kernel.empty()) Fail(ErrorCode::kInvalidModel, "{}: no kernel name", what);
  if (s.global.empty() || s.global.size() > 3 ||
      (!s.local.empty() && s.local.size() != s.global.size()))
    Fail(ErrorCode::kInvalidModel, "{}: work sizes of {} and {} dimensions", what, s.global.size(),
         s.local.size());
  for (size_t d = 0; d < s.global.size(); ++d)
    if (s.global[d] == 0 || s.global[d] > (size_t{1} << 40) ||
        (!s.local.empty() && (s.local[d] == 0 || s.global[d] % s.local[d] != 0)))
      Fail(ErrorCode::kInvalidModel, "{}: work size {} (local {}) in dimension {} is invalid", what,
           s.global[d], s.local.empty() ? 0 : s.local[d], d);
}

// A buffer that is part of another: both plain device buffers in the arena (no constant, image,
// arrival counter or host-visible binding), the part non-empty (a sub-buffer) and inside the
// whole, the whole no part itself.
void CheckAlias(const Plan& plan, size_t i) {
  const BufferDesc& b = plan.buffers[i];
  if (b.alias_of < 0 && b.alias_offset == 0) return;
  std::string what = fmt::format("buffer {}", i);
  if (b.alias_of < 0 || static_cast<size_t>(b.alias_of) >= plan.buffers.size() ||
      static_cast<size_t>(b.alias_of) == i)
    Fail(ErrorCode::kInvalidModel, "{}: part of buffer {}, which does not exist", what, b.alias_of);
  const BufferDesc& whole = plan.buffers[b.alias_of];
  auto plain = [&](const BufferDesc& d, int index) {
    bool host = false;
    for (const auto* list : {&plan.inputs, &plan.outputs})
      for (const TensorBinding& t : *list)
        host = host || t.buffer == index || t.rows_buffer == index;
    return !d.constant && !d.is_image() && !d.zeroed && !host;
  };
  if (whole.alias_of >= 0 || !plain(b, static_cast<int>(i)) || !plain(whole, b.alias_of) ||
      b.bytes == 0 || b.alias_offset < 0 || b.alias_offset > whole.bytes - b.bytes)
    Fail(ErrorCode::kInvalidModel, "{}: {} bytes at offset {} cannot be part of buffer {}", what,
         b.bytes, b.alias_offset, b.alias_of);
}

void CheckMemory(const Plan& plan) {
  const MemoryPlan& m = plan.memory;
  const size_t n = plan.buffers.size();
  if (m.alignment <= 0 || m.alignment > (1 << 20) || m.arena_bytes < 0 || m.arena_bytes > kMaxBytes)
    Fail(ErrorCode::kInvalidModel, "memory plan: alignment {} or arena of {} bytes is invalid",
         m.alignment, m.arena_bytes);
  if (m.offsets.size() > n || m.texture_block.size() > n)
    Fail(ErrorCode::kInvalidModel, "memory plan: more entries than the plan's {} buffers", n);
  for (size_t i = 0; i < m.offsets.size(); ++i) {
    int64_t o = m.offsets[i];
    if (o < 0) continue;
    const BufferDesc& b = plan.buffers[i];
    if (b.constant || b.is_image() || o % m.alignment != 0 || o > m.arena_bytes - b.bytes)
      Fail(ErrorCode::kInvalidModel, "memory plan: buffer {} at offset {} does not fit the arena",
           i, o);
  }
  for (const TextureBlock& k : m.texture_blocks)
    if (k.width <= 0 || k.height <= 0 || k.width > kMaxImageSide || k.height > kMaxImageSide)
      Fail(ErrorCode::kInvalidModel, "memory plan: a pooled image of {} x {} texels", k.width,
           k.height);
  for (size_t i = 0; i < m.texture_block.size(); ++i) {
    int k = m.texture_block[i];
    if (k < 0) continue;
    const BufferDesc& b = plan.buffers[i];
    if (static_cast<size_t>(k) >= m.texture_blocks.size() || !b.is_image() || b.constant ||
        m.texture_blocks[k].width < b.image_width || m.texture_blocks[k].height < b.image_height ||
        m.texture_blocks[k].half != b.image_half)
      Fail(ErrorCode::kInvalidModel, "memory plan: image buffer {} does not fit pooled image {}", i,
           k);
  }
}

// `#pragma OPENCL EXTENSION name : enable` lines of source.
std::set<std::string> EnabledExtensions(const std::string& source) {
  std::set<std::string> out;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string pragma, opencl, extension, name, colon, state;
    words >> pragma >> opencl >> extension >> name >> colon >> state;
    if (pragma == "#pragma" && opencl == "OPENCL" && extension == "EXTENSION" && state == "enable")
      out.insert(name);
  }
  return out;
}

}  // namespace

void CheckPlan(const Plan& plan) {
  for (size_t i = 0; i < plan.buffers.size(); ++i) CheckBuffer(plan.buffers[i], i);
  for (size_t i = 0; i < plan.buffers.size(); ++i) CheckAlias(plan, i);
  for (const TensorBinding& t : plan.inputs) CheckBinding(t, plan, "input");
  for (const TensorBinding& t : plan.outputs) CheckBinding(t, plan, "output");
  for (size_t i = 0; i < plan.steps.size(); ++i) CheckStep(plan.steps[i], i, plan);
  CheckMemory(plan);
}

std::vector<std::string> MissingFeatures(const Plan& plan, const cl::DeviceInfo& device) {
  std::vector<std::string> missing;
  int64_t images = 0, width = 0, height = 0;
  for (const BufferDesc& b : plan.buffers)
    if (b.is_image())
      ++images, width = std::max(width, b.image_width), height = std::max(height, b.image_height);
  for (const TextureBlock& k : plan.memory.texture_blocks)
    width = std::max(width, k.width), height = std::max(height, k.height);
  if (images > 0 && !device.image_support)
    missing.push_back(fmt::format("images (the plan keeps {} values in 2D images)", images));
  else if (images > 0 && (static_cast<size_t>(width) > device.image2d_max_width ||
                          static_cast<size_t>(height) > device.image2d_max_height))
    missing.push_back(fmt::format("images of {} x {} texels (the device's are at most {} x {})",
                                  width, height, device.image2d_max_width,
                                  device.image2d_max_height));
  size_t group = 0;
  std::set<std::string> calls;
  for (const KernelStep& s : plan.steps) {
    if (!s.call.empty()) calls.insert(s.call);
    size_t items = s.local.empty() ? 0 : 1;
    for (size_t l : s.local) items *= l;
    group = std::max(group, items);
  }
  if (device.max_work_group_size > 0 && group > device.max_work_group_size)
    missing.push_back(fmt::format("work-groups of {} work-items (the device's are at most {})",
                                  group, device.max_work_group_size));
  for (const std::string& call : calls)
    if (!FindLibraryCall(call))
      missing.push_back(fmt::format("library routine '{}' (its library is not available)", call));
  for (const std::string& ext : EnabledExtensions(plan.source))
    if (!device.HasExtension(ext)) missing.push_back("extension " + ext);
  if (plan.build_options.find(kCorrectDivideOption) != std::string::npos &&
      !device.fp32_correct_divide)
    missing.push_back(fmt::format("correctly rounded f32 division (the program builds with {})",
                                  kCorrectDivideOption));
  // Inline PTX builds only in NVIDIA's OpenCL; mma.sync needs compute capability 8.0.
  bool ptx = plan.needs.inline_ptx;
  if (ptx && device.nv_warp_size == 0)
    missing.push_back("NVIDIA's OpenCL (the program has inline PTX)");
  else if (plan.needs.tensor_cores && device.nv_cc_major < 8)
    missing.push_back(fmt::format("tensor cores: compute capability 8.0 (the device's is {}.{})",
                                  device.nv_cc_major, device.nv_cc_minor));
  // Parts of buffers (Concats computed in place) are sub-buffers, which texel keeps off NVIDIA's
  // driver (memory_plan.h).
  auto parts = std::count_if(plan.buffers.begin(), plan.buffers.end(),
                             [](const BufferDesc& b) { return b.alias_of >= 0; });
  if (parts > 0 && !SubBuffersUsable(device))
    missing.push_back(fmt::format(
        "sub-buffers (the plan writes {} values in place into Concat outputs; this driver "
        "cannot release sub-buffers safely)",
        parts));
  // Work-groups that hand results to each other (zeroed arrival counters) rely on a fence that
  // orders memory across the device: PTX's on NVIDIA, OpenCL's global fence on a CPU.
  bool handoff = std::any_of(plan.buffers.begin(), plan.buffers.end(),
                             [](const BufferDesc& b) { return b.zeroed; });
  if (handoff && !ptx && device.kind != cl::DeviceKind::kCpu)
    missing.push_back(
        "a CPU: its work-groups hand results over through OpenCL's global fence, "
        "which orders memory across work-groups on CPUs only");
  return missing;
}

}  // namespace texel::runtime
