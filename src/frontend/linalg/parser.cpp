#include "frontend/linalg/parser.h"

#include <fmt/format.h>

#include "frontend/linalg/attr_parser.h"
#include "frontend/linalg/cursor.h"
#include "frontend/linalg/lowering.h"
#include "frontend/linalg/type_parser.h"

namespace texel::linalg_frontend {
namespace {

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

class Parser {
 public:
  explicit Parser(Cursor& c) : c_(c) {}

  ast::Module Run() {
    ast::Module m;
    ParseTopLevel(m, nullptr);
    return m;
  }

 private:
  // Items of the file, or of the module opened at `module_head` (until its '}').
  void ParseTopLevel(ast::Module& m, const Token* module_head) {
    for (;;) {
      const Token& t = c_.Peek();
      if (t.kind == TokenKind::kEof) {
        if (module_head) c_.Fail(*module_head, "'module' is not closed with '}'");
        return;
      }
      if (module_head && c_.TryPunct("}")) {
        SkipLoc();
        return;
      }
      if (t.kind == TokenKind::kHashId || t.kind == TokenKind::kBangId) {
        ParseAlias();
      } else if (t.IsKeyword("module") || t.IsKeyword("builtin.module")) {
        if (module_head) c_.Fail(t, "nested modules are not supported", ErrorCode::kUnsupported);
        c_.Next();
        if (c_.Peek().kind == TokenKind::kAtId) c_.Next();
        if (c_.TryKeyword("attributes")) ParseAttrDict(c_);
        c_.ExpectPunct("{", "to open the module");
        ParseTopLevel(m, &t);
      } else if (t.IsKeyword("func.func")) {
        ParseFunction(m);
      } else {
        c_.Fail(t, "expected 'func.func', 'module' or an alias definition, got " + Describe(t));
      }
    }
  }

  void ParseAlias() {
    const Token& name = c_.Next();
    c_.ExpectPunct("=", "after '" + name.text + "'");
    bool attr = name.kind == TokenKind::kHashId;
    if (attr ? c_.attr_aliases.count(name.text) : c_.type_aliases.count(name.text))
      c_.Fail(name, "redefinition of '" + name.text + "'");
    if (attr)
      c_.attr_aliases[name.text] = ParseAttr(c_);
    else
      c_.type_aliases[name.text] = ParseType(c_);
  }

  // A trailing source location, loc(...), carries nothing texel uses.
  void SkipLoc() {
    if (c_.Peek().IsKeyword("loc") && c_.Peek(1).IsPunct("(")) {
      c_.Next();
      SkipBalanced(c_);
    }
  }

  ast::BlockArg ParseBlockArg(const char* where) {
    ast::BlockArg a;
    const Token& t = c_.ExpectKind(TokenKind::kPercentId, "an argument name", where);
    a.name = t.text;
    a.loc = t.loc;
    c_.ExpectPunct(":", "after argument " + a.name);
    a.type = ParseType(c_);
    if (c_.Peek().IsPunct("{")) ParseAttrDict(c_);  // {bufferization.writable = true}, ...
    SkipLoc();
    return a;
  }

  void ParseFunction(ast::Module& m) {
    ast::Function f;
    f.loc = c_.Next().loc;
    if (!c_.TryKeyword("private") && !c_.TryKeyword("public")) c_.TryKeyword("nested");
    f.name = c_.ExpectKind(TokenKind::kAtId, "a function name", "after 'func.func'").text;
    c_.ExpectPunct("(", "to open the argument list of " + f.name);
    if (!c_.TryPunct(")")) {
      for (;;) {
        f.args.push_back(ParseBlockArg("in the argument list"));
        if (c_.TryPunct(")")) break;
        c_.ExpectPunct(",", "between arguments");
      }
    }
    if (c_.TryPunct("->")) {
      bool parens = c_.TryPunct("(");
      if (!parens || !c_.TryPunct(")")) {
        for (;;) {
          f.results.push_back(ParseType(c_));
          // Result attributes only inside parentheses: a '{' after "-> T" opens the body.
          if (parens && c_.Peek().IsPunct("{")) ParseAttrDict(c_);
          if (!parens || c_.TryPunct(")")) break;
          c_.ExpectPunct(",", "between result types");
        }
      }
    }
    if (c_.TryKeyword("attributes")) ParseAttrDict(c_);
    if (!c_.Peek().IsPunct("{")) {  // a declaration: nothing to import
      SkipLoc();
      return;
    }
    ParseBlockBody(c_.Next(), f.body.ops);
    SkipLoc();
    m.functions.push_back(std::move(f));
  }

  // Ops up to the '}' that closes the block opened at `open`.
  void ParseBlockBody(const Token& open, std::vector<ast::Operation>& ops) {
    for (;;) {
      if (c_.TryPunct("}")) return;
      if (c_.AtEnd()) c_.Fail(open, "'{' is not closed with '}'");
      ops.push_back(ParseOp());
    }
  }

  void ParseRegion(ast::Operation& op) {
    const Token& open = c_.Next();
    Cursor::DepthGuard guard(c_, open);
    ast::Block b;
    if (c_.Peek().kind == TokenKind::kCaretId) {
      c_.Next();
      if (c_.TryPunct("(") && !c_.TryPunct(")")) {
        for (;;) {
          b.args.push_back(ParseBlockArg("in the block's argument list"));
          if (c_.TryPunct(")")) break;
          c_.ExpectPunct(",", "between block arguments");
        }
      }
      c_.ExpectPunct(":", "after the block label");
    }
    ParseBlockBody(open, b.ops);
    op.regions.push_back(std::move(b));
  }

  void ParseResults(ast::Operation& op) {
    for (;;) {
      const Token& r = c_.ExpectKind(TokenKind::kPercentId, "a result name", "before '='");
      if (c_.TryPunct(":")) {  // %r:2 names %r#0 and %r#1
        const Token& n = c_.ExpectKind(TokenKind::kInteger, "a result count", "after ':'");
        if (n.text.size() > 2 || n.text == "0")
          c_.Fail(n, "bad result count " + n.text + " (1 to 99)");
        for (int i = 0; i < std::stoi(n.text); ++i)
          op.results.push_back({fmt::format("{}#{}", r.text, i), r.loc});
      } else {
        op.results.push_back({r.text, r.loc});
      }
      if (c_.TryPunct("=")) return;
      c_.ExpectPunct(",", "between result names");
    }
  }

  ast::Operand ParseOperand(const std::string& context) {
    const Token& t = c_.ExpectKind(TokenKind::kPercentId, "an SSA value", context);
    return {t.text, t.loc};
  }

  void ParseTypeList(std::vector<ast::Type>& out) {
    for (;;) {
      out.push_back(ParseType(c_));
      if (!c_.TryPunct(",")) return;
    }
  }

  // ins(%a, %b : tensor<..>, tensor<..>) or outs(...), after the keyword.
  void ParseOperandGroup(ast::Operation& op, const std::string& keyword) {
    const Token& open = c_.ExpectPunct("(", "after '" + keyword + "'");
    if (c_.TryPunct(")")) return;
    size_t first = op.operands.size();  // earlier groups have as many types as values
    for (;;) {
      op.operands.push_back(ParseOperand("in '" + keyword + "(...)'"));
      if (!c_.TryPunct(",")) break;
    }
    c_.ExpectPunct(":", "before the types of '" + keyword + "(...)'");
    ParseTypeList(op.operand_types);
    if (op.operand_types.size() != op.operands.size())
      c_.Fail(open, fmt::format("'{}(...)' lists {} values but {} types", keyword,
                                op.operands.size() - first, op.operand_types.size() - first));
    c_.ExpectPunct(")", "to close '" + keyword + "('");
  }

  // {dict} and `key = value` attributes of a structured op, before ins or after outs.
  void ParseStructuredAttrs(ast::Operation& op) {
    for (;;) {
      if (c_.Peek().IsPunct("{") && op.operands.empty()) {
        for (auto& [k, v] : ParseAttrDict(c_)) op.attrs[k] = std::move(v);
      } else if (c_.Peek().kind == TokenKind::kBareId && c_.Peek(1).IsPunct("=")) {
        std::string key = c_.Next().text;
        c_.Next();
        op.attrs[key] = ParseAttr(c_);
      } else {
        return;
      }
    }
  }

  // linalg.NAME [attrs] [ins(...)] outs(...) [attrs] [region] [-> types]
  void ParseStructured(ast::Operation& op) {
    ParseStructuredAttrs(op);
    if (c_.TryKeyword("ins")) ParseOperandGroup(op, "ins");
    op.num_ins = static_cast<int>(op.operands.size());
    if (!c_.TryKeyword("outs"))
      c_.Fail(c_.Peek(),
              fmt::format("expected 'outs(...)' in '{}', got {}", op.name, Describe(c_.Peek())));
    ParseOperandGroup(op, "outs");
    ParseStructuredAttrs(op);
    if (c_.Peek().IsPunct("{")) ParseRegion(op);
    if (c_.TryPunct("->")) {
      bool parens = c_.TryPunct("(");
      if (!parens || !c_.TryPunct(")")) {
        ParseTypeList(op.result_types);
        if (parens) c_.ExpectPunct(")", "to close the result types");
      }
    }
  }

  // NAME [keyword,] [%a, %b] [fastmath<..>] [{dict}] [: types [to type]]: arith and math ops,
  // linalg.yield, return.
  void ParseSimple(ast::Operation& op) {
    const Token& first = c_.Peek();
    if ((first.kind == TokenKind::kBareId || first.kind == TokenKind::kInteger) &&
        (c_.Peek(1).IsPunct(",") || c_.Peek(1).IsPunct(":"))) {
      op.keyword = c_.Next().text;  // arith.cmpf's predicate
      c_.TryPunct(",");
    }
    if (c_.Peek().kind == TokenKind::kPercentId) {
      for (;;) {
        op.operands.push_back(ParseOperand("as an operand of '" + op.name + "'"));
        if (!c_.TryPunct(",")) break;
      }
    }
    for (;;) {
      if (c_.Peek().kind == TokenKind::kBareId && c_.Peek(1).IsPunct("<")) {
        c_.Next();
        SkipBalanced(c_);
      } else if (c_.Peek().IsPunct("{")) {
        ParseAttrDict(c_);
      } else {
        break;
      }
    }
    if (c_.TryPunct(":")) {
      ParseTypeList(op.operand_types);
      if (c_.TryKeyword("to")) op.result_types.push_back(ParseType(c_));
    }
  }

  void ParseOp(ast::Operation& op) {
    if (op.name == "arith.constant") {
      op.value = ParseAttr(c_);
    } else if (op.name == "tensor.empty") {
      c_.ExpectPunct("(", "after 'tensor.empty'");
      if (!c_.Peek().IsPunct(")"))
        c_.Fail(c_.Peek(), "tensor.empty with dynamic sizes is not supported",
                ErrorCode::kUnsupported);
      c_.Next();
      c_.ExpectPunct(":", "before the type of 'tensor.empty'");
      op.result_types.push_back(ParseType(c_));
    } else if (op.name == "bufferization.to_tensor") {
      op.operands.push_back(ParseOperand("after 'bufferization.to_tensor'"));
      while (c_.TryKeyword("restrict") || c_.TryKeyword("writable")) {
      }
      c_.ExpectPunct(":", "before the type of 'bufferization.to_tensor'");
      op.operand_types.push_back(ParseType(c_));
      if (c_.TryKeyword("to")) op.result_types.push_back(ParseType(c_));
    } else if (op.name == "bufferization.materialize_in_destination") {
      op.operands.push_back(ParseOperand("after '" + op.name + "'"));
      if (!c_.TryKeyword("in"))
        c_.Fail(c_.Peek(), "expected 'in' after the source, got " + Describe(c_.Peek()));
      while (c_.TryKeyword("restrict") || c_.TryKeyword("writable")) {
      }
      op.operands.push_back(ParseOperand("as the destination"));
      c_.ExpectPunct(":", "before the types of '" + op.name + "'");
      c_.ExpectPunct("(", "to open the operand types");
      ParseTypeList(op.operand_types);
      c_.ExpectPunct(")", "to close the operand types");
      c_.ExpectPunct("->", "after the operand types");
      if (c_.TryPunct("(")) {
        c_.ExpectPunct(")", "(the op has no results when it writes a memref)");
      } else {
        op.result_types.push_back(ParseType(c_));
      }
    } else if (op.name == "return" || op.name == "func.return" || op.name == "linalg.yield" ||
               op.name == "linalg.index") {
      ParseSimple(op);
    } else if (StartsWith(op.name, "linalg.")) {
      // An op outside the subset may have a syntax of its own (linalg.softmax dimension(1),
      // linalg.reduce's region): name it before parsing its structure.
      if (op.name != "linalg.generic" && !NamedOpLowerings().count(op.name))
        c_.Fail(op.loc, "'" + op.name + "' is not supported", ErrorCode::kUnsupported);
      ParseStructured(op);
    } else if (StartsWith(op.name, "arith.") || StartsWith(op.name, "math.")) {
      ParseSimple(op);
    } else {
      c_.Fail(op.loc, "'" + op.name + "' is not supported", ErrorCode::kUnsupported);
    }
  }

  ast::Operation ParseOp() {
    ast::Operation op;
    if (c_.Peek().kind == TokenKind::kPercentId) ParseResults(op);
    const Token& name = c_.Peek();
    if (name.kind == TokenKind::kString)
      c_.Fail(name,
              "the generic op form \"" + name.text +
                  "\"(...) is not supported; print the fragment in the custom form",
              ErrorCode::kUnsupported);
    if (name.kind != TokenKind::kBareId)
      c_.Fail(name, "expected an operation, got " + Describe(name));
    c_.Next();
    op.name = name.text;
    op.loc = name.loc;
    ParseOp(op);
    SkipLoc();
    return op;
  }

  Cursor& c_;
};

}  // namespace

ast::Module ParseModule(const std::string& text, const std::string& source) {
  Cursor c(Lex(text, source), source);
  return Parser(c).Run();
}

}  // namespace texel::linalg_frontend
