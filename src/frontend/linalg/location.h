// Source positions of the linalg frontend and the error that points at one.
// Thread safety: plain values and pure functions.
#pragma once

#include <string>

#include "core/error.h"

namespace texel::linalg_frontend {

// 1-based line and column (in bytes) of a token in the fragment's text.
struct Location {
  int line = 0;
  int col = 0;
};

// "<line>:<col>", for messages that point at a second place.
std::string PosText(Location loc);

// Throws Error(code) whose what() reads "<source>:<line>:<col>: <what>". The position is the
// error's only context, so callers can tell positioned errors from others (context().empty()).
[[noreturn]] void FailAt(ErrorCode code, const std::string& source, Location loc,
                         const std::string& what);

}  // namespace texel::linalg_frontend
