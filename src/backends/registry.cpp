#include <algorithm>
#include <mutex>

#include "backends/backend.h"
#include "backends/clblast/clblast_backend.h"
#include "backends/native/native_backend.h"

namespace texel::backends {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<Backend>> backends;
};

// Built-in backends are registered on first use, so that a static library keeps them.
Registry& GetRegistry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->backends.push_back(std::make_unique<NativeBackend>());
    reg->backends.push_back(std::make_unique<ClblastBackend>());
    return reg;
  }();
  return *r;
}

}  // namespace

void RegisterBackend(std::unique_ptr<Backend> backend) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  std::erase_if(r.backends, [&](const auto& b) { return b->name() == backend->name(); });
  r.backends.push_back(std::move(backend));
}

const Backend* FindBackend(std::string_view name) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  for (const auto& b : r.backends)
    if (b->name() == name) return b.get();
  return nullptr;
}

}  // namespace texel::backends
