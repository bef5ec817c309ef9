// The parsed form of a fragment: what the text says, before any meaning is given to it. The
// parser (parser.h) knows the syntax of each supported op family; the importer (importer.h)
// checks types and lowers to core IR.
// Lifetime: plain values; a Module owns everything in it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "frontend/linalg/location.h"

namespace texel::linalg_frontend::ast {

// A scalar element type, or a ranked tensor / memref with static dims and the identity layout.
struct Type {
  enum class Kind { kScalar, kTensor, kMemRef };
  Kind kind = Kind::kScalar;
  DType dtype = DType::kFloat32;
  Shape shape;  // empty for scalars and rank-0 shaped types; -1: a dynamic dim ('?')
  bool operator==(const Type&) const = default;
  bool is_shaped() const { return kind != Kind::kScalar; }
};
// As MLIR spells it: "f32", "tensor<64x128xf32>", "memref<f16>"; a dynamic dim (-1) as '?'.
std::string TypeText(const Type& t);
// MLIR element type names: f16/f32/f64, i1 (bool), i8..i64, ui8..ui64, index (as i64).
bool ParseElementType(std::string_view name, DType* out);
std::string ElementTypeText(DType t);

// A numeric literal as written: integers keep all 64 bits (they may spell a float's bits).
struct Number {
  bool is_int = false;
  bool hex = false;  // 0x...: for a float type, the bits of the value
  int64_t i = 0;
  double f = 0;
};

// affine_map<(d0, d1) -> (d1, 0)>: results are dim positions, or kZero for the constant 0.
struct AffineMap {
  static constexpr int kZero = -1;
  int num_dims = 0;
  std::vector<int> results;
  Location loc;
  bool IsIdentity() const;
};

// An attribute value, parsed as far as the importer needs it; anything else is kOther.
struct Attr {
  enum class Kind { kOther, kArray, kMap, kString, kNumber, kDense };
  Kind kind = Kind::kOther;
  Location loc;
  std::vector<Attr> elems;    // kArray
  AffineMap map;              // kMap
  std::string str;            // kString (also the keyword of #linalg.iterator_type<parallel>)
  Number number;              // kNumber
  std::vector<Number> dense;  // kDense: the elements of dense<...> in order (one: a splat)
  Type type;                  // the type after ':' of a typed attribute (dense<...> : tensor<..>)
  bool has_type = false;
};

struct Operand {
  std::string name;  // "%0"
  Location loc;
};

struct BlockArg {
  std::string name;
  Type type;
  Location loc;
};

struct Operation;

// One block of ops (a function body or a linalg.generic region) and its arguments.
struct Block {
  std::vector<BlockArg> args;
  std::vector<Operation> ops;
};

struct Operation {
  std::string name;  // "linalg.matmul"
  Location loc;      // of the name
  std::vector<Operand> results;
  std::vector<Operand> operands;  // structured ops: ins, then outs
  int num_ins = 0;                // structured ops
  std::vector<Type> operand_types;
  std::vector<Type> result_types;  // after '->' (structured ops) or the single ':' type
  std::string keyword;             // the predicate of arith.cmpf ("ogt")
  std::map<std::string, Attr> attrs;
  std::vector<Block> regions;  // linalg.generic's body
  Attr value;                  // arith.constant
};

struct Function {
  std::string name;  // "@entry"
  Location loc;
  std::vector<BlockArg> args;
  std::vector<Type> results;
  Block body;
};

struct Module {
  std::vector<Function> functions;
};

}  // namespace texel::linalg_frontend::ast
