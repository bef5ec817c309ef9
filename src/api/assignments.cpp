#include "api/assignments.h"

namespace texel {

std::pair<std::string, std::string> SplitAssignment(const std::string& text, const char* what) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    Fail(ErrorCode::kInvalidArgument, "{} {}: expected NAME=VALUE", what, text);
  return {text.substr(0, eq), text.substr(eq + 1)};
}

}  // namespace texel
