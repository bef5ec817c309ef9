#include "frontend/linalg/lexer.h"

#include <fmt/format.h>

#include <cctype>

namespace texel::linalg_frontend {
namespace {

bool IsIdStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool IsIdChar(char c) { return IsIdStart(c) || IsDigit(c) || c == '$' || c == '.'; }
// Suffix identifiers (%name, ^name, #name, !name) may also hold '-'.
bool IsSuffixChar(char c) { return IsIdChar(c) || c == '-'; }

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& source) : s_(text), source_(source) {
    if (s_.rfind("\xEF\xBB\xBF", 0) == 0) i_ = 3;  // a UTF-8 byte-order mark, as the sniffer allows
  }

  std::vector<Token> Run() {
    std::vector<Token> out;
    for (;;) {
      SkipSpaceAndComments();
      Token t;
      t.loc = {line_, col_};
      if (i_ >= s_.size()) {
        out.push_back(t);
        return out;
      }
      LexOne(t);
      out.push_back(std::move(t));
    }
  }

 private:
  char Peek(size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }
  void Advance() {
    if (s_[i_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++i_;
  }
  std::string TakeWhile(bool (*pred)(char)) {
    size_t start = i_;
    while (i_ < s_.size() && pred(s_[i_])) Advance();
    return s_.substr(start, i_ - start);
  }
  [[noreturn]] void Fail(Location loc, const std::string& what) const {
    FailAt(ErrorCode::kInvalidModel, source_, loc, what);
  }

  void SkipSpaceAndComments() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(Peek()))) {
        Advance();
      } else if (Peek() == '/' && Peek(1) == '/') {
        while (i_ < s_.size() && Peek() != '\n') Advance();
      } else {
        return;
      }
    }
  }

  void LexOne(Token& t) {
    char c = Peek();
    if (IsIdStart(c)) {
      t.kind = TokenKind::kBareId;
      t.text = TakeWhile(IsIdChar);
    } else if (IsDigit(c)) {
      LexNumber(t);
    } else if (c == '%' || c == '@' || c == '#' || c == '!' || c == '^') {
      LexPrefixed(t, c);
    } else if (c == '"') {
      LexString(t);
    } else if (c == '-' && Peek(1) == '>') {
      t.kind = TokenKind::kPunct;
      t.text = "->";
      Advance();
      Advance();
    } else if (std::string_view("(){}[]<>,:=?*+-").find(c) != std::string_view::npos) {
      t.kind = TokenKind::kPunct;
      t.text = std::string(1, c);
      Advance();
    } else {
      Fail(t.loc, std::isprint(static_cast<unsigned char>(c))
                      ? fmt::format("unexpected character '{}'", c)
                      : fmt::format("unexpected byte 0x{:02x}", static_cast<unsigned char>(c)));
    }
  }

  // 42, 0x1F (hex integers also spell float bit patterns), 1.5, 1.e3, 2.0e-05. A shape such as
  // 64x128xf32 lexes as 64 then the bare identifier x128xf32.
  void LexNumber(Token& t) {
    size_t start = i_;
    t.kind = TokenKind::kInteger;
    if (Peek() == '0' && Peek(1) == 'x' && std::isxdigit(static_cast<unsigned char>(Peek(2)))) {
      Advance();
      Advance();
      TakeWhile([](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; });
    } else {
      TakeWhile(IsDigit);
      if (Peek() == '.') {
        t.kind = TokenKind::kFloat;
        Advance();
        TakeWhile(IsDigit);
        bool sign = Peek(1) == '+' || Peek(1) == '-';
        if ((Peek() == 'e' || Peek() == 'E') && IsDigit(Peek(sign ? 2 : 1))) {
          Advance();
          if (sign) Advance();
          TakeWhile(IsDigit);
        }
      }
    }
    t.text = s_.substr(start, i_ - start);
  }

  void LexPrefixed(Token& t, char c) {
    Advance();
    if (c == '@' && Peek() == '"') {  // @"quoted symbol"
      LexString(t);
      t.kind = TokenKind::kAtId;
      t.text.insert(t.text.begin(), '@');
      return;
    }
    std::string name = TakeWhile(IsSuffixChar);
    if (name.empty()) Fail(t.loc, fmt::format("expected a name after '{}'", c));
    if (c == '%' && Peek() == '#' && IsDigit(Peek(1))) {  // %r#1: result 1 of a group
      Advance();
      name += '#';
      name += TakeWhile(IsDigit);
    }
    t.kind = c == '%'   ? TokenKind::kPercentId
             : c == '@' ? TokenKind::kAtId
             : c == '#' ? TokenKind::kHashId
             : c == '!' ? TokenKind::kBangId
                        : TokenKind::kCaretId;
    t.text.assign(1, c);
    t.text += name;
  }

  void LexString(Token& t) {
    t.kind = TokenKind::kString;
    Advance();  // the opening quote
    for (;;) {
      if (i_ >= s_.size() || Peek() == '\n') Fail(t.loc, "unterminated string");
      char ch = Peek();
      Advance();
      if (ch == '"') return;
      if (ch == '\\' && i_ < s_.size()) {
        char e = Peek();
        Advance();
        if (e == 'n') {
          t.text += '\n';
        } else if (e == 't') {
          t.text += '\t';
        } else if (std::isxdigit(static_cast<unsigned char>(e)) &&
                   std::isxdigit(static_cast<unsigned char>(Peek()))) {  // \4A: a byte
          t.text += static_cast<char>(std::stoi(std::string{e, Peek()}, nullptr, 16));
          Advance();
        } else {
          t.text += e;
        }
        continue;
      }
      t.text += ch;
    }
  }

  const std::string& s_;
  const std::string& source_;
  size_t i_ = 0;
  int line_ = 1, col_ = 1;
};

}  // namespace

std::vector<Token> Lex(const std::string& text, const std::string& source) {
  return Lexer(text, source).Run();
}

std::string Describe(const Token& t) {
  if (t.kind == TokenKind::kEof) return "end of input";
  if (t.kind == TokenKind::kString) return fmt::format("string \"{}\"", t.text);
  return fmt::format("'{}'", t.text);
}

}  // namespace texel::linalg_frontend
