#include "ir/graph.h"

#include <algorithm>
#include <map>

#include "core/enum_names.h"
#include "core/error.h"
#include "ir/infer.h"

namespace texel::ir {

std::string TypeStr(const TensorType& t) {
  return fmt::format("{}[{}]", DTypeName(t.dtype), t.shape.empty() ? "" : ShapeStr(t.shape));
}

namespace {
template <typename T>
const T& GetAttr(const std::map<std::string, AttrValue>& m, const std::string& key) {
  auto it = m.find(key);
  TEXEL_CHECK(it != m.end(), "missing attribute '{}'", key);
  const T* v = std::get_if<T>(&it->second);
  TEXEL_CHECK(v != nullptr, "attribute '{}' has another type", key);
  return *v;
}
}  // namespace

int64_t Attrs::Int(const std::string& key) const { return GetAttr<int64_t>(map_, key); }
int64_t Attrs::Int(const std::string& key, int64_t def) const { return Has(key) ? Int(key) : def; }
double Attrs::Float(const std::string& key) const { return GetAttr<double>(map_, key); }
double Attrs::Float(const std::string& key, double def) const {
  return Has(key) ? Float(key) : def;
}
const std::vector<int64_t>& Attrs::Ints(const std::string& key) const {
  return GetAttr<std::vector<int64_t>>(map_, key);
}
const std::vector<double>& Attrs::Floats(const std::string& key) const {
  return GetAttr<std::vector<double>>(map_, key);
}
const std::string& Attrs::Str(const std::string& key) const {
  return GetAttr<std::string>(map_, key);
}

std::string Graph::UniqueName(const std::string& base) {
  int& n = name_counts_[base];
  return n++ == 0 ? base : fmt::format("{}_{}", base, n - 1);
}

std::vector<std::vector<Node*>> FusionGroups(const Graph& g) {
  std::vector<std::vector<Node*>> groups;
  std::map<int, size_t> index_of_group;
  for (const auto& node : g.nodes()) {
    if (node->group < 0) {
      groups.push_back({node.get()});
      continue;
    }
    auto [it, fresh] = index_of_group.try_emplace(node->group, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(node.get());
  }
  return groups;
}

std::vector<const Value*> ExternalInputs(const std::vector<const Node*>& nodes) {
  std::vector<const Value*> produced, ext;
  for (const Node* n : nodes) {
    for (const Value* in : n->inputs)
      if (std::find(produced.begin(), produced.end(), in) == produced.end() &&
          std::find(ext.begin(), ext.end(), in) == ext.end())
        ext.push_back(in);
    produced.insert(produced.end(), n->outputs.begin(), n->outputs.end());
  }
  return ext;
}

Value* Graph::NewValue(std::string name, TensorType type) {
  auto v = std::make_unique<Value>();
  v->id = next_id_++;
  v->name = UniqueName(name.empty() ? "v" : name);
  v->type = std::move(type);
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::AddInput(std::string name, TensorType type) {
  Value* v = NewValue(std::move(name), std::move(type));
  v->is_input = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::AddConstant(std::string name, ConstTensorPtr data) {
  Value* v = NewValue(std::move(name), TensorType{data->dtype, data->shape});
  v->constant = std::move(data);
  return v;
}

Node* Graph::AddNode(OpKind op, std::vector<Value*> inputs, Attrs attrs, std::string name) {
  std::vector<TensorType> in_types;
  for (Value* v : inputs) in_types.push_back(v->type);
  std::vector<TensorType> out_types;
  try {
    out_types = InferTypes(op, in_types, attrs);
  } catch (Error& e) {
    e.AddContext(fmt::format("node '{}' ({})", name, OpName(op)));
    throw;
  }
  auto n = std::make_unique<Node>();
  n->op = op;
  n->name = name;
  n->attrs = std::move(attrs);
  n->inputs = std::move(inputs);
  for (size_t i = 0; i < out_types.size(); ++i) {
    Value* v = NewValue(name, out_types[i]);
    v->producer = n.get();
    n->outputs.push_back(v);
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

void Graph::ReplaceAllUses(Value* from, Value* to) {
  for (auto& n : nodes_)
    for (Value*& in : n->inputs)
      if (in == from) in = to;
  for (Value*& out : outputs_)
    if (out == from) out = to;
}

std::vector<int> Graph::UseCounts() const {
  std::vector<int> uses(next_id_, 0);
  for (const auto& n : nodes_)
    if (!n->dead)
      for (Value* in : n->inputs) ++uses[in->id];
  for (Value* out : outputs_) ++uses[out->id];
  return uses;
}

Node* Graph::InsertNodeAfter(const Node* after, OpKind op, std::vector<Value*> inputs, Attrs attrs,
                             std::string name) {
  Node* n = AddNode(op, std::move(inputs), std::move(attrs), std::move(name));
  auto pos = nodes_.begin();
  if (after)
    pos = std::find_if(nodes_.begin(), nodes_.end(),
                       [&](const auto& m) { return m.get() == after; }) +
          1;
  std::rotate(pos, nodes_.end() - 1, nodes_.end());
  return n;
}

namespace {
constexpr EnumName<Storage> kStorageNames[] = {{Storage::kBuffer, "buffer"},
                                               {Storage::kTexture, "texture"},
                                               {Storage::kTextureWeight, "texture-weight"}};
}  // namespace

const char* StorageName(Storage s) { return NameIn(kStorageNames, s); }

void Graph::RemoveDeadNodes() {
  // Walk backwards so that a chain of unused nodes disappears in one sweep.
  std::vector<int> uses = UseCounts();
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    Node& n = **it;
    bool used =
        std::any_of(n.outputs.begin(), n.outputs.end(), [&](Value* v) { return uses[v->id] > 0; });
    if (!used && !n.dead) {
      n.dead = true;
      for (Value* in : n.inputs) --uses[in->id];
    }
  }
  std::erase_if(nodes_, [](const auto& n) { return n->dead; });
  std::vector<bool> keep(next_id_, false);
  for (const auto& n : nodes_) {
    for (Value* v : n->inputs) keep[v->id] = true;
    for (Value* v : n->outputs) keep[v->id] = true;
  }
  for (Value* v : inputs_) keep[v->id] = true;
  for (Value* v : outputs_) keep[v->id] = true;
  std::erase_if(values_, [&](const auto& v) { return !keep[v->id]; });
}

}  // namespace texel::ir
