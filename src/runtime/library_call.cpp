#include "runtime/library_call.h"

#include <map>
#include <memory>
#include <mutex>

namespace texel::runtime {
namespace {

struct Calls {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<LibraryCall>, std::less<>> by_name;
};

Calls& GetCalls() {
  static auto* calls = new Calls;  // leaked: steps may run during static destruction
  return *calls;
}

}  // namespace

void RegisterLibraryCall(const std::string& name, LibraryCall call) {
  Calls& c = GetCalls();
  std::lock_guard lock(c.mu);
  c.by_name[name] = std::make_unique<LibraryCall>(std::move(call));
}

const LibraryCall* FindLibraryCall(std::string_view name) {
  Calls& c = GetCalls();
  std::lock_guard lock(c.mu);
  auto it = c.by_name.find(name);
  return it == c.by_name.end() ? nullptr : it->second.get();
}

}  // namespace texel::runtime
