#include "ir/op.h"

#include <array>

namespace texel::ir {
namespace {

constexpr std::array kOpTable = {
#define TEXEL_OP_INFO(name, cls, nin, nout) OpInfo{OpKind::k##name, #name, OpClass::cls, nin, nout},
    TEXEL_OPS(TEXEL_OP_INFO)
#undef TEXEL_OP_INFO
};

constexpr bool TableMatchesEnum() {
  for (size_t i = 0; i < kOpTable.size(); ++i)
    if (static_cast<size_t>(kOpTable[i].kind) != i) return false;
  return kOpTable.size() == static_cast<size_t>(OpKind::kCount);
}
static_assert(TableMatchesEnum(), "op table must list every OpKind once, in enum order");

}  // namespace

const OpInfo& GetOpInfo(OpKind op) { return kOpTable[static_cast<size_t>(op)]; }

bool ParseOpKind(std::string_view name, OpKind* out) {
  for (const auto& info : kOpTable) {
    if (info.name == name) {
      *out = info.kind;
      return true;
    }
  }
  return false;
}

}  // namespace texel::ir
