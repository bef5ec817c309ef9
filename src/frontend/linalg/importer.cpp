#include "frontend/linalg/importer.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <optional>

#include "core/file_io.h"
#include "frontend/linalg/function_importer.h"
#include "frontend/linalg/parser.h"

namespace texel::linalg_frontend {

std::unique_ptr<ir::Graph> ImportLinalgText(const std::string& text, const std::string& source_name,
                                            const frontend::ImportOptions& opts) {
  ast::Module m = ParseModule(text, source_name);
  if (m.functions.empty())
    FailAt(ErrorCode::kInvalidModel, source_name, {1, 1},
           "no function to import (expected 'func.func @name(...) { ... }')");
  if (m.functions.size() > 1)
    FailAt(ErrorCode::kUnsupported, source_name, m.functions[1].loc,
           fmt::format("a fragment holds one function; {} is another after {}", m.functions[1].name,
                       m.functions[0].name));
  return ImportFunction(m.functions[0], source_name, opts);
}

std::unique_ptr<ir::Graph> ImportLinalgFile(const std::string& path,
                                            const frontend::ImportOptions& opts) {
  std::string text;
  try {
    if (!std::filesystem::exists(path)) Fail(ErrorCode::kNotFound, "file not found");
    if (std::filesystem::is_directory(path))
      Fail(ErrorCode::kInvalidArgument, "is a directory, not an MLIR file");
    std::optional<std::string> bytes = ReadFile(path);
    if (!bytes) Fail(ErrorCode::kIo, "cannot read the file (no permission?)");
    text = std::move(*bytes);
  } catch (Error& e) {
    e.AddContext(path);
    throw;
  }
  return ImportLinalgText(text, path, opts);  // errors name path:line:col
}

bool LooksLikeLinalg(const std::string& bytes_prefix) {
  const std::string& s = bytes_prefix;
  size_t i = s.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte order mark
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i]))) {
      ++i;
    } else if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
    } else {
      break;
    }
  }
  auto is_id = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  };
  auto word = [&](const char* w) {
    size_t n = std::char_traits<char>::length(w);
    return s.compare(i, n, w) == 0 && (i + n == s.size() || !is_id(s[i + n]));
  };
  if (word("module") || word("builtin.module") || word("func.func")) return true;
  return i + 1 < s.size() && (s[i] == '#' || s[i] == '!') &&
         (std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '_');
}

}  // namespace texel::linalg_frontend
