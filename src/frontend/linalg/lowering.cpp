#include "frontend/linalg/lowering.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace texel::linalg_frontend {
namespace {

// Element i of a constant from a literal number.
void Store(HostTensor& t, int64_t i, const ast::Number& n) {
  switch (t.dtype) {
    case DType::kFloat32: {
      float f = static_cast<float>(n.f);
      if (n.hex) {
        uint32_t bits = static_cast<uint32_t>(n.i);
        std::memcpy(&f, &bits, sizeof f);
      }
      t.data<float>()[i] = f;
      return;
    }
    case DType::kFloat16:
      t.data<uint16_t>()[i] =
          n.hex ? static_cast<uint16_t>(n.i) : FloatToHalf(static_cast<float>(n.f));
      return;
    case DType::kFloat64: {
      double d = n.f;
      if (n.hex) std::memcpy(&d, &n.i, sizeof d);
      t.data<double>()[i] = d;
      return;
    }
    case DType::kBool: t.data<uint8_t>()[i] = n.i != 0; return;
    default:
      VisitDType(t.dtype,
                 [&](auto z) { t.data<decltype(z)>()[i] = static_cast<decltype(z)>(n.i); });
  }
}

}  // namespace

void Lowering::Fail(Location loc, const std::string& what, ErrorCode code) const {
  FailAt(code, source_, loc, what);
}

void Lowering::Define(const ast::Operand& name, Binding b) {
  for (const auto& scope : scopes_) {
    auto it = scope.find(name.name);
    if (it != scope.end())
      Fail(name.loc, fmt::format("redefinition of {} (first defined at {})", name.name,
                                 PosText(it->second.loc)));
  }
  b.loc = name.loc;
  scopes_.back()[name.name] = std::move(b);
}

const Binding& Lowering::Lookup(const ast::Operand& use) const {
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s) {
    auto it = s->find(use.name);
    if (it != s->end()) return it->second;
  }
  Fail(use.loc, "use of undefined value " + use.name);
}

void Lowering::DefineResults(const ast::Operation& op, std::vector<Binding> results) {
  if (op.results.empty()) return;
  if (op.results.size() != results.size())
    Fail(op.loc, fmt::format("'{}' has {} result{}, but {} names are given", op.name,
                             results.size(), results.size() == 1 ? "" : "s", op.results.size()));
  for (size_t i = 0; i < results.size(); ++i) Define(op.results[i], std::move(results[i]));
}

ir::Value* Lowering::Tensor(const ast::Operand& use, const ast::Type& annotated, bool allow_empty) {
  const Binding& b = Lookup(use);
  if (annotated.kind == ast::Type::Kind::kMemRef)
    Fail(use.loc,
         "linalg ops on memrefs are not supported; read arguments with bufferization.to_tensor",
         ErrorCode::kUnsupported);
  if (b.kind == Binding::Kind::kMemRef)
    Fail(use.loc, use.name + " is a memref argument; read it with bufferization.to_tensor");
  if (!annotated.is_shaped() || !b.type.is_shaped())
    Fail(use.loc, fmt::format("{} has type {}, but a tensor of type {} is expected here", use.name,
                              ast::TypeText(b.type), ast::TypeText(annotated)));
  if (b.type != annotated)
    Fail(use.loc, fmt::format("{} has type {}, but the op states {}", use.name,
                              ast::TypeText(b.type), ast::TypeText(annotated)));
  if (b.kind == Binding::Kind::kEmpty) {
    if (allow_empty) return nullptr;
    Fail(use.loc, use.name +
                      " comes from tensor.empty, whose contents are undefined; it can only be "
                      "the outs operand of an op that overwrites it");
  }
  return b.value;
}

ir::Value* Lowering::Scalar(const ast::Operand& use, const ast::Type& annotated) {
  const Binding& b = Lookup(use);
  if (b.kind == Binding::Kind::kEmpty && !b.type.is_shaped())
    Fail(use.loc, use.name +
                      " reads the outs operand, which comes from tensor.empty and has undefined "
                      "contents");
  if (b.kind != Binding::Kind::kScalar)
    Fail(use.loc, fmt::format("{} has type {}, but a scalar is expected here", use.name,
                              ast::TypeText(b.type)));
  if (b.type != annotated)
    Fail(use.loc, fmt::format("{} has type {}, but the op states {}", use.name,
                              ast::TypeText(b.type), ast::TypeText(annotated)));
  return b.value;
}

const ast::Type& Lowering::CheckStructured(const ast::Operation& op, int num_ins) const {
  if (op.num_ins != num_ins)
    Fail(op.loc, fmt::format("'{}' takes {} ins operand{}, got {}", op.name, num_ins,
                             num_ins == 1 ? "" : "s", op.num_ins));
  size_t outs = op.operands.size() - static_cast<size_t>(op.num_ins);
  if (outs != 1)
    Fail(op.loc, fmt::format("'{}' takes one outs operand, got {}", op.name, outs),
         outs > 1 ? ErrorCode::kUnsupported : ErrorCode::kInvalidModel);
  if (op.name != "linalg.generic" && !op.regions.empty())
    Fail(op.loc, fmt::format("'{}' takes no region", op.name));
  if (op.attrs.count("indexing_maps") && op.name != "linalg.generic")
    Fail(op.attrs.at("indexing_maps").loc,
         fmt::format("'{}' with explicit indexing_maps is not supported (write a linalg.generic)",
                     op.name),
         ErrorCode::kUnsupported);
  const ast::Type& out = op.operand_types.back();
  if (out.kind == ast::Type::Kind::kMemRef)
    Fail(op.operands.back().loc,
         "linalg ops on memrefs are not supported; read arguments with bufferization.to_tensor",
         ErrorCode::kUnsupported);
  // linalg.transpose and linalg.broadcast print no result type: it is the outs type.
  if (op.result_types.size() > 1)
    Fail(op.loc, fmt::format("'{}' on tensors returns one tensor (the updated outs), but {} result "
                             "types are given",
                             op.name, op.result_types.size()));
  if (!op.result_types.empty() && op.result_types[0] != out)
    Fail(op.loc, fmt::format("'{}' returns {}, but its outs operand has type {}", op.name,
                             ast::TypeText(op.result_types[0]), ast::TypeText(out)));
  return out;
}

std::vector<int64_t> Lowering::IntsAttr(const ast::Operation& op, const std::string& key) const {
  auto it = op.attrs.find(key);
  if (it == op.attrs.end())
    Fail(op.loc, fmt::format("'{}' needs the attribute '{}'", op.name, key));
  const ast::Attr& a = it->second;
  std::vector<int64_t> out;
  if (a.kind == ast::Attr::Kind::kDense) {
    for (const ast::Number& n : a.dense) out.push_back(n.i);
    if (std::all_of(a.dense.begin(), a.dense.end(), [](const auto& n) { return n.is_int; }))
      return out;
  }
  if (a.kind == ast::Attr::Kind::kArray) {
    for (const ast::Attr& e : a.elems) {
      if (e.kind != ast::Attr::Kind::kNumber || !e.number.is_int) break;
      out.push_back(e.number.i);
    }
    if (out.size() == a.elems.size()) return out;
  }
  Fail(a.loc, fmt::format("attribute '{}' must be a list of integers", key));
}

ir::Value* Lowering::Emit(const ast::Operation& op, ir::OpKind kind, std::vector<ir::Value*> inputs,
                          ir::Attrs attrs) {
  std::string name = op.results.empty() ? op.name : op.results[0].name.substr(1);
  try {
    return g_.AddNode(kind, std::move(inputs), std::move(attrs), name)->outputs[0];
  } catch (const Error& e) {
    Fail(op.loc, fmt::format("'{}': {}", op.name, e.what()), e.code());
  }
}

ir::Value* Lowering::Constant(const std::string& name, DType dtype, const Shape& shape,
                              const std::vector<ast::Number>& values, Location loc) {
  int64_t count = NumElements(shape);
  if (values.size() != 1 && static_cast<int64_t>(values.size()) != count)
    Fail(loc,
         fmt::format("the literal has {} elements, but its type has {}", values.size(), count));
  for (const ast::Number& n : values)
    if (!IsFloat(dtype) && !n.is_int)
      Fail(loc,
           fmt::format("a float literal for the integer type {}", ast::ElementTypeText(dtype)));
  std::string base = name.empty() ? "cst" : name.substr(1);
  // A splat is a scalar expanded on the device: no host buffer of the full size.
  bool splat = values.size() == 1 && count != 1;
  auto t = std::make_shared<HostTensor>(dtype, splat ? Shape{} : shape);
  for (int64_t i = 0; i < t->size(); ++i) Store(*t, i, values[values.size() == 1 ? 0 : i]);
  ir::Value* c = g_.AddConstant(base, std::move(t));
  if (!splat) return c;
  return g_.AddNode(ir::OpKind::kExpand, {c}, {{"shape", shape}}, base)->outputs[0];
}

}  // namespace texel::linalg_frontend
