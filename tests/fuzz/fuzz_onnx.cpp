// libFuzzer harness: ONNX model bytes through the importer and the compiler (fuzz_model.h).
#include "frontend/linalg/importer.h"
#include "fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string prefix(reinterpret_cast<const char*>(data), size < 4096 ? size : 4096);
  if (texel::linalg_frontend::LooksLikeLinalg(prefix)) return -1;  // the linalg harness's inputs
  texel::fuzz::CompileModelBytes(data, size);
  return 0;
}
