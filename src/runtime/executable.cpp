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

}  // namespace texel::runtime
