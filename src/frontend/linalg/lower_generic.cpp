// linalg.generic with parallel loops -> core IR. Every operand is lined up with the iteration
// space (its map's dims in loop order, size-1 dims where the map leaves a loop out), so that
// each scalar op of the body becomes one elementwise op on whole tensors, broadcasting as numpy
// does. The output's map must be the identity.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "frontend/linalg/lowering.h"

namespace texel::linalg_frontend {
namespace {

using ir::OpKind;

std::vector<ast::AffineMap> IndexingMaps(Lowering& l, const ast::Operation& op) {
  auto it = op.attrs.find("indexing_maps");
  if (it == op.attrs.end()) l.Fail(op.loc, "'linalg.generic' needs 'indexing_maps'");
  std::vector<ast::AffineMap> maps;
  for (const ast::Attr& a : it->second.elems) {
    if (a.kind != ast::Attr::Kind::kMap)
      l.Fail(a.loc, "indexing_maps must hold affine maps (affine_map<...> or #alias)");
    maps.push_back(a.map);
  }
  if (it->second.kind != ast::Attr::Kind::kArray || maps.size() != op.operands.size())
    l.Fail(it->second.loc,
           fmt::format("indexing_maps must list one map per operand ({})", op.operands.size()));
  return maps;
}

int ParallelLoops(Lowering& l, const ast::Operation& op) {
  auto it = op.attrs.find("iterator_types");
  if (it == op.attrs.end() || it->second.kind != ast::Attr::Kind::kArray)
    l.Fail(op.loc, "'linalg.generic' needs 'iterator_types' (a list)");
  for (const ast::Attr& a : it->second.elems) {
    if (a.kind != ast::Attr::Kind::kString)
      l.Fail(a.loc, "iterator_types must hold \"parallel\" or \"reduction\"");
    if (a.str != "parallel")
      l.Fail(a.loc, fmt::format("iterator type '{}' is not supported (only parallel loops)", a.str),
             ErrorCode::kUnsupported);
  }
  return static_cast<int>(it->second.elems.size());
}

// Operand x read through `map`, reshaped (and transposed where the map reorders dims) so that
// it broadcasts over the iteration space `loops`.
ir::Value* Align(Lowering& l, const ast::Operation& op, ir::Value* x, const ast::AffineMap& map,
                 const Shape& loops) {
  const Shape& xs = x->type.shape;
  std::vector<int> dims;  // loop of each kept operand dim
  Shape kept;
  for (size_t j = 0; j < xs.size(); ++j) {
    int d = map.results[j];
    if (d == ast::AffineMap::kZero) {
      if (xs[j] != 1)
        l.Fail(map.loc,
               fmt::format("operand dim {} has size {}, but the map reads only its index 0; this "
                           "is supported for size-1 dims only",
                           j, xs[j]),
               ErrorCode::kUnsupported);
      continue;
    }
    if (std::find(dims.begin(), dims.end(), d) != dims.end())
      l.Fail(map.loc, fmt::format("the map uses d{} twice (diagonal access is not supported)", d),
             ErrorCode::kUnsupported);
    if (xs[j] != loops[d])
      l.Fail(map.loc, fmt::format("operand dim {} has size {}, but loop d{} runs {} times", j,
                                  xs[j], d, loops[d]));
    dims.push_back(d);
    kept.push_back(xs[j]);
  }
  if (kept.size() != xs.size()) x = l.Emit(op, OpKind::kReshape, {x}, {{"shape", kept}});
  std::vector<int64_t> perm(dims.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return dims[a] < dims[b]; });
  if (!std::is_sorted(dims.begin(), dims.end()))
    x = l.Emit(op, OpKind::kTranspose, {x}, {{"perm", perm}});
  if (dims.empty()) return x;  // rank 0 broadcasts as it is
  Shape target(loops.size(), 1);
  for (int d : dims) target[d] = loops[d];
  if (target != x->type.shape) x = l.Emit(op, OpKind::kReshape, {x}, {{"shape", target}});
  return x;
}

ast::Type ScalarType(DType t) { return {ast::Type::Kind::kScalar, t, {}}; }

void DefineScalar(Lowering& l, const ast::Operation& op, ir::Value* v) {
  l.DefineResults(op, {{Binding::Kind::kScalar, ScalarType(v->type.dtype), v, -1, op.loc}});
}

// The one type a scalar op states (": f32"), of the float or integer kind its name says.
const ast::Type& StatedType(Lowering& l, const ast::Operation& op, size_t operands) {
  if (op.operands.size() != operands)
    l.Fail(op.loc, fmt::format("'{}' takes {} operand{}, got {}", op.name, operands,
                               operands == 1 ? "" : "s", op.operands.size()));
  if (op.operand_types.size() != 1 || op.operand_types[0].is_shaped())
    l.Fail(op.loc, fmt::format("'{}' must state one scalar type (': f32')", op.name));
  return op.operand_types[0];
}

void CheckKind(Lowering& l, const ast::Operation& op, DType t, bool want_float) {
  if (IsFloat(t) != want_float)
    l.Fail(op.loc, fmt::format("'{}' needs {} type, got {}", op.name,
                               want_float ? "a float" : "an integer", ast::ElementTypeText(t)));
  // MLIR's i1 is a signed 1-bit integer (true is -1, 1 + 1 is 0); texel's bool is 0/1, so
  // integer arithmetic, comparisons and casts on i1 are refused rather than computed otherwise.
  if (t == DType::kBool)
    l.Fail(op.loc, fmt::format("'{}' on i1 is not supported", op.name), ErrorCode::kUnsupported);
}

// Scalar ops of the body with a core op each: name -> op, operand count, float (or integer).
struct ScalarRule {
  OpKind kind;
  int operands;
  bool is_float;
};
const std::map<std::string, ScalarRule>& ScalarRules() {
  static const std::map<std::string, ScalarRule> kRules = {
      {"arith.addf", {OpKind::kAdd, 2, true}},     {"arith.subf", {OpKind::kSub, 2, true}},
      {"arith.mulf", {OpKind::kMul, 2, true}},     {"arith.divf", {OpKind::kDiv, 2, true}},
      {"arith.maximumf", {OpKind::kMax, 2, true}}, {"arith.minimumf", {OpKind::kMin, 2, true}},
      {"math.powf", {OpKind::kPow, 2, true}},      {"arith.addi", {OpKind::kAdd, 2, false}},
      {"arith.subi", {OpKind::kSub, 2, false}},    {"arith.muli", {OpKind::kMul, 2, false}},
      {"arith.maxsi", {OpKind::kMax, 2, false}},   {"arith.minsi", {OpKind::kMin, 2, false}},
      {"arith.negf", {OpKind::kNeg, 1, true}},     {"math.exp", {OpKind::kExp, 1, true}},
      {"math.log", {OpKind::kLog, 1, true}},       {"math.sqrt", {OpKind::kSqrt, 1, true}},
      {"math.tanh", {OpKind::kTanh, 1, true}},     {"math.absf", {OpKind::kAbs, 1, true}},
      {"math.erf", {OpKind::kErf, 1, true}},       {"math.floor", {OpKind::kFloor, 1, true}},
      {"math.ceil", {OpKind::kCeil, 1, true}},     {"math.sin", {OpKind::kSin, 1, true}},
      {"math.cos", {OpKind::kCos, 1, true}},       {"math.roundeven", {OpKind::kRound, 1, true}},
      {"math.absi", {OpKind::kAbs, 1, false}},
  };
  return kRules;
}

void LowerRule(Lowering& l, const ast::Operation& op, const ScalarRule& r) {
  const ast::Type& t = StatedType(l, op, static_cast<size_t>(r.operands));
  CheckKind(l, op, t.dtype, r.is_float);
  std::vector<ir::Value*> in;
  for (const ast::Operand& o : op.operands) in.push_back(l.Scalar(o, t));
  DefineScalar(l, op, l.Emit(op, r.kind, in));
}

// rsqrt(x) = 1 / sqrt(x)
void LowerRsqrt(Lowering& l, const ast::Operation& op) {
  const ast::Type& t = StatedType(l, op, 1);
  CheckKind(l, op, t.dtype, true);
  ir::Value* s = l.Emit(op, OpKind::kSqrt, {l.Scalar(op.operands[0], t)});
  DefineScalar(l, op, l.Emit(op, OpKind::kReciprocal, {s}));
}

// maxnumf / minnumf return the other operand where one is NaN (maximumf propagates NaN):
// where(isnan(a), b, where(isnan(b), a, max(a, b))).
void LowerNum(Lowering& l, const ast::Operation& op, OpKind kind) {
  const ast::Type& t = StatedType(l, op, 2);
  CheckKind(l, op, t.dtype, true);
  ir::Value* a = l.Scalar(op.operands[0], t);
  ir::Value* b = l.Scalar(op.operands[1], t);
  ir::Value* m = l.Emit(op, kind, {a, b});
  ir::Value* inner = l.Emit(op, OpKind::kWhere, {l.Emit(op, OpKind::kIsNaN, {b}), a, m});
  DefineScalar(l, op, l.Emit(op, OpKind::kWhere, {l.Emit(op, OpKind::kIsNaN, {a}), b, inner}));
}

// Comparison predicates as the set of outcomes they accept: a < b, a == b, a > b, unordered.
enum Outcome { kLt = 1, kEq = 2, kGt = 4, kUn = 8 };
const std::map<std::string, int>& Predicates(bool is_float) {
  static const std::map<std::string, int> kFloat = {
      {"false", 0},
      {"oeq", kEq},
      {"ogt", kGt},
      {"oge", kGt | kEq},
      {"olt", kLt},
      {"ole", kLt | kEq},
      {"one", kLt | kGt},
      {"ord", kLt | kEq | kGt},
      {"ueq", kUn | kEq},
      {"ugt", kUn | kGt},
      {"uge", kUn | kGt | kEq},
      {"ult", kUn | kLt},
      {"ule", kUn | kLt | kEq},
      {"une", kUn | kLt | kGt},
      {"uno", kUn},
      {"true", kLt | kEq | kGt | kUn},
  };
  static const std::map<std::string, int> kInt = {
      {"eq", kEq},        {"ne", kLt | kGt}, {"slt", kLt},
      {"sle", kLt | kEq}, {"sgt", kGt},      {"sge", kGt | kEq},
  };
  return is_float ? kFloat : kInt;
}

// The outcomes are exclusive, so a set that holds "unordered" is the negation of the ordered
// outcomes it leaves out: ule = !(a > b).
void LowerCompare(Lowering& l, const ast::Operation& op, bool is_float) {
  const ast::Type& t = StatedType(l, op, 2);
  CheckKind(l, op, t.dtype, is_float);
  const auto& preds = Predicates(is_float);
  auto p = preds.find(op.keyword);
  if (p == preds.end())
    l.Fail(op.loc, fmt::format("'{}' predicate '{}' is not supported", op.name, op.keyword),
           ErrorCode::kUnsupported);
  ir::Value* a = l.Scalar(op.operands[0], t);
  ir::Value* b = l.Scalar(op.operands[1], t);
  bool negate = (p->second & kUn) != 0;
  int want = negate ? ~p->second & (kLt | kEq | kGt) : p->second;
  ir::Value* acc = nullptr;
  for (auto [bit, kind] : {std::pair{kLt, OpKind::kLess}, std::pair{kEq, OpKind::kEqual},
                           std::pair{kGt, OpKind::kGreater}}) {
    if (!(want & bit)) continue;
    ir::Value* v = l.Emit(op, kind, {a, b});
    acc = acc ? l.Emit(op, OpKind::kOr, {acc, v}) : v;
  }
  if (!acc) {  // "false", or "true" negated: no comparison to make
    ast::Number zero;
    zero.is_int = true;
    acc =
        l.Constant(op.results.empty() ? "" : op.results[0].name, DType::kBool, {}, {zero}, op.loc);
  }
  if (negate) acc = l.Emit(op, OpKind::kNot, {acc});
  DefineScalar(l, op, acc);
}

// arith.select %cond, %a, %b : f32
void LowerSelect(Lowering& l, const ast::Operation& op) {
  if (op.operands.size() != 3 || op.operand_types.empty())
    l.Fail(op.loc, "'arith.select' takes a condition and two values and states their type");
  const ast::Type& t = op.operand_types.back();
  ir::Value* c = l.Scalar(op.operands[0], ScalarType(DType::kBool));
  ir::Value* a = l.Scalar(op.operands[1], t);
  ir::Value* b = l.Scalar(op.operands[2], t);
  DefineScalar(l, op, l.Emit(op, OpKind::kWhere, {c, a, b}));
}

// arith.extf %x : f16 to f32, and the other conversions: from-kind, to-kind.
void LowerCast(Lowering& l, const ast::Operation& op, bool from_float, bool to_float) {
  const ast::Type& t = StatedType(l, op, 1);
  if (op.result_types.size() != 1 || op.result_types[0].is_shaped())
    l.Fail(op.loc, fmt::format("'{}' must state its result type ('to f32')", op.name));
  DType to = op.result_types[0].dtype;
  CheckKind(l, op, t.dtype, from_float);
  CheckKind(l, op, to, to_float);
  ir::Value* x = l.Scalar(op.operands[0], t);
  DefineScalar(l, op, l.Emit(op, OpKind::kCast, {x}, {{"to", static_cast<int64_t>(to)}}));
}

void LowerBodyOp(Lowering& l, const ast::Operation& op) {
  auto rule = ScalarRules().find(op.name);
  if (rule != ScalarRules().end()) return LowerRule(l, op, rule->second);
  if (op.name == "arith.constant") return LowerConstant(l, op);
  if (op.name == "math.rsqrt") return LowerRsqrt(l, op);
  if (op.name == "arith.maxnumf") return LowerNum(l, op, OpKind::kMax);
  if (op.name == "arith.minnumf") return LowerNum(l, op, OpKind::kMin);
  if (op.name == "arith.cmpf") return LowerCompare(l, op, true);
  if (op.name == "arith.cmpi") return LowerCompare(l, op, false);
  if (op.name == "arith.select") return LowerSelect(l, op);
  if (op.name == "arith.extf" || op.name == "arith.truncf") return LowerCast(l, op, true, true);
  if (op.name == "arith.sitofp") return LowerCast(l, op, false, true);
  if (op.name == "arith.fptosi") return LowerCast(l, op, true, false);
  if (op.name == "arith.extsi" || op.name == "arith.trunci") return LowerCast(l, op, false, false);
  l.Fail(op.loc, fmt::format("'{}' is not supported in a linalg.generic body", op.name),
         ErrorCode::kUnsupported);
}

}  // namespace

void LowerGeneric(Lowering& l, const ast::Operation& op) {
  const ast::Type& out = l.CheckStructured(op, op.num_ins);
  std::vector<ast::AffineMap> maps = IndexingMaps(l, op);
  int loops = ParallelLoops(l, op);
  for (const ast::AffineMap& m : maps)
    if (m.num_dims != loops)
      l.Fail(m.loc, fmt::format("the map has {} dims, but there are {} loops", m.num_dims, loops));
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (maps[i].results.size() != op.operand_types[i].shape.size())
      l.Fail(maps[i].loc,
             fmt::format("the map has {} results, but operand {} ({}) has rank {}",
                         maps[i].results.size(), op.operands[i].name,
                         ast::TypeText(op.operand_types[i]), op.operand_types[i].shape.size()));
  if (!maps.back().IsIdentity())
    l.Fail(maps.back().loc, "the output's indexing map must be the identity",
           ErrorCode::kUnsupported);
  if (op.regions.size() != 1) l.Fail(op.loc, "'linalg.generic' needs a body");
  const ast::Block& body = op.regions[0];
  if (body.args.size() != op.operands.size())
    l.Fail(op.loc, fmt::format("the body has {} arguments, but the op has {} operands",
                               body.args.size(), op.operands.size()));

  std::vector<Binding> args;
  for (int i = 0; i <= op.num_ins; ++i) {
    const ast::Type& t = op.operand_types[i];
    const ast::BlockArg& arg = body.args[i];
    if (arg.type != ScalarType(t.dtype))
      l.Fail(arg.loc, fmt::format("block argument {} has type {}, but operand {} has element "
                                  "type {}",
                                  arg.name, ast::TypeText(arg.type), op.operands[i].name,
                                  ast::ElementTypeText(t.dtype)));
    Binding b{Binding::Kind::kScalar, arg.type, nullptr, -1, arg.loc};
    if (i == op.num_ins) {  // the outs operand, read where the body uses its argument
      b.value = l.Tensor(op.operands[i], t, /*allow_empty=*/true);
      if (!b.value) b.kind = Binding::Kind::kEmpty;
    } else if (!t.is_shaped()) {
      b.value = l.Scalar(op.operands[i], t);
    } else {
      b.value = Align(l, op, l.Tensor(op.operands[i], t), maps[i], out.shape);
    }
    args.push_back(b);
  }

  l.PushScope();
  for (size_t i = 0; i < args.size(); ++i) l.Define({body.args[i].name, body.args[i].loc}, args[i]);
  ir::Value* y = nullptr;
  for (size_t i = 0; i < body.ops.size(); ++i) {
    const ast::Operation& b = body.ops[i];
    if (b.name != "linalg.yield") {
      LowerBodyOp(l, b);
      continue;
    }
    if (i + 1 != body.ops.size()) l.Fail(body.ops[i + 1].loc, "op after 'linalg.yield'");
    if (b.operands.size() != 1 || b.operand_types.size() != 1)
      l.Fail(b.loc, "'linalg.yield' must yield one value (the output element) and state its type");
    if (b.operand_types[0] != ScalarType(out.dtype))
      l.Fail(b.loc,
             fmt::format("'linalg.yield' yields {}, but the output element type is {}",
                         ast::TypeText(b.operand_types[0]), ast::ElementTypeText(out.dtype)));
    y = l.Scalar(b.operands[0], b.operand_types[0]);
  }
  l.PopScope();
  if (!y) l.Fail(op.loc, "the body does not end with 'linalg.yield'");
  if (y->type.shape != out.shape) y = l.Emit(op, OpKind::kExpand, {y}, {{"shape", out.shape}});
  l.DefineResults(op, {Lowering::TensorBinding(y, op.loc)});
}

}  // namespace texel::linalg_frontend
