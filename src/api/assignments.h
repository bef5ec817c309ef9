// "NAME=VALUE" option parsing shared by the CLI (--input-shape, -i, --freeze) and the C API's
// texel_compile_options_t::input_shapes.
#pragma once

#include <fmt/format.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/shape.h"

namespace texel {

// Splits "NAME=VALUE"; `what` names the option in the error ("--input-shape").
std::pair<std::string, std::string> SplitAssignment(const std::string& text, const char* what);

// "NAME=VALUE" items into a map of parse(VALUE); a name given twice, or an item that does not
// split or parse, fails naming `what` and the item.
template <class T, class Parse>
std::map<std::string, T> ParseAssignments(const std::vector<std::string>& items, const char* what,
                                          Parse parse) {
  std::map<std::string, T> out;
  for (const auto& item : items) {
    auto [name, value] = SplitAssignment(item, what);
    if (out.count(name)) Fail(ErrorCode::kInvalidArgument, "{} {}: given twice", what, name);
    try {
      out[name] = parse(value);
    } catch (Error& e) {
      e.AddContext(fmt::format("{} {}", what, item));
      throw;
    }
  }
  return out;
}

// "NAME=DIMS" items (DIMS as ParseShape reads them: 1x3x224x224).
inline std::map<std::string, Shape> ParseInputShapes(const std::vector<std::string>& items,
                                                     const char* what) {
  return ParseAssignments<Shape>(items, what, [](const std::string& v) { return ParseShape(v); });
}

}  // namespace texel
