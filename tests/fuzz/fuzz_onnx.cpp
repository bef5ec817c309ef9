// libFuzzer harness: ONNX model bytes through the importer and the compiler (fuzz_model.h).
#include "fuzz_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] != 0x08 && data[0] != 0x0a && data[0] != 0x12 && data[0] != 0x3a &&
      data[0] != 0x42 && data[0] != 0x1a && data[0] != 0x22 && data[0] != 0x2a && data[0] != 0x32)
    return -1;  // not a ModelProto's first field tag: leave linalg's text to its harness
  texel::fuzz::CompileModelBytes(data, size);
  return 0;
}
