// texel's version (CMake's project version), for artifacts, the C API and `texel --version`.
#pragma once

namespace texel {

inline constexpr const char* kVersion = TEXEL_VERSION_STRING;

}  // namespace texel
