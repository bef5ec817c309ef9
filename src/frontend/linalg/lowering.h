// Lowering: the state shared by the functions that turn parsed ops into core IR — what each SSA
// name stands for (in nested scopes: a linalg.generic body sees the function's names), the
// graph being built, and helpers that check operand types against the types the text states and
// report errors at the op's position.
// Thread safety: none; one per import.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/linalg/ast.h"
#include "ir/graph.h"

namespace texel::linalg_frontend {

// What an SSA name stands for.
struct Binding {
  enum class Kind {
    kTensor,  // a tensor value
    kScalar,  // a scalar; its value broadcasts over the iteration space (rank 0 at top level)
    kEmpty,   // tensor.empty, or a block argument reading one: shape only, contents undefined
    kMemRef,  // a function argument; read through bufferization.to_tensor
  };
  Kind kind = Kind::kTensor;
  ast::Type type;  // as the defining op states it
  ir::Value* value = nullptr;
  int arg = -1;  // kMemRef: the argument's position
  Location loc;  // of the definition
};

class Lowering {
 public:
  Lowering(ir::Graph& g, const std::string& source) : g_(g), source_(source) {}

  ir::Graph& graph() { return g_; }
  const std::string& source() const { return source_; }
  [[noreturn]] void Fail(Location loc, const std::string& what,
                         ErrorCode code = ErrorCode::kInvalidModel) const;

  void PushScope() { scopes_.emplace_back(); }
  void PopScope() { scopes_.pop_back(); }
  // Errors on a name already visible (MLIR forbids shadowing).
  void Define(const ast::Operand& name, Binding b);
  const Binding& Lookup(const ast::Operand& use) const;
  // Binds op's result names to `results`; no names (results unused) is fine.
  void DefineResults(const ast::Operation& op, std::vector<Binding> results);

  // The tensor `use` names, which must have the `annotated` type. kEmpty returns nullptr when
  // allow_empty, else it is an error (its contents are undefined).
  ir::Value* Tensor(const ast::Operand& use, const ast::Type& annotated, bool allow_empty = false);
  // The scalar `use` names (a value broadcastable over the iteration space), of `annotated`
  // type (a scalar type).
  ir::Value* Scalar(const ast::Operand& use, const ast::Type& annotated);

  // Adds a node for `op` (named after its first result); a type error of the graph is reported
  // at the op's position.
  ir::Value* Emit(const ast::Operation& op, ir::OpKind kind, std::vector<ir::Value*> inputs,
                  ir::Attrs attrs = {});
  // A constant of dtype and shape from literal numbers (one number: a splat). Hex integers
  // give float bit patterns, as MLIR prints NaN and infinities.
  ir::Value* Constant(const std::string& name, DType dtype, const Shape& shape,
                      const std::vector<ast::Number>& values, Location loc);

  // The outs type of a structured op with `num_ins` ins and one outs operand, checked against
  // its one result type (ops on tensors return the updated outs).
  const ast::Type& CheckStructured(const ast::Operation& op, int num_ins) const;
  // An integer list attribute ([1, 0] or array<i64: 1, 0>); errors when missing or malformed.
  std::vector<int64_t> IntsAttr(const ast::Operation& op, const std::string& key) const;

  static ast::Type TensorType(const ir::Value* v) {
    return {ast::Type::Kind::kTensor, v->type.dtype, v->type.shape};
  }
  static Binding TensorBinding(ir::Value* v, Location loc) {
    return {Binding::Kind::kTensor, TensorType(v), v, -1, loc};
  }

 private:
  ir::Graph& g_;
  std::string source_;
  std::vector<std::map<std::string, Binding>> scopes_ = {{}};
};

// Ops of the function body other than the function-level ones (arguments, results), by name.
using LowerFn = void (*)(Lowering&, const ast::Operation&);
// linalg named ops (lower_named.cpp) and linalg.generic (lower_generic.cpp).
const std::map<std::string, LowerFn>& NamedOpLowerings();
void LowerGeneric(Lowering& l, const ast::Operation& op);
// arith.constant and tensor.empty, which may appear at top level and in generic bodies.
void LowerConstant(Lowering& l, const ast::Operation& op);

}  // namespace texel::linalg_frontend
