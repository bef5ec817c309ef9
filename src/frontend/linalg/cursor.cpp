#include "frontend/linalg/cursor.h"

#include <fmt/format.h>

namespace texel::linalg_frontend {

namespace {
constexpr int kMaxDepth = 64;
}  // namespace

Cursor::Cursor(std::vector<Token> tokens, const std::string& source)
    : tokens_(std::move(tokens)), source_(source) {
  if (tokens_.empty()) tokens_.push_back(Token{});  // Lex() always ends with kEof
}

const Token& Cursor::Peek(size_t ahead) const {
  size_t i = pos_ + ahead;
  return i < tokens_.size() ? tokens_[i] : tokens_.back();
}

const Token& Cursor::Next() {
  const Token& t = Peek();
  if (pos_ < tokens_.size() - 1) ++pos_;
  return t;
}

bool Cursor::TryPunct(const char* p) {
  if (!Peek().IsPunct(p)) return false;
  Next();
  return true;
}

bool Cursor::TryKeyword(const char* k) {
  if (!Peek().IsKeyword(k)) return false;
  Next();
  return true;
}

const Token& Cursor::ExpectPunct(const char* p, const std::string& context) {
  if (!Peek().IsPunct(p))
    Fail(Peek(), fmt::format("expected '{}' {}, got {}", p, context, Describe(Peek())));
  return Next();
}

const Token& Cursor::ExpectKind(TokenKind kind, const std::string& what,
                                const std::string& context) {
  if (Peek().kind != kind)
    Fail(Peek(), fmt::format("expected {} {}, got {}", what, context, Describe(Peek())));
  return Next();
}

void Cursor::Fail(Location loc, const std::string& what, ErrorCode code) const {
  FailAt(code, source_, loc, what);
}

Cursor::DepthGuard::DepthGuard(Cursor& c, const Token& at) : c_(c) {
  if (++c_.depth_ > kMaxDepth) {
    --c_.depth_;
    c_.Fail(at, fmt::format("nested more than {} levels deep", kMaxDepth));
  }
}

}  // namespace texel::linalg_frontend
