// Cursor: a position in a fragment's tokens, the alias tables the text has defined so far, and
// the error helpers every parsing function uses. Thread safety: none; one per parse.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "frontend/linalg/ast.h"
#include "frontend/linalg/lexer.h"

namespace texel::linalg_frontend {

class Cursor {
 public:
  Cursor(std::vector<Token> tokens, const std::string& source);

  const std::string& source() const { return source_; }
  // The token `ahead` places on; past the end, the final kEof token.
  const Token& Peek(size_t ahead = 0) const;
  const Token& Next();
  bool AtEnd() const { return Peek().kind == TokenKind::kEof; }

  // Consumes the token when it matches.
  bool TryPunct(const char* p);
  bool TryKeyword(const char* k);
  // Consumes a matching token or throws "expected '(' <context>, got 'x'".
  const Token& ExpectPunct(const char* p, const std::string& context);
  const Token& ExpectKind(TokenKind kind, const std::string& what, const std::string& context);

  [[noreturn]] void Fail(Location loc, const std::string& what,
                         ErrorCode code = ErrorCode::kInvalidModel) const;
  [[noreturn]] void Fail(const Token& at, const std::string& what,
                         ErrorCode code = ErrorCode::kInvalidModel) const {
    Fail(at.loc, what, code);
  }

  // Guards recursion (nested lists, regions) against stack exhaustion on hostile input.
  class DepthGuard {
   public:
    DepthGuard(Cursor& c, const Token& at);
    ~DepthGuard() { --c_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Cursor& c_;
  };

  std::map<std::string, ast::Attr> attr_aliases;  // "#map" -> its value
  // Attribute nodes copied by alias expansion so far: aliases of aliases grow geometrically, so
  // the total is capped (kMaxAliasNodes) to keep hostile text from exhausting memory.
  int64_t alias_nodes = 0;
  static constexpr int64_t kMaxAliasNodes = int64_t{1} << 20;
  std::map<std::string, ast::Type> type_aliases;  // "!t" -> its type

 private:
  std::vector<Token> tokens_;
  std::string source_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace texel::linalg_frontend
