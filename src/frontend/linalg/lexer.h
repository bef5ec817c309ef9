// Lexer for the MLIR text subset the linalg frontend reads. It knows MLIR's token classes
// (bare identifiers with dots, %values, @symbols, #attribute and !type aliases, ^blocks, numbers,
// strings, punctuation) but no grammar; `//` comments and whitespace are dropped.
// Thread safety: plain values and pure functions.
#pragma once

#include <string>
#include <vector>

#include "frontend/linalg/location.h"

namespace texel::linalg_frontend {

enum class TokenKind {
  kEof,
  kBareId,     // func.func, linalg.matmul, f32, x128xf32 (the tail of a shape), d0
  kPercentId,  // %arg0, %0, %r#1
  kAtId,       // @entry
  kHashId,     // #map, #linalg.iterator_type
  kBangId,     // !alias
  kCaretId,    // ^bb0
  kInteger,    // 42, 0x7FC00000
  kFloat,      // 1.0, 0.000000e+00
  kString,     // "parallel" (text holds the contents, escapes resolved)
  kPunct,      // ( ) { } [ ] < > , : = ? * + - ->
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;
  Location loc;
  bool Is(TokenKind k, const char* t) const { return kind == k && text == t; }
  bool IsPunct(const char* t) const { return Is(TokenKind::kPunct, t); }
  bool IsKeyword(const char* t) const { return Is(TokenKind::kBareId, t); }
};

// Splits text into tokens, ending with one kEof token. Throws Error(kInvalidModel) at the first
// character that starts no token ("<source>:<line>:<col>: unexpected character '$'").
std::vector<Token> Lex(const std::string& text, const std::string& source);

// How a token reads in messages: "'linalg.add'", "end of input".
std::string Describe(const Token& t);

}  // namespace texel::linalg_frontend
