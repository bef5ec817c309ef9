#include "frontend/linalg/type_parser.h"

#include <fmt/format.h>

#include <cctype>

namespace texel::linalg_frontend {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 32;

// The dims and element type of "64x?x128xf32" (a shaped type's body, spelled without spaces).
ast::Type SplitShapedBody(Cursor& c, const std::string& body, Location loc, ast::Type t) {
  size_t i = 0;
  for (;;) {
    if (body.compare(i, 2, "?x") == 0) {
      t.shape.push_back(-1);
      i += 2;
      continue;
    }
    size_t j = i;
    int64_t dim = 0;
    while (j < body.size() && std::isdigit(static_cast<unsigned char>(body[j]))) {
      dim = dim * 10 + (body[j++] - '0');
      if (dim > kMaxElements) c.Fail(loc, "dim is too large", ErrorCode::kUnsupported);
    }
    if (j == i || j >= body.size() || body[j] != 'x') break;
    t.shape.push_back(dim);
    i = j + 1;
  }
  std::string elem = body.substr(i);
  if (!ast::ParseElementType(elem, &t.dtype))
    c.Fail(loc,
           elem.empty() || std::isdigit(static_cast<unsigned char>(elem[0]))
               ? fmt::format("malformed shaped type body '{}'", body)
               : fmt::format("element type '{}' is not supported", elem),
           elem.empty() ? ErrorCode::kInvalidModel : ErrorCode::kUnsupported);
  int64_t elements = 1;
  for (int64_t d : t.shape) {
    if (d == 0)
      c.Fail(
          loc,
          fmt::format("{} has a zero-sized dim; empty tensors are not supported", ast::TypeText(t)),
          ErrorCode::kUnsupported);
    if (d > 0 && (d > kMaxElements / elements || (elements *= d) > kMaxElements))
      c.Fail(loc, fmt::format("{} has more than 2^32 elements", ast::TypeText(t)),
             ErrorCode::kUnsupported);
  }
  return t;
}

ast::Type ParseShaped(Cursor& c) {
  const Token& head = c.Next();
  ast::Type t;
  t.kind = head.text == "tensor" ? ast::Type::Kind::kTensor : ast::Type::Kind::kMemRef;
  c.ExpectPunct("<", "after '" + head.text + "'");
  std::string body;
  for (int depth = 0;;) {
    const Token& tok = c.Peek();
    if (tok.kind == TokenKind::kEof) c.Fail(head, "unterminated type '" + head.text + "<'");
    if (tok.IsPunct(">") && depth == 0) break;
    if (tok.IsPunct("<")) ++depth;
    if (tok.IsPunct(">")) --depth;
    if (tok.IsPunct(",") && depth == 0)
      c.Fail(tok,
             t.kind == ast::Type::Kind::kMemRef
                 ? "memref layouts and memory spaces are not supported (identity layout only)"
                 : "tensor encodings are not supported",
             ErrorCode::kUnsupported);
    if (tok.IsPunct("*") && body.empty())
      c.Fail(tok, "unranked " + head.text + "s are not supported", ErrorCode::kUnsupported);
    body += tok.text;
    c.Next();
  }
  c.Next();  // '>'
  return SplitShapedBody(c, body, head.loc, t);
}

}  // namespace

ast::Type ParseType(Cursor& c) {
  const Token& t = c.Peek();
  if (t.kind == TokenKind::kBangId) {
    auto it = c.type_aliases.find(t.text);
    if (it == c.type_aliases.end()) c.Fail(t, "unknown type alias '" + t.text + "'");
    c.Next();
    return it->second;
  }
  if (t.kind != TokenKind::kBareId) c.Fail(t, "expected a type, got " + Describe(t));
  if ((t.text == "tensor" || t.text == "memref") && c.Peek(1).IsPunct("<")) return ParseShaped(c);
  ast::Type s;
  if (!ast::ParseElementType(t.text, &s.dtype))
    c.Fail(t, fmt::format("type '{}' is not supported", t.text), ErrorCode::kUnsupported);
  c.Next();
  return s;
}

}  // namespace texel::linalg_frontend
