// libFuzzer harness: tuning database files (JSON lines) as a compile reads them: tests/data's
// convolution model compiled for the CPU facts with the bytes as its database (TuningDb::Load,
// the exact and nearest lookups, and any entry taken into the kernels' parameters).
#include <fstream>
#include <sstream>

#include "fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string model = [] {
    std::ifstream in(TEXEL_FUZZ_TUNING_MODEL, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }();
  const std::string& path =
      texel::fuzz::ScratchFile(reinterpret_cast<const char*>(data), size, ".jsonl");
  texel::fuzz::Contained([&] {
    texel::CompileOptions options;
    options.tuning_db = path;
    texel::CompileBytesForDevice(model, ".", texel::fuzz::Facts(), options);
  });
  return 0;
}
