// SHA-256 (FIPS 180-4), for cache keys and artifacts. Thread safety: pure function.
#pragma once

#include <string>
#include <string_view>

namespace texel {

// Lower-case hex digest of data.
std::string Sha256Hex(std::string_view data);

}  // namespace texel
