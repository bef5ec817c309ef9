#include "frontend/linalg/function_importer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "frontend/linalg/lowering.h"
#include "ir/verifier.h"

namespace texel::linalg_frontend {
namespace {

bool IsStatic(const ast::Type& t) {
  return std::none_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 0; });
}

class FunctionImporter {
 public:
  FunctionImporter(const ast::Function& f, const std::string& source,
                   const frontend::ImportOptions& opts)
      : f_(f), opts_(opts), g_(std::make_unique<ir::Graph>()), l_(*g_, source) {}

  std::unique_ptr<ir::Graph> Run() {
    CheckSignature();
    ScanArgumentAccesses();
    MakeInputs();
    for (const ast::Operation& op : f_.body.ops) LowerTopLevel(op);
    if (!returned_)
      l_.Fail(f_.loc, fmt::format("the body of {} does not end with 'return'", f_.name));
    return Finish();
  }

 private:
  struct Output {
    int order;  // written arguments by position, then returned values
    std::string name;
    ir::Value* value;
  };

  void CheckSignature() {
    for (size_t i = 0; i < f_.args.size(); ++i) {
      const ast::BlockArg& a = f_.args[i];
      if (!a.type.is_shaped())
        l_.Fail(a.loc,
                fmt::format("argument {} has the scalar type {}; arguments must be memrefs "
                            "or tensors",
                            a.name, ast::TypeText(a.type)),
                ErrorCode::kUnsupported);
      if (!IsStatic(a.type))
        l_.Fail(a.loc,
                fmt::format("argument {} has a dynamic dim ({}); only static shapes are "
                            "supported",
                            a.name, ast::TypeText(a.type)),
                ErrorCode::kUnsupported);
      if (arg_index_.count(a.name)) l_.Fail(a.loc, "argument " + a.name + " is declared twice");
      arg_index_[a.name] = static_cast<int>(i);
    }
    for (const ast::Type& t : f_.results)
      if (t.kind != ast::Type::Kind::kTensor || !IsStatic(t))
        l_.Fail(f_.loc,
                fmt::format("{} returns {}; only statically shaped tensors can be returned",
                            f_.name, ast::TypeText(t)),
                ErrorCode::kUnsupported);
  }

  // Which arguments are read and which written, before lowering: inputs are made in argument
  // order, and an argument updated in place is rejected.
  void ScanArgumentAccesses() {
    read_.assign(f_.args.size(), std::nullopt);
    written_.assign(f_.args.size(), std::nullopt);
    for (const ast::Operation& op : f_.body.ops) {
      bool reads = op.name == "bufferization.to_tensor" && !op.operands.empty();
      bool writes =
          op.name == "bufferization.materialize_in_destination" && op.operands.size() == 2;
      if (!reads && !writes) continue;
      const ast::Operand& arg = op.operands[reads ? 0 : 1];
      auto it = arg_index_.find(arg.name);
      if (it == arg_index_.end()) continue;  // reported while lowering
      int i = it->second;
      if (writes && written_[i])
        l_.Fail(op.loc,
                fmt::format("argument {} is written twice (first at {})", arg.name,
                            PosText(*written_[i])),
                ErrorCode::kUnsupported);
      auto& mine = reads ? read_[i] : written_[i];
      if (!mine) mine = op.loc;
      const auto& other = reads ? written_[i] : read_[i];
      if (other)
        l_.Fail(op.loc,
                fmt::format("argument {} is both read (bufferization.to_tensor at {}) and "
                            "written (bufferization.materialize_in_destination at {}); "
                            "in-place updates are not supported",
                            arg.name, PosText(*read_[i]), PosText(*written_[i])),
                ErrorCode::kUnsupported);
    }
  }

  void MakeInputs() {
    std::vector<std::string> made;
    for (size_t i = 0; i < f_.args.size(); ++i) {
      const ast::BlockArg& a = f_.args[i];
      bool tensor = a.type.kind == ast::Type::Kind::kTensor;
      Binding b{Binding::Kind::kMemRef, a.type, nullptr, static_cast<int>(i), a.loc};
      if (tensor || read_[i]) {
        std::string name = a.name.substr(1);
        made.push_back(name);
        b.value = MakeInput(a, name);
        if (tensor) b = Lowering::TensorBinding(b.value, a.loc);
      }
      l_.Define({a.name, a.loc}, b);
    }
    auto check = [&](const std::string& name, const char* flag) {
      if (std::find(made.begin(), made.end(), name) == made.end())
        Fail(ErrorCode::kInvalidArgument,
             "{} names '{}', which is not an input of the fragment (inputs: {})", flag, name,
             fmt::join(made, ", "));
    };
    for (const auto& [name, shape] : opts_.input_shapes) check(name, "--input-shape");
    for (const auto& [name, t] : opts_.frozen_inputs) check(name, "--freeze");
  }

  ir::Value* MakeInput(const ast::BlockArg& a, const std::string& name) {
    ir::TensorType t{a.type.dtype, a.type.shape};
    auto s = opts_.input_shapes.find(name);
    if (s != opts_.input_shapes.end() && s->second != t.shape)
      l_.Fail(a.loc,
              fmt::format("--input-shape {}={}: argument {} has the static shape {}", name,
                          ShapeStr(s->second), a.name, ShapeStr(t.shape)),
              ErrorCode::kInvalidArgument);
    auto fz = opts_.frozen_inputs.find(name);
    if (fz == opts_.frozen_inputs.end()) return g_->AddInput(name, t);
    if (fz->second.dtype != t.dtype || fz->second.shape != t.shape)
      l_.Fail(a.loc,
              fmt::format("--freeze {}: the file holds {}[{}], but argument {} is {}", name,
                          DTypeName(fz->second.dtype), ShapeStr(fz->second.shape), a.name,
                          ast::TypeText(a.type)),
              ErrorCode::kInvalidArgument);
    return g_->AddConstant(name, std::make_shared<HostTensor>(fz->second));
  }

  void LowerTopLevel(const ast::Operation& op) {
    if (returned_) l_.Fail(op.loc, "op after 'return'");
    for (const auto* types : {&op.operand_types, &op.result_types})
      for (const ast::Type& t : *types)
        if (!IsStatic(t))
          l_.Fail(op.loc, fmt::format("dynamic dims are not supported ({})", ast::TypeText(t)),
                  ErrorCode::kUnsupported);
    if (op.name == "bufferization.to_tensor") return ToTensor(op);
    if (op.name == "bufferization.materialize_in_destination") return Materialize(op);
    if (op.name == "return" || op.name == "func.return") return Return(op);
    if (op.name == "tensor.empty") return Empty(op);
    if (op.name == "arith.constant") return LowerConstant(l_, op);
    auto it = NamedOpLowerings().find(op.name);
    if (it != NamedOpLowerings().end()) return it->second(l_, op);
    bool scalar = op.name.rfind("arith.", 0) == 0 || op.name.rfind("math.", 0) == 0 ||
                  op.name == "linalg.yield" || op.name == "linalg.index";
    l_.Fail(op.loc,
            fmt::format("'{}' is not supported{}", op.name,
                        scalar ? " outside a linalg.generic body" : ""),
            ErrorCode::kUnsupported);
  }

  // %t = bufferization.to_tensor %arg : memref<..> [to tensor<..>]
  void ToTensor(const ast::Operation& op) {
    const ast::Operand& src = op.operands[0];
    const Binding& b = l_.Lookup(src);
    if (b.kind != Binding::Kind::kMemRef) l_.Fail(src.loc, src.name + " is not a memref argument");
    if (b.type != op.operand_types[0])
      l_.Fail(src.loc, fmt::format("{} has type {}, but the op states {}", src.name,
                                   ast::TypeText(b.type), ast::TypeText(op.operand_types[0])));
    ast::Type t = b.type;
    t.kind = ast::Type::Kind::kTensor;
    if (!op.result_types.empty() && op.result_types[0] != t)
      l_.Fail(op.loc, fmt::format("reading {} gives {}, not {}", ast::TypeText(b.type),
                                  ast::TypeText(t), ast::TypeText(op.result_types[0])));
    l_.DefineResults(op, {Lowering::TensorBinding(b.value, op.loc)});
  }

  // bufferization.materialize_in_destination %t in %arg : (tensor<..>, memref<..>) -> ()
  void Materialize(const ast::Operation& op) {
    if (op.operand_types.size() != 2)
      l_.Fail(op.loc, "'bufferization.materialize_in_destination' states two operand types");
    if (!op.result_types.empty())
      l_.Fail(op.loc, "materializing into a tensor is not supported; write into a memref argument",
              ErrorCode::kUnsupported);
    const ast::Operand& dest = op.operands[1];
    const Binding& d = l_.Lookup(dest);
    if (d.kind != Binding::Kind::kMemRef)
      l_.Fail(dest.loc, dest.name + " is not a memref argument");
    if (d.type != op.operand_types[1])
      l_.Fail(dest.loc, fmt::format("{} has type {}, but the op states {}", dest.name,
                                    ast::TypeText(d.type), ast::TypeText(op.operand_types[1])));
    ir::Value* v = l_.Tensor(op.operands[0], op.operand_types[0]);
    if (v->type.dtype != d.type.dtype || v->type.shape != d.type.shape)
      l_.Fail(op.loc, fmt::format("cannot write {} into {}", ast::TypeText(op.operand_types[0]),
                                  ast::TypeText(d.type)));
    outputs_.push_back({d.arg, dest.name.substr(1), v});
  }

  void Return(const ast::Operation& op) {
    returned_ = true;
    if (op.operands.size() != f_.results.size() ||
        (!op.operands.empty() && op.operand_types != f_.results))
      l_.Fail(op.loc, fmt::format("'return' must return the {} result{} {} declares, with their "
                                  "types",
                                  f_.results.size(), f_.results.size() == 1 ? "" : "s", f_.name));
    for (size_t i = 0; i < op.operands.size(); ++i)
      outputs_.push_back({static_cast<int>(f_.args.size() + i), fmt::format("result{}", i),
                          l_.Tensor(op.operands[i], op.operand_types[i])});
  }

  void Empty(const ast::Operation& op) {
    const ast::Type& t = op.result_types[0];
    if (t.kind != ast::Type::Kind::kTensor)
      l_.Fail(op.loc, "'tensor.empty' makes a tensor, not " + ast::TypeText(t));
    l_.DefineResults(op, {{Binding::Kind::kEmpty, t, nullptr, -1, op.loc}});
  }

  std::unique_ptr<ir::Graph> Finish() {
    if (outputs_.empty())
      l_.Fail(f_.loc, fmt::format("{} writes no output: write results into memref arguments with "
                                  "bufferization.materialize_in_destination (or return tensors)",
                                  f_.name));
    std::stable_sort(outputs_.begin(), outputs_.end(),
                     [](const Output& a, const Output& b) { return a.order < b.order; });
    for (const Output& o : outputs_) {
      // Every graph output is a value of its own, written by a node.
      ir::Value* v = o.value;
      bool taken = std::find(g_->outputs().begin(), g_->outputs().end(), v) != g_->outputs().end();
      if (!v->producer || taken) v = g_->AddNode(ir::OpKind::kCopy, {v}, {}, o.name)->outputs[0];
      g_->AddOutput(v);
    }
    g_->RemoveDeadNodes();
    // Outputs carry the names of the arguments they are written to (`texel run` names files so).
    // A graph input keeps its name too: an output whose name an input has is an error (a
    // returned result0 when an argument is called %result0).
    for (size_t i = 0; i < outputs_.size(); ++i) {
      const std::string& want = outputs_[i].name;
      for (const ir::Value* in : g_->inputs())
        if (in->name == want)
          l_.Fail(f_.loc,
                  fmt::format("output '{}' has the name of an input; rename the argument", want),
                  ErrorCode::kUnsupported);
      for (const auto& v : g_->values())
        if (v->name == want && v.get() != g_->outputs()[i]) v->name = g_->UniqueName(want);
      g_->outputs()[i]->name = want;
    }
    ir::Verify(*g_);
    return std::move(g_);
  }

  const ast::Function& f_;
  const frontend::ImportOptions& opts_;
  std::unique_ptr<ir::Graph> g_;
  Lowering l_;
  std::map<std::string, int> arg_index_;
  std::vector<std::optional<Location>> read_, written_;
  std::vector<Output> outputs_;
  bool returned_ = false;
};

}  // namespace

void LowerConstant(Lowering& l, const ast::Operation& op) {
  const ast::Attr& v = op.value;
  if (v.kind != ast::Attr::Kind::kNumber && v.kind != ast::Attr::Kind::kDense)
    l.Fail(v.loc, "'arith.constant' takes a number or dense<...>", ErrorCode::kUnsupported);
  ast::Type t;  // `true` and `false` are i1 without a stated type
  if (v.has_type)
    t = v.type;
  else if (v.str.empty())
    l.Fail(v.loc, "'arith.constant' needs a type (': f32')");
  else
    t.dtype = DType::kBool;
  if (t.kind == ast::Type::Kind::kMemRef || !IsStatic(t))
    l.Fail(v.loc, "constants of type " + ast::TypeText(t) + " are not supported",
           ErrorCode::kUnsupported);
  std::string name = op.results.empty() ? "" : op.results[0].name;
  if (!t.is_shaped()) {
    if (v.kind != ast::Attr::Kind::kNumber)
      l.Fail(v.loc, "a scalar constant takes a number, not dense<...>");
    ir::Value* c = l.Constant(name, t.dtype, {}, {v.number}, v.loc);
    l.DefineResults(op, {{Binding::Kind::kScalar, t, c, -1, op.loc}});
    return;
  }
  if (v.kind != ast::Attr::Kind::kDense) l.Fail(v.loc, "a tensor constant takes dense<...>");
  ir::Value* c = l.Constant(name, t.dtype, t.shape, v.dense, v.loc);
  l.DefineResults(op, {Lowering::TensorBinding(c, op.loc)});
}

std::unique_ptr<ir::Graph> ImportFunction(const ast::Function& f, const std::string& source,
                                          const frontend::ImportOptions& opts) {
  return FunctionImporter(f, source, opts).Run();
}

}  // namespace texel::linalg_frontend
