// libFuzzer harness: .npy files through the reader that `texel run --input` uses.
#include "core/npy.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path =
      texel::fuzz::ScratchFile(reinterpret_cast<const char*>(data), size, ".npy");
  texel::fuzz::Contained([&] { texel::ReadNpy(path); });
  return 0;
}
