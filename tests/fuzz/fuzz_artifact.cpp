// libFuzzer harness: artifact bytes (`texel compile -o`) through the runtime's loader, up to the
// plan's checks (runtime/plan_check.h), without building programs.
#include "fuzz_util.h"
#include "runtime/artifact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  texel::fuzz::Contained([&] { texel::runtime::ReadArtifact(bytes, "fuzz.texel"); });
  return 0;
}
