#include "frontend/linalg/attr_parser.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>

#include "frontend/linalg/type_parser.h"

namespace texel::linalg_frontend {
namespace {

bool IsOpener(const Token& t) {
  return t.IsPunct("(") || t.IsPunct("[") || t.IsPunct("{") || t.IsPunct("<");
}
bool IsCloser(const Token& t) {
  return t.IsPunct(")") || t.IsPunct("]") || t.IsPunct("}") || t.IsPunct(">");
}

// An optional ": type" after a value (1 : i64, dense<1.0> : tensor<4xf32>).
void MaybeTyped(Cursor& c, ast::Attr& a) {
  if (!c.TryPunct(":")) return;
  a.type = ParseType(c);
  a.has_type = true;
}

// affine_map<(d0, d1) -> (d1, 0)>, after "affine_map". Results other than a dim or the constant
// 0 (d0 + 1, d0 floordiv 2, symbols) are not supported.
ast::AffineMap ParseAffineMap(Cursor& c) {
  ast::AffineMap m;
  m.loc = c.Next().loc;
  c.ExpectPunct("<", "after 'affine_map'");
  c.ExpectPunct("(", "to open the affine map's dims");
  std::vector<std::string> dims;
  if (!c.TryPunct(")")) {
    for (;;) {
      dims.push_back(c.ExpectKind(TokenKind::kBareId, "a dim name", "in an affine map").text);
      if (c.TryPunct(")")) break;
      c.ExpectPunct(",", "between affine map dims");
    }
  }
  m.num_dims = static_cast<int>(dims.size());
  if (c.Peek().IsPunct("["))
    c.Fail(c.Peek(), "affine map symbols are not supported", ErrorCode::kUnsupported);
  c.ExpectPunct("->", "in an affine map");
  c.ExpectPunct("(", "to open the affine map's results");
  if (!c.TryPunct(")")) {
    for (;;) {
      const Token& first = c.Peek();
      std::string text;
      int n = 0;
      for (int depth = 0;; ++n) {
        const Token& t = c.Peek();
        if (t.kind == TokenKind::kEof) c.Fail(first, "unterminated affine map");
        if (depth == 0 && (t.IsPunct(",") || t.IsPunct(")"))) break;
        if (t.IsPunct("(")) ++depth;
        if (t.IsPunct(")")) --depth;
        text += (text.empty() ? "" : " ") + t.text;
        c.Next();
      }
      if (n == 0) c.Fail(first, "expected an affine map result, got " + Describe(first));
      constexpr int kNone = -2;
      int index = n == 1 && first.Is(TokenKind::kInteger, "0") ? ast::AffineMap::kZero : kNone;
      for (size_t d = 0; d < dims.size(); ++d)
        if (n == 1 && first.kind == TokenKind::kBareId && first.text == dims[d])
          index = static_cast<int>(d);
      if (index == kNone)
        c.Fail(first,
               fmt::format("affine map result '{}' is not supported (only dims and 0)", text),
               ErrorCode::kUnsupported);
      m.results.push_back(index);
      if (c.TryPunct(")")) break;
      c.ExpectPunct(",", "between affine map results");
    }
  }
  c.ExpectPunct(">", "to close 'affine_map<'");
  return m;
}

// The elements of dense<...> in order, nested lists flattened.
void ParseDenseElems(Cursor& c, std::vector<ast::Number>& out) {
  Cursor::DepthGuard guard(c, c.Peek());
  if (c.TryPunct("[")) {
    if (c.TryPunct("]")) return;
    for (;;) {
      ParseDenseElems(c, out);
      if (c.TryPunct("]")) return;
      c.ExpectPunct(",", "between dense elements");
    }
  }
  if (c.Peek().IsKeyword("true") || c.Peek().IsKeyword("false")) {
    ast::Number n;
    n.is_int = true;
    n.i = c.Next().text == "true";
    n.f = static_cast<double>(n.i);
    out.push_back(n);
    return;
  }
  if (c.Peek().kind == TokenKind::kString)
    c.Fail(c.Peek(), "hex-encoded dense literals are not supported", ErrorCode::kUnsupported);
  out.push_back(ParseNumber(c, "a dense element"));
}

// array<i64: 1, 0>, after "array".
ast::Attr ParseArray(Cursor& c, ast::Attr a) {
  c.Next();
  c.ExpectPunct("<", "after 'array'");
  a.kind = ast::Attr::Kind::kArray;
  c.ExpectKind(TokenKind::kBareId, "an element type", "in 'array<'");
  if (c.TryPunct(":")) {
    for (;;) {
      ast::Attr e;
      e.loc = c.Peek().loc;
      e.kind = ast::Attr::Kind::kNumber;
      e.number = ParseNumber(c, "an array element");
      a.elems.push_back(e);
      if (!c.TryPunct(",")) break;
    }
  }
  c.ExpectPunct(">", "to close 'array<'");
  return a;
}

int64_t NodeCount(const ast::Attr& a) {
  int64_t n = 1 + static_cast<int64_t>(a.dense.size());
  for (const ast::Attr& e : a.elems) n += NodeCount(e);
  return n;
}

// #name: an alias defined above, or a dialect attribute (#linalg.iterator_type<parallel>).
ast::Attr ParseHash(Cursor& c, ast::Attr a) {
  const Token& t = c.Next();
  auto it = c.attr_aliases.find(t.text);
  if (it != c.attr_aliases.end()) {
    c.alias_nodes += NodeCount(it->second);
    if (c.alias_nodes > Cursor::kMaxAliasNodes)
      c.Fail(t,
             fmt::format("attribute aliases expand to more than {} nodes", Cursor::kMaxAliasNodes),
             ErrorCode::kUnsupported);
    ast::Attr v = it->second;
    v.loc = t.loc;
    if (v.kind == ast::Attr::Kind::kMap) v.map.loc = t.loc;
    return v;
  }
  if (t.text.find('.') == std::string::npos) c.Fail(t, "unknown attribute alias '" + t.text + "'");
  if (!c.Peek().IsPunct("<")) return a;
  if (t.text == "#linalg.iterator_type") {
    c.Next();
    a.kind = ast::Attr::Kind::kString;
    a.str =
        c.ExpectKind(TokenKind::kBareId, "an iterator type", "in '#linalg.iterator_type<'").text;
    c.ExpectPunct(">", "to close '#linalg.iterator_type<'");
    return a;
  }
  SkipBalanced(c);
  return a;
}

}  // namespace

ast::Number ParseNumber(Cursor& c, const std::string& what) {
  bool neg = c.TryPunct("-");
  const Token& t = c.Peek();
  ast::Number n;
  if (t.kind == TokenKind::kInteger) {
    n.is_int = true;
    bool hex = n.hex = t.text.size() > 2 && t.text[1] == 'x';
    errno = 0;
    unsigned long long u = std::strtoull(t.text.c_str() + (hex ? 2 : 0), nullptr, hex ? 16 : 10);
    if (errno == ERANGE || (!hex && u > static_cast<unsigned long long>(INT64_MAX)))
      c.Fail(t, "integer literal " + t.text + " is too large");
    if (hex && neg) c.Fail(t, "a hex literal cannot be negated");
    n.i = static_cast<int64_t>(u);  // hex: a bit pattern, possibly of a float
    if (neg) n.i = -n.i;
    n.f = static_cast<double>(n.i);
  } else if (t.kind == TokenKind::kFloat) {
    n.f = std::strtod(t.text.c_str(), nullptr);
    if (neg) n.f = -n.f;
  } else {
    c.Fail(t, fmt::format("expected {}, got {}", what, Describe(t)));
  }
  c.Next();
  return n;
}

void SkipBalanced(Cursor& c) {
  const Token& open = c.Peek();
  if (!IsOpener(open)) c.Fail(open, "expected a bracket, got " + Describe(open));
  for (int depth = 0;;) {
    const Token& t = c.Next();
    if (t.kind == TokenKind::kEof) c.Fail(open, "unbalanced '" + open.text + "'");
    if (IsOpener(t)) ++depth;
    if (IsCloser(t) && --depth == 0) return;
  }
}

ast::Attr ParseAttr(Cursor& c) {
  const Token& t = c.Peek();
  Cursor::DepthGuard guard(c, t);
  ast::Attr a;
  a.loc = t.loc;
  if (t.IsPunct("[")) {
    c.Next();
    a.kind = ast::Attr::Kind::kArray;
    if (c.TryPunct("]")) return a;
    for (;;) {
      a.elems.push_back(ParseAttr(c));
      if (c.TryPunct("]")) return a;
      c.ExpectPunct(",", "between array elements");
    }
  }
  if (t.IsPunct("{")) {
    SkipBalanced(c);
    return a;
  }
  if (t.IsPunct("-") || t.kind == TokenKind::kInteger || t.kind == TokenKind::kFloat) {
    a.kind = ast::Attr::Kind::kNumber;
    a.number = ParseNumber(c, "a number");
    MaybeTyped(c, a);
    return a;
  }
  if (t.kind == TokenKind::kString) {
    a.kind = ast::Attr::Kind::kString;
    a.str = c.Next().text;
    return a;
  }
  if (t.kind == TokenKind::kHashId) return ParseHash(c, a);
  if (t.kind != TokenKind::kBareId) c.Fail(t, "expected an attribute value, got " + Describe(t));
  bool angle = c.Peek(1).IsPunct("<");
  if (t.text == "affine_map" && angle) {
    a.kind = ast::Attr::Kind::kMap;
    a.map = ParseAffineMap(c);
    return a;
  }
  if (t.text == "array" && angle) return ParseArray(c, a);
  if (t.text == "dense" && angle) {
    c.Next();
    c.Next();
    if (c.Peek().IsPunct(">"))
      c.Fail(c.Peek(), "empty dense literals are not supported", ErrorCode::kUnsupported);
    ParseDenseElems(c, a.dense);
    c.ExpectPunct(">", "to close 'dense<'");
    a.kind = ast::Attr::Kind::kDense;
    MaybeTyped(c, a);
    return a;
  }
  c.Next();
  if (t.text == "true" || t.text == "false") {
    a.kind = ast::Attr::Kind::kNumber;
    a.str = t.text;
    a.number.is_int = true;
    a.number.i = t.text == "true";
    a.number.f = static_cast<double>(a.number.i);
    MaybeTyped(c, a);
    return a;
  }
  if (angle || (t.text == "loc" && c.Peek().IsPunct("("))) SkipBalanced(c);  // strided<>, loc()
  return a;
}

std::map<std::string, ast::Attr> ParseAttrDict(Cursor& c) {
  std::map<std::string, ast::Attr> out;
  c.ExpectPunct("{", "to open an attribute dictionary");
  if (c.TryPunct("}")) return out;
  for (;;) {
    const Token& key = c.Peek();
    if (key.kind != TokenKind::kBareId && key.kind != TokenKind::kString)
      c.Fail(key, "expected an attribute name, got " + Describe(key));
    c.Next();
    ast::Attr v;  // a key alone is a unit attribute
    v.loc = key.loc;
    if (c.TryPunct("=")) v = ParseAttr(c);
    out[key.text] = std::move(v);
    if (c.TryPunct("}")) return out;
    c.ExpectPunct(",", "between attributes");
  }
}

}  // namespace texel::linalg_frontend
