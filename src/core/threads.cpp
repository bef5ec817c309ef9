#include "core/threads.h"

#include <system_error>
#include <thread>
#include <vector>

namespace texel {

void RunOnThreads(size_t count, const std::function<void(size_t)>& work) {
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < count; ++t) {
    try {
      helpers.emplace_back(work, t);
    } catch (const std::system_error&) {
      break;  // fewer threads
    }
  }
  work(0);
  for (std::thread& h : helpers) h.join();
}

}  // namespace texel
