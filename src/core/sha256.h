// SHA-256 (FIPS 180-4), for cache keys and artifacts. Thread safety: pure function.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace texel {

// Lower-case hex digest of data; with the x86 SHA extensions where the CPU has them. hashed
// (when given) is called with each part of data once it is read, e.g. to drop a mapped file's
// pages as the hash goes.
std::string Sha256Hex(std::string_view data,
                      const std::function<void(std::string_view)>& hashed = {});
// The same without CPU extensions (what Sha256Hex does elsewhere; tests compare the two).
std::string Sha256HexPortable(std::string_view data);

}  // namespace texel
