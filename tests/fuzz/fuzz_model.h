// The ONNX and linalg harnesses' body: bytes -> import -> graph passes -> kernel generation for a
// CPU device described by its facts (cpu_facts.json; no OpenCL program is built), as `texel
// compile --facts` does. Memory and tensor limits are the defaults (core/limits.h).
#pragma once

#include <cstdint>
#include <string>

#include "api/compiler.h"
#include "fuzz_util.h"
#include "runtime/cl/device_facts.h"

namespace texel::fuzz {

// The CPU the harnesses compile for, read once.
inline const cl::DeviceInfo& Facts() {
  static const cl::DeviceInfo facts = cl::ReadDeviceFacts(TEXEL_FUZZ_FACTS);
  return facts;
}

inline void CompileModelBytes(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  Contained([&] {
    CompileOptions options;
    options.tuning = false;  // no database of the machine's (the tuning harness fuzzes those)
    // External data resolves against an empty directory of the harness's own.
    CompileBytesForDevice(bytes, "/nonexistent-texel-fuzz", Facts(), options);
  });
}

}  // namespace texel::fuzz
