// Attribute values of the linalg subset: arrays, affine_map<...>, dense<...>, array<i64: ...>,
// numbers, strings, #alias references and #linalg.iterator_type<...>. Values the importer has no
// use for (dictionaries, other dialect attributes) are skipped as balanced brackets.
#pragma once

#include <map>
#include <string>

#include "frontend/linalg/ast.h"
#include "frontend/linalg/cursor.h"

namespace texel::linalg_frontend {

ast::Attr ParseAttr(Cursor& c);
// `{key = value, flag, ...}`; keys are bare identifiers or strings.
std::map<std::string, ast::Attr> ParseAttrDict(Cursor& c);
// A number with an optional leading '-'; `what` names it in messages.
ast::Number ParseNumber(Cursor& c, const std::string& what);
// Consumes a bracketed group ((...), [...], {...}, <...>) starting at the current token.
void SkipBalanced(Cursor& c);

}  // namespace texel::linalg_frontend
