#include "runtime/clblast/clblast_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace texel::runtime {
namespace {

struct Loaded {
  ClblastApi api;
  bool ok = false;
  std::string why;
};

Loaded Load() {
  Loaded l;
  const char* off = std::getenv("TEXEL_CLBLAST");
  if (off && std::string(off) == "off") {
    l.why = "disabled by TEXEL_CLBLAST=off";
    return l;
  }
  const char* path = std::getenv("TEXEL_CLBLAST_LIBRARY");
  std::string file = path && *path ? path : "libclblast.so.1";
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process
  if (!h) {
    const char* err = dlerror();
    l.why = fmt::format("cannot load {}: {}", file, err ? err : "unknown error");
    return l;
  }
  auto sym = [&](const char* name) {
    void* p = dlsym(h, name);
    if (!p && l.why.empty()) l.why = fmt::format("{} has no {}", file, name);
    return p;
  };
  l.api.sgemm_strided_batched =
      reinterpret_cast<decltype(l.api.sgemm_strided_batched)>(sym("CLBlastSgemmStridedBatched"));
  l.api.sconvgemm = reinterpret_cast<decltype(l.api.sconvgemm)>(sym("CLBlastSconvgemm"));
  l.ok = l.why.empty();
  return l;
}

}  // namespace

const ClblastApi* LoadClblast(std::string* why) {
  static const Loaded loaded = Load();
  if (why) *why = loaded.why;
  return loaded.ok ? &loaded.api : nullptr;
}

}  // namespace texel::runtime
