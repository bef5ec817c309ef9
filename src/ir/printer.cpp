#include "ir/printer.h"

#include <fmt/ranges.h>

namespace texel::ir {
namespace {

std::string AttrStr(const AttrValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (auto* l = std::get_if<std::vector<int64_t>>(&v))
    return fmt::format("[{}]", fmt::join(*l, ", "));
  if (auto* l = std::get_if<std::vector<double>>(&v))
    return fmt::format("[{}]", fmt::join(*l, ", "));
  return fmt::format("\"{}\"", std::get<std::string>(v));
}

// "f32[1x8x4x4]", with "@texture" (f16 channels: "@texture.f16") for an image value.
std::string ValueTypeStr(const Value* v) {
  if (!v->is_image()) return TypeStr(v->type);
  return fmt::format("{}@{}{}", TypeStr(v->type), StorageName(v->storage),
                     v->half_texels ? ".f16" : "");
}

}  // namespace

std::string PrintGraph(const Graph& g) {
  std::string out = "graph(";
  for (size_t i = 0; i < g.inputs().size(); ++i)
    out +=
        fmt::format("{}%{}: {}", i ? ", " : "", g.inputs()[i]->name, TypeStr(g.inputs()[i]->type));
  out += ") -> (";
  for (size_t i = 0; i < g.outputs().size(); ++i)
    out += fmt::format("{}%{}", i ? ", " : "", g.outputs()[i]->name);
  out += ") {\n";
  for (const auto& v : g.values())
    if (v->is_constant()) out += fmt::format("  const %{}: {}\n", v->name, ValueTypeStr(v.get()));
  for (const auto& n : g.nodes()) {
    std::string outs, ins, attrs, types;
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      outs += fmt::format("{}%{}", i ? ", " : "", n->outputs[i]->name);
      types += fmt::format("{}{}", i ? ", " : "", ValueTypeStr(n->outputs[i]));
    }
    for (size_t i = 0; i < n->inputs.size(); ++i)
      ins += fmt::format("{}%{}", i ? ", " : "", n->inputs[i]->name);
    for (const auto& [k, v] : n->attrs.map())
      attrs += fmt::format("{}{}={}", attrs.empty() ? " {" : ", ", k, AttrStr(v));
    if (!attrs.empty()) attrs += "}";
    std::string group = n->group >= 0 ? fmt::format("  # group {}", n->group) : "";
    out += fmt::format("  {} = {}({}){} : {}{}\n", outs, OpName(n->op), ins, attrs, types, group);
  }
  out += "}\n";
  return out;
}

}  // namespace texel::ir
