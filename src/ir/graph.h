// The IR: a Graph owns Values (SSA tensors) and Nodes (core ops) in topological order.
// Value names keep the ONNX names so errors and profiles can point at them.
// Lifetime: Values and Nodes are owned by their Graph; raw pointers stay valid until the Graph
// is destroyed or RemoveDeadNodes() drops them.
// Thread safety: none; a Graph is built and transformed by one thread, then read-only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/tensor.h"
#include "ir/op.h"

namespace texel::ir {

struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;
  bool operator==(const TensorType&) const = default;
  int64_t bytes() const { return NumElements(shape) * static_cast<int64_t>(DTypeSize(dtype)); }
};
std::string TypeStr(const TensorType& t);  // "f32[1x3x224x224]"

using AttrValue =
    std::variant<int64_t, double, std::vector<int64_t>, std::vector<double>, std::string>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : map_(init) {}
  void Set(const std::string& key, AttrValue v) { map_[key] = std::move(v); }
  bool Has(const std::string& key) const { return map_.count(key) != 0; }
  void Erase(const std::string& key) { map_.erase(key); }
  // Getters throw Error(kInternal) when a required attribute is missing or has another type.
  int64_t Int(const std::string& key) const;
  int64_t Int(const std::string& key, int64_t def) const;
  double Float(const std::string& key) const;
  double Float(const std::string& key, double def) const;
  const std::vector<int64_t>& Ints(const std::string& key) const;
  const std::vector<double>& Floats(const std::string& key) const;
  const std::string& Str(const std::string& key) const;
  const std::map<std::string, AttrValue>& map() const { return map_; }
  bool operator==(const Attrs&) const = default;

 private:
  std::map<std::string, AttrValue> map_;
};

struct Node;

// Where a value lives on the device (passes/assign_storage.cpp): a buffer (row-major), or a 2D
// RGBA image by one of core/texture_layout.h's conventions.
enum class Storage : uint8_t { kBuffer, kTexture, kTextureWeight };
const char* StorageName(Storage s);  // "buffer", "texture", "texture-weight"

struct Value {
  int id = 0;
  std::string name;
  TensorType type;
  Node* producer = nullptr;  // null for graph inputs and constants
  ConstTensorPtr constant;   // set for constants (initializers, folded values)
  bool is_input = false;
  // Set on padded outputs of data-dependent ops (kSelect): only the first `*valid_rows` rows
  // (an i64 scalar computed on the device) are meaningful. Such a value can only be a graph
  // output, which the runtime trims to those rows.
  Value* valid_rows = nullptr;
  Storage storage = Storage::kBuffer;
  bool half_texels = false;  // an image's channels are f16 (CL_HALF_FLOAT), else f32
  bool is_constant() const { return constant != nullptr; }
  bool is_image() const { return storage != Storage::kBuffer; }
};

struct Node {
  OpKind op;
  std::string name;  // the ONNX node name (or output name) it came from, for messages
  Attrs attrs;
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  std::string backend;  // set by the partition pass
  int group = -1;       // fusion group (passes/fuse.cpp): nodes sharing one id run as one kernel
  bool dead = false;
  const OpInfo& info() const { return GetOpInfo(op); }
};

// The values `nodes` read that none of them produces, in first-use order: what a fusion group
// (a chain, or a DAG of elementwise nodes after an anchor) reads from memory.
std::vector<const Value*> ExternalInputs(const std::vector<const Node*>& nodes);

class Graph;
// The graph's fusion groups (Node::group) in the order of their first nodes, each its nodes in
// graph order; a node outside any group is a group of its own. The one way passes and lowering
// rebuild groups from the ids.
std::vector<std::vector<Node*>> FusionGroups(const Graph& g);

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Value* AddInput(std::string name, TensorType type);
  Value* AddConstant(std::string name, ConstTensorPtr data);
  // Appends a node; output types are inferred (ir/infer.h). Throws Error(kInvalidModel) with the
  // node's name when the inputs are invalid for op.
  Node* AddNode(OpKind op, std::vector<Value*> inputs, Attrs attrs, std::string name);
  // AddNode, placed right after `after` (first when null) instead of last.
  Node* InsertNodeAfter(const Node* after, OpKind op, std::vector<Value*> inputs, Attrs attrs,
                        std::string name);
  void AddOutput(Value* v) { outputs_.push_back(v); }

  const std::vector<Value*>& inputs() const { return inputs_; }
  std::vector<Value*>& outputs() { return outputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }

  // Redirects every use of from (node inputs and graph outputs) to to.
  void ReplaceAllUses(Value* from, Value* to);
  // Drops nodes marked dead and nodes whose outputs are unused; then unused values.
  void RemoveDeadNodes();
  // Number of uses of each value id (node inputs plus graph outputs).
  std::vector<int> UseCounts() const;
  std::string UniqueName(const std::string& base);

 private:
  Value* NewValue(std::string name, TensorType type);
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_, outputs_;
  std::map<std::string, int> name_counts_;
  int next_id_ = 0;
};

}  // namespace texel::ir
