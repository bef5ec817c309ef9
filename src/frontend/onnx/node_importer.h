// NodeImporter: what an importer function sees of one ONNX node — its inputs as IR values, its
// attributes (each read is recorded, so that an attribute no importer read is reported as
// unsupported instead of being silently ignored), and an Emit() that builds core ops, folding
// them on the host when all inputs are constants.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "ir/graph.h"

namespace texel::onnx_frontend {

class NodeImporter {
 public:
  NodeImporter(ir::Graph& g, const onnx::NodeProto& node, std::vector<ir::Value*> inputs, int opset,
               const std::string& base_dir);

  const onnx::NodeProto& proto() const { return node_; }
  int opset() const { return opset_; }
  const std::string& name() const { return name_; }
  ir::Graph& graph() { return g_; }

  // Inputs; optional inputs that are absent ("" name or past the end) return nullptr.
  size_t num_inputs() const { return inputs_.size(); }
  ir::Value* Input(size_t i) const;
  ir::Value* RequiredInput(size_t i) const;
  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }
  // The constant data of input i; throws kUnsupported naming the input when it is computed at
  // run time (texel compiles static shapes only).
  const HostTensor& ConstInput(size_t i, std::string_view what) const;
  std::vector<int64_t> ConstInts(size_t i, std::string_view what) const {
    return ConstInput(i, what).ToInts();
  }

  // Attributes; reading marks them used.
  bool HasAttr(const std::string& key) const;
  int64_t AttrInt(const std::string& key, std::optional<int64_t> def = std::nullopt);
  double AttrFloat(const std::string& key, std::optional<double> def = std::nullopt);
  std::vector<int64_t> AttrInts(const std::string& key,
                                std::optional<std::vector<int64_t>> def = std::nullopt);
  std::vector<double> AttrFloats(const std::string& key);
  std::string AttrString(const std::string& key, std::optional<std::string> def = std::nullopt);
  const onnx::TensorProto& AttrTensor(const std::string& key);
  const onnx::GraphProto& AttrGraph(const std::string& key);
  // Marks attributes as read where ignoring them is correct (e.g. Dropout's seed).
  void IgnoreAttr(const std::string& key) { used_.insert(key); }
  // Throws kUnsupported for the first attribute no importer read.
  void CheckAllAttrsUsed() const;

  // Builds a core op (folded to a constant when all inputs are constants) and returns output 0.
  ir::Value* Emit(ir::OpKind op, std::vector<ir::Value*> inputs, ir::Attrs attrs = {});
  ir::Value* Const(HostTensor t);
  ir::Value* ConstScalar(DType dtype, double v);
  ir::Value* Reshape(ir::Value* x, const Shape& shape);

  // Imports the subgraph attribute `key` (If branches, Loop and Scan bodies) into this graph,
  // its inputs bound to `inputs` by position; names it does not define resolve in the enclosing
  // scopes. Returns the values of its outputs. Each call imports a fresh copy (unrolling).
  using SubgraphFn = std::function<std::vector<ir::Value*>(const onnx::GraphProto&,
                                                           const std::vector<ir::Value*>&)>;
  void set_subgraph_importer(SubgraphFn f) { subgraph_ = std::move(f); }
  std::vector<ir::Value*> ImportSubgraph(const std::string& key,
                                         const std::vector<ir::Value*>& inputs);

  void SetOutput(size_t i, ir::Value* v);
  const std::vector<ir::Value*>& outputs() const { return outputs_; }

  [[noreturn]] void Unsupported(std::string_view what) const;
  [[noreturn]] void Invalid(std::string_view what) const;
  // axis (of attribute or input `what`) in [-rank, rank) made non-negative; Invalid otherwise
  // (a scalar has no axis: callers index the shape with the result).
  int64_t Axis(std::string_view what, int64_t axis, int64_t rank) const;

 private:
  ir::Graph& g_;
  const onnx::NodeProto& node_;
  std::vector<ir::Value*> inputs_;
  std::vector<ir::Value*> outputs_;
  int opset_;
  std::string base_dir_;
  std::string name_;
  std::set<std::string> used_;
  SubgraphFn subgraph_;
  const onnx::AttributeProto* FindAttr(const std::string& key) const;
};

using ImportFn = void (*)(NodeImporter&);

// The registry: ONNX op type -> importer function. Defined in ops_*.cpp via RegisterOps*.
const std::map<std::string, ImportFn>& OpRegistry();

}  // namespace texel::onnx_frontend
