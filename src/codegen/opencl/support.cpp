#include "codegen/opencl/support.h"

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/matmul.h"
#include "core/error.h"
#include "ir/attention_layout.h"

namespace texel::codegen {

void CheckNode(const ir::Node& node, const Target& target) {
  CheckFloat64({&node}, target);
  switch (node.info().cls) {
    case ir::OpClass::kUnary:
    case ir::OpClass::kBinary:
    case ir::OpClass::kTernary: return CheckElementwise(node);
    case ir::OpClass::kConv:  // in the generators' order: types, then the window's rank
      RequireConvTypes(node);
      CheckWindowRank(node);
      return;
    case ir::OpClass::kPool: return CheckPool(node);
    case ir::OpClass::kReduce: return CheckReduce(node);
    case ir::OpClass::kMatMul:
    case ir::OpClass::kNormalize:
    case ir::OpClass::kAttention: RequireOneFloatType(node); return;
    case ir::OpClass::kMovement: return CheckMovement(node);
    case ir::OpClass::kSelect: return CheckNonMaxSuppression(node);
  }
  Fail(ErrorCode::kInternal, "no generator for {}", OpName(node.op));
}

KernelTraits TraitsOf(const ir::Node& node, const Target& target) {
  const Shape& y = node.outputs[0]->type.shape;
  switch (node.info().cls) {
    case ir::OpClass::kMatMul: {
      GemmShape s = GemmShapeOf(node);
      return {2.0 * static_cast<double>(s.batch * s.m) * static_cast<double>(s.n * s.k),
              s.gather_b};
    }
    case ir::OpClass::kConv: {
      if (node.op == ir::OpKind::kConv) return ConvTraits(node, target);
      // ConvTranspose: every input element meets w[1] * prod(k) weights.
      const Shape& wt = node.inputs[1]->type.shape;
      return {2.0 * static_cast<double>(NumElements(node.inputs[0]->type.shape)) *
                  static_cast<double>(NumElements(wt) / wt[0]),
              false};
    }
    case ir::OpClass::kAttention: {
      const ir::Attrs& a = node.attrs;
      ir::AttentionLayout l = ir::AttentionLayoutOf(
          a, node.inputs[0]->type.shape, node.inputs[1]->type.shape, node.inputs[2]->type.shape);
      double pairs = static_cast<double>(NumElements(l.batch)) * static_cast<double>(l.sq) *
                     static_cast<double>(l.sk);
      if (a.Int("causal", 0)) pairs /= 2;
      return {2.0 * pairs * static_cast<double>(l.d + l.dv), false};
    }
    default:
      // Memory-bound kernels: about one operation per element read or written.
      return {
          static_cast<double>(NumElements(node.inputs.empty() ? y : node.inputs[0]->type.shape) +
                              NumElements(y)),
          false};
  }
}

}  // namespace texel::codegen
