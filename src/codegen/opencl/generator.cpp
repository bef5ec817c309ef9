#include "codegen/opencl/generator.h"

#include "core/error.h"

namespace texel::codegen {

std::string CoordsCode(const Shape& shape) {
  if (shape.empty()) return "";
  std::string s = "long t = i;";
  for (size_t d = shape.size(); d-- > 1;)
    s += fmt::format(" const long c{} = t % {}; t /= {};", d, shape[d], shape[d]);
  s += " const long c0 = t;";
  return s;
}

std::string OffsetExpr(const std::vector<int64_t>& strides) {
  std::string s;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] == 0) continue;
    if (!s.empty()) s += " + ";
    s += strides[d] == 1 ? fmt::format("c{}", d) : fmt::format("c{} * {}", d, strides[d]);
  }
  return s.empty() ? "0" : "(" + s + ")";
}

size_t RoundUp(size_t x, size_t m) { return (x + m - 1) / m * m; }

void RequireFloat32(const ir::Node& node) {
  for (const ir::Value* v : node.inputs)
    if (v->type.dtype != DType::kFloat32)
      Fail(ErrorCode::kUnsupported, "{} on {} is not supported on the device (float32 only)",
           OpName(node.op), DTypeName(v->type.dtype));
}

KernelSpec GenerateKernel(const ir::Node& node, const std::string& kernel_name,
                          const Target& target) {
  std::vector<const ir::Value*> values(node.inputs.begin(), node.inputs.end());
  values.insert(values.end(), node.outputs.begin(), node.outputs.end());
  for (const ir::Value* v : values) {
    bool pointwise = node.info().cls == ir::OpClass::kUnary ||
                     node.info().cls == ir::OpClass::kBinary ||
                     node.info().cls == ir::OpClass::kTernary ||
                     node.info().cls == ir::OpClass::kMovement;
    if (v->type.dtype == DType::kFloat16 && !pointwise)
      Fail(ErrorCode::kUnsupported, "{} on f16 tensors is not supported on the device yet",
           OpName(node.op));
    if (v->type.dtype == DType::kFloat64 && !target.fp64)
      Fail(ErrorCode::kUnsupported, "f64 tensors need a device with cl_khr_fp64");
  }
  switch (node.info().cls) {
    case ir::OpClass::kUnary:
    case ir::OpClass::kBinary:
    case ir::OpClass::kTernary:
    case ir::OpClass::kMovement: return GeneratePointwise(node, kernel_name);
    case ir::OpClass::kConv:
      if (node.op == ir::OpKind::kConvTranspose) return GenerateConvTranspose(node, kernel_name);
      return GenerateConv(node, kernel_name);
    case ir::OpClass::kPool: return GeneratePool(node, kernel_name);
    case ir::OpClass::kMatMul: return GenerateMatMul(node, kernel_name);
    case ir::OpClass::kReduce: return GenerateReduce(node, kernel_name);
    case ir::OpClass::kNormalize: return GenerateSoftmax(node, kernel_name);
  }
  Fail(ErrorCode::kInternal, "no generator for {}", OpName(node.op));
}

}  // namespace texel::codegen
