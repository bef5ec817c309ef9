#include "frontend/linalg/location.h"

#include <fmt/format.h>

namespace texel::linalg_frontend {

std::string PosText(Location loc) { return fmt::format("{}:{}", loc.line, loc.col); }

void FailAt(ErrorCode code, const std::string& source, Location loc, const std::string& what) {
  Error e(code, what);
  e.AddContext(fmt::format("{}:{}:{}", source, loc.line, loc.col));
  throw e;
}

}  // namespace texel::linalg_frontend
