#include "frontend/onnx/node_importer.h"

#include "frontend/onnx/tensor_proto.h"
#include "ir/host_eval.h"
#include "ir/infer.h"

namespace texel::onnx_frontend {

NodeImporter::NodeImporter(ir::Graph& g, const onnx::NodeProto& node,
                           std::vector<ir::Value*> inputs, int opset, const std::string& base_dir)
    : g_(g),
      node_(node),
      inputs_(std::move(inputs)),
      outputs_(node.output_size(), nullptr),
      opset_(opset),
      base_dir_(base_dir),
      name_(!node.name().empty()     ? node.name()
            : node.output_size() > 0 ? node.output(0)
                                     : node.op_type()) {}

ir::Value* NodeImporter::Input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }

ir::Value* NodeImporter::RequiredInput(size_t i) const {
  ir::Value* v = Input(i);
  if (!v) Invalid(fmt::format("input {} is required", i));
  return v;
}

const HostTensor& NodeImporter::ConstInput(size_t i, std::string_view what) const {
  ir::Value* v = RequiredInput(i);
  if (!v->is_constant()) {
    throw Error(ErrorCode::kNotConstant,
                fmt::format("input '{}' ({}) is computed at run time; texel needs it at compile "
                            "time (bind it with --freeze {}=file.npy if it is a graph input)",
                            v->name, what, v->name))
        .SetSubject(v->name);
  }
  return *v->constant;
}

const onnx::AttributeProto* NodeImporter::FindAttr(const std::string& key) const {
  for (const auto& a : node_.attribute())
    if (a.name() == key) return &a;
  return nullptr;
}

bool NodeImporter::HasAttr(const std::string& key) const { return FindAttr(key) != nullptr; }

int64_t NodeImporter::AttrInt(const std::string& key, std::optional<int64_t> def) {
  used_.insert(key);
  const auto* a = FindAttr(key);
  if (!a) {
    if (!def) Invalid(fmt::format("attribute '{}' is required", key));
    return *def;
  }
  if (a->type() != onnx::AttributeProto::INT)
    Invalid(fmt::format("attribute '{}' must be an int", key));
  return a->i();
}

double NodeImporter::AttrFloat(const std::string& key, std::optional<double> def) {
  used_.insert(key);
  const auto* a = FindAttr(key);
  if (!a) {
    if (!def) Invalid(fmt::format("attribute '{}' is required", key));
    return *def;
  }
  if (a->type() != onnx::AttributeProto::FLOAT)
    Invalid(fmt::format("attribute '{}' must be a float", key));
  return a->f();
}

std::vector<int64_t> NodeImporter::AttrInts(const std::string& key,
                                            std::optional<std::vector<int64_t>> def) {
  used_.insert(key);
  const auto* a = FindAttr(key);
  if (!a) {
    if (!def) Invalid(fmt::format("attribute '{}' is required", key));
    return *def;
  }
  if (a->type() != onnx::AttributeProto::INTS)
    Invalid(fmt::format("attribute '{}' must be a list of ints", key));
  return {a->ints().begin(), a->ints().end()};
}

std::vector<double> NodeImporter::AttrFloats(const std::string& key) {
  used_.insert(key);
  const auto* a = FindAttr(key);
  if (!a || a->type() != onnx::AttributeProto::FLOATS)
    Invalid(fmt::format("attribute '{}' must be a list of floats", key));
  return {a->floats().begin(), a->floats().end()};
}

std::string NodeImporter::AttrString(const std::string& key, std::optional<std::string> def) {
  used_.insert(key);
  const auto* a = FindAttr(key);
  if (!a) {
    if (!def) Invalid(fmt::format("attribute '{}' is required", key));
    return *def;
  }
  if (a->type() != onnx::AttributeProto::STRING)
    Invalid(fmt::format("attribute '{}' must be a string", key));
  return a->s();
}

const onnx::TensorProto& NodeImporter::AttrTensor(const std::string& key) {
  used_.insert(key);
  const auto* a = FindAttr(key);
  if (!a || a->type() != onnx::AttributeProto::TENSOR)
    Invalid(fmt::format("attribute '{}' must be a tensor", key));
  return a->t();
}

const onnx::GraphProto& NodeImporter::AttrGraph(const std::string& key) {
  used_.insert(key);
  const auto* a = FindAttr(key);
  if (!a || a->type() != onnx::AttributeProto::GRAPH)
    Invalid(fmt::format("attribute '{}' must be a graph", key));
  return a->g();
}

std::vector<ir::Value*> NodeImporter::ImportSubgraph(const std::string& key,
                                                     const std::vector<ir::Value*>& inputs) {
  const onnx::GraphProto& body = AttrGraph(key);
  if (!subgraph_) Unsupported("subgraphs are not supported here");
  if (body.input_size() != static_cast<int>(inputs.size()))
    Invalid(fmt::format("subgraph '{}' has {} inputs, the op binds {}", key, body.input_size(),
                        inputs.size()));
  try {
    return subgraph_(body, inputs);
  } catch (Error& e) {
    e.AddContext(fmt::format("subgraph '{}'", key));
    throw;
  }
}

void NodeImporter::CheckAllAttrsUsed() const {
  for (const auto& a : node_.attribute())
    if (!used_.count(a.name()))
      Unsupported(fmt::format("attribute '{}' is not supported", a.name()));
}

ir::Value* NodeImporter::Emit(ir::OpKind op, std::vector<ir::Value*> inputs, ir::Attrs attrs) {
  bool all_const = true;
  for (ir::Value* v : inputs) all_const = all_const && v->is_constant();
  std::string out_name = outputs_.empty() || !node_.output_size() ? name_ : node_.output(0);
  if (all_const) {
    std::vector<ir::TensorType> in_types;
    std::vector<const HostTensor*> in_data;
    for (ir::Value* v : inputs) {
      in_types.push_back(v->type);
      in_data.push_back(v->constant.get());
    }
    std::vector<ir::TensorType> out_types;
    try {
      out_types = ir::InferTypes(op, in_types, attrs);
    } catch (Error& e) {
      e.AddContext(fmt::format("{} of node '{}'", ir::OpName(op), name_));
      throw;
    }
    if (auto r = ir::EvaluateOnHost(op, attrs, in_data, out_types[0]))
      return g_.AddConstant(out_name, std::make_shared<HostTensor>(std::move(*r)));
  }
  return g_.AddNode(op, std::move(inputs), std::move(attrs), out_name)->outputs[0];
}

ir::Value* NodeImporter::Const(HostTensor t) {
  return g_.AddConstant(name_ + "_const", std::make_shared<HostTensor>(std::move(t)));
}

ir::Value* NodeImporter::ConstScalar(DType dtype, double v) {
  HostTensor t(dtype, {});
  HostTensor d(DType::kFloat64, {});
  d.data<double>()[0] = v;
  auto r = ir::EvaluateOnHost(ir::OpKind::kCast, ir::Attrs{{"to", int64_t(dtype)}}, {&d},
                              ir::TensorType{dtype, {}});
  return Const(std::move(*r));
}

ir::Value* NodeImporter::Reshape(ir::Value* x, const Shape& shape) {
  if (x->type.shape == shape) return x;
  return Emit(ir::OpKind::kReshape, {x}, {{"shape", shape}});
}

void NodeImporter::SetOutput(size_t i, ir::Value* v) {
  if (i >= outputs_.size()) return;  // the model does not ask for this output
  outputs_[i] = v;
}

void NodeImporter::Unsupported(std::string_view what) const {
  Fail(ErrorCode::kUnsupported, "{}", what);
}

void NodeImporter::Invalid(std::string_view what) const {
  Fail(ErrorCode::kInvalidModel, "{}", what);
}

int64_t NodeImporter::Axis(std::string_view what, int64_t axis, int64_t rank) const {
  if (axis < -rank || axis >= rank)
    Invalid(fmt::format("{} {} is out of range for rank {}", what, axis, rank));
  return axis < 0 ? axis + rank : axis;
}

}  // namespace texel::onnx_frontend
