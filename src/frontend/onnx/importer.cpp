#include "frontend/onnx/importer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_map>

#include "core/error.h"
#include "core/limits.h"
#include "frontend/onnx/node_importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/verifier.h"

namespace texel::onnx_frontend {
namespace {

constexpr int kMaxOpset = 17;

int DefaultOpset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return static_cast<int>(o.version());
  return m.opset_import_size() == 0 ? 1 : -1;  // IR v2 models omit opset_import
}

ir::TensorType InputType(const onnx::ValueInfoProto& vi, const ImportOptions& opts) {
  const auto& tp = vi.type();
  if (!tp.has_tensor_type())
    Fail(ErrorCode::kUnsupported,
         "graph input '{}' is not a tensor (sequences and maps are not "
         "supported)",
         vi.name());
  ir::TensorType t;
  if (!DTypeFromOnnx(tp.tensor_type().elem_type(), &t.dtype))
    Fail(ErrorCode::kUnsupported, "graph input '{}' has type {}, which texel does not support",
         vi.name(), OnnxTypeName(tp.tensor_type().elem_type()));
  auto it = opts.input_shapes.find(vi.name());
  if (it != opts.input_shapes.end()) {
    if (tp.tensor_type().has_shape() &&
        tp.tensor_type().shape().dim_size() != static_cast<int>(it->second.size()))
      Fail(ErrorCode::kInvalidArgument, "--input-shape {}={}: the model's input has rank {}",
           vi.name(), ShapeStr(it->second), tp.tensor_type().shape().dim_size());
    t.shape = it->second;
    return t;
  }
  if (!tp.tensor_type().has_shape())
    Fail(ErrorCode::kInvalidArgument,
         "graph input '{}' has no shape; give one with "
         "--input-shape {}=DIMS",
         vi.name(), vi.name());
  const auto& dims = tp.tensor_type().shape().dim();
  for (int i = 0; i < dims.size(); ++i) {
    if (dims[i].has_dim_value() && dims[i].dim_value() >= 0) {
      t.shape.push_back(dims[i].dim_value());
    } else if (i == 0) {
      t.shape.push_back(1);  // a symbolic batch dim defaults to 1
    } else {
      Fail(ErrorCode::kInvalidArgument,
           "graph input '{}' has symbolic dim {} ('{}'); fix it with "
           "--input-shape {}=DIMS",
           vi.name(), i, dims[i].dim_param(), vi.name());
    }
  }
  RequireWithinLimits(t.shape, t.dtype, /*host=*/false, fmt::format("graph input '{}'", vi.name()));
  return t;
}

// Names visible to a graph's nodes: its own values, then those of the enclosing graphs (an If
// branch or Loop body may read any value defined before its node).
struct Scope {
  std::unordered_map<std::string, ir::Value*> values;
  const Scope* parent = nullptr;
  ir::Value* Find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->values.find(name);
      if (it != s->values.end()) return it->second;
    }
    return nullptr;
  }
};

void ImportNodes(ir::Graph& g, const onnx::GraphProto& gp, Scope& scope, int opset,
                 const std::string& base_dir);

// A subgraph is imported inline: its inputs bound to the op's values, its initializers added as
// constants, its nodes imported into the same IR graph under a child scope.
std::vector<ir::Value*> ImportSubgraph(ir::Graph& g, const onnx::GraphProto& body,
                                       const std::vector<ir::Value*>& inputs, const Scope& outer,
                                       int opset, const std::string& base_dir) {
  Scope scope;
  scope.parent = &outer;
  // A hostile model could nest bodies until the importer's recursion exhausts the stack.
  uint64_t depth = 0;
  for (const Scope* s = &scope; s->parent; s = s->parent) ++depth;
  if (depth > CurrentLimits().subgraph_depth)
    Fail(ErrorCode::kInvalidModel,
         "subgraphs nested {} deep, over the limit of {} (TEXEL_MAX_SUBGRAPH_DEPTH raises it)",
         depth, CurrentLimits().subgraph_depth);
  for (int i = 0; i < body.input_size(); ++i) scope.values[body.input(i).name()] = inputs[i];
  for (const auto& init : body.initializer())
    scope.values[init.name()] =
        g.AddConstant(init.name(), std::make_shared<HostTensor>(TensorFromProto(init, base_dir)));
  ImportNodes(g, body, scope, opset, base_dir);
  std::vector<ir::Value*> outs;
  for (const auto& vi : body.output()) {
    ir::Value* v = scope.Find(vi.name());
    if (!v) Fail(ErrorCode::kInvalidModel, "subgraph output '{}' is not defined", vi.name());
    outs.push_back(v);
  }
  return outs;
}

void ImportNodes(ir::Graph& g, const onnx::GraphProto& gp, Scope& scope, int opset,
                 const std::string& base_dir) {
  const auto& registry = OpRegistry();
  for (const auto& node : gp.node()) {
    std::string label = fmt::format("node '{}' ({})",
                                    !node.name().empty()     ? node.name()
                                    : node.output_size() > 0 ? node.output(0)
                                                             : std::string("?"),
                                    node.op_type());
    try {
      if (!node.domain().empty() && node.domain() != "ai.onnx")
        Fail(ErrorCode::kUnsupported, "op '{}' of domain '{}' is not supported", node.op_type(),
             node.domain());
      auto it = registry.find(node.op_type());
      if (it == registry.end())
        Fail(ErrorCode::kUnsupported, "op '{}' is not supported", node.op_type());
      std::vector<ir::Value*> inputs;
      for (const auto& name : node.input()) {
        if (name.empty()) {
          inputs.push_back(nullptr);
          continue;
        }
        ir::Value* v = scope.Find(name);
        if (!v) Fail(ErrorCode::kInvalidModel, "input '{}' is not defined before this node", name);
        if (v->valid_rows)
          Fail(ErrorCode::kUnsupported,
               "input '{}' has a data-dependent number of rows ({} output); texel supports such "
               "values only as graph outputs",
               name, OpName(v->producer->op));
        inputs.push_back(v);
      }
      NodeImporter ni(g, node, std::move(inputs), opset, base_dir);
      ni.set_subgraph_importer(
          [&](const onnx::GraphProto& body, const std::vector<ir::Value*>& in) {
            return ImportSubgraph(g, body, in, scope, opset, base_dir);
          });
      it->second(ni);
      ni.CheckAllAttrsUsed();
      for (int i = 0; i < node.output_size(); ++i) {
        if (node.output(i).empty()) continue;
        if (!ni.outputs()[i])
          Fail(ErrorCode::kUnsupported, "output {} ('{}') is not supported", i, node.output(i));
        // ONNX graphs are in SSA form: a second definition would silently replace the first.
        if (!scope.values.emplace(node.output(i), ni.outputs()[i]).second)
          Fail(ErrorCode::kInvalidModel, "output {} ('{}') is already defined in this graph", i,
               node.output(i));
      }
    } catch (Error& e) {
      e.AddContext(label);
      throw;
    }
  }
}

// Consumes model: each initializer's data is dropped once it is a HostTensor, so that the
// weights are not held twice while importing.
std::unique_ptr<ir::Graph> Import(onnx::ModelProto& model, const std::string& base_dir,
                                  const ImportOptions& opts) {
  if (!model.has_graph() || model.graph().node_size() == 0)
    Fail(ErrorCode::kInvalidModel, "not an ONNX model: it has no graph nodes");
  int opset = DefaultOpset(model);
  if (opset < 0) Fail(ErrorCode::kUnsupported, "the model does not import the default ONNX domain");
  if (opset > kMaxOpset)
    Fail(ErrorCode::kUnsupported, "opset {} is newer than texel supports (at most {})", opset,
         kMaxOpset);
  onnx::GraphProto& gp = *model.mutable_graph();
  auto g = std::make_unique<ir::Graph>();
  std::unordered_map<std::string, ir::Value*> values;

  for (const auto& vi : gp.input()) {
    auto fz = opts.frozen_inputs.find(vi.name());
    if (fz != opts.frozen_inputs.end()) {
      ir::TensorType declared = InputType(vi, ImportOptions{{{vi.name(), fz->second.shape}}, {}});
      if (declared.dtype != fz->second.dtype)
        Fail(ErrorCode::kInvalidArgument, "--freeze {}: the input is {}, the file holds {}",
             vi.name(), DTypeName(declared.dtype), DTypeName(fz->second.dtype));
      const auto& dims = vi.type().tensor_type().shape().dim();
      for (int i = 0; i < dims.size(); ++i)
        if (dims[i].has_dim_value() && dims[i].dim_value() != fz->second.shape[i])
          Fail(ErrorCode::kInvalidArgument,
               "--freeze {}: shape {} does not fit the input's dim "
               "{} of {}",
               vi.name(), ShapeStr(fz->second.shape), i, dims[i].dim_value());
      values[vi.name()] = g->AddConstant(vi.name(), std::make_shared<HostTensor>(fz->second));
      continue;
    }
    bool is_init = false;
    for (const auto& init : gp.initializer()) is_init = is_init || init.name() == vi.name();
    if (!is_init) values[vi.name()] = g->AddInput(vi.name(), InputType(vi, opts));
  }
  for (const auto& [name, shape] : opts.input_shapes)
    if (!values.count(name))
      Fail(ErrorCode::kInvalidArgument, "--input-shape names '{}', which is not a graph input",
           name);
  for (const auto& [name, t] : opts.frozen_inputs)
    if (!values.count(name))
      Fail(ErrorCode::kInvalidArgument, "--freeze names '{}', which is not a graph input", name);
  for (const auto& vi : gp.output())
    if (vi.has_type() && !vi.type().has_tensor_type())
      Fail(ErrorCode::kUnsupported,
           "graph output '{}' is not a tensor (sequences, maps and "
           "optionals are not supported)",
           vi.name());
  for (auto& init : *gp.mutable_initializer()) {
    if (opts.frozen_inputs.count(init.name())) continue;
    values[init.name()] =
        g->AddConstant(init.name(), std::make_shared<HostTensor>(TensorFromProto(init, base_dir)));
    std::string().swap(*init.mutable_raw_data());  // frees the bytes, not only their size
    init.clear_float_data();
  }

  Scope scope;
  scope.values = std::move(values);
  ImportNodes(*g, gp, scope, opset, base_dir);

  for (const auto& vi : gp.output()) {
    auto it = scope.values.find(vi.name());
    if (it == scope.values.end())
      Fail(ErrorCode::kInvalidModel, "graph output '{}' is not produced by any node", vi.name());
    ir::Value* v = it->second;
    // Every graph output is a value of its own, written by a node: copy inputs, constants and
    // values that are already another output.
    bool taken = std::find(g->outputs().begin(), g->outputs().end(), v) != g->outputs().end();
    if (!v->producer || taken) v = g->AddNode(ir::OpKind::kCopy, {v}, {}, vi.name())->outputs[0];
    g->AddOutput(v);
  }
  g->RemoveDeadNodes();
  // Graph outputs carry their ONNX names (they name the files `texel run` writes).
  for (size_t i = 0; i < g->outputs().size(); ++i) {
    const std::string& want = gp.output(static_cast<int>(i)).name();
    for (const auto& v : g->values())
      if (v->name == want && v.get() != g->outputs()[i]) v->name = g->UniqueName(want);
    g->outputs()[i]->name = want;
  }
  ir::Verify(*g);
  return g;
}

}  // namespace

namespace {

void CheckParsable(size_t bytes) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int>::max()))
    Fail(ErrorCode::kUnsupported,
         "the model is {} bytes; protobuf reads at most 2 GiB (store the weights as ONNX "
         "external data)",
         bytes);
}

[[noreturn]] void FailParse() {
  Fail(ErrorCode::kInvalidModel, "not an ONNX model (the protobuf does not parse; truncated?)");
}

}  // namespace

std::unique_ptr<ir::Graph> ImportOnnxBytes(const std::string& bytes, const std::string& base_dir,
                                           const ImportOptions& opts) {
  CheckParsable(bytes.size());
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) FailParse();
  return Import(model, base_dir, opts);
}

std::unique_ptr<ir::Graph> ImportOnnxFile(const std::string& path, const ImportOptions& opts) {
  try {
    if (!std::filesystem::exists(path)) Fail(ErrorCode::kNotFound, "file not found");
    if (std::filesystem::is_directory(path))
      Fail(ErrorCode::kInvalidArgument, "is a directory, not an ONNX file");
    CheckParsable(std::filesystem::file_size(path));
    // Read through a small buffer, so that the file's bytes are never in memory beside the
    // parsed model (Import then frees each weight's bytes once it is a tensor).
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) Fail(ErrorCode::kIo, "cannot open the file: {}", std::strerror(errno));
    onnx::ModelProto model;
    bool parsed = model.ParseFromFileDescriptor(fd);
    ::close(fd);
    if (!parsed) FailParse();
    std::string base = std::filesystem::path(path).parent_path().string();
    return Import(model, base.empty() ? "." : base, opts);
  } catch (Error& e) {
    e.AddContext(path);
    throw;
  }
}

}  // namespace texel::onnx_frontend
