#include "runtime/library_call.h"

#include <map>
#include <memory>
#include <mutex>

#include "runtime/clblast/clblast_library.h"

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

// The routines the runtime itself provides, registered before the first lookup.
void RegisterBuiltins() {
  static std::once_flag once;
  std::call_once(once, RegisterClblastCalls);
}

}  // namespace

void RegisterLibraryCall(const std::string& name, LibraryCall call) {
  Calls& c = GetCalls();
  std::lock_guard lock(c.mu);
  c.by_name[name] = std::make_unique<LibraryCall>(std::move(call));
}

const LibraryCall* FindLibraryCall(std::string_view name) {
  RegisterBuiltins();
  Calls& c = GetCalls();
  std::lock_guard lock(c.mu);
  auto it = c.by_name.find(name);
  return it == c.by_name.end() ? nullptr : it->second.get();
}

}  // namespace texel::runtime
