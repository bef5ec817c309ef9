// Batched matrix product (kernels/matmul.cl) with numpy batch broadcasting.
#include "codegen/opencl/generator.h"
#include "core/error.h"
#include "ir/host_eval.h"

namespace texel::codegen {

namespace {
// Offset expression of the matrix of output batch b in an operand with batch dims `batch`
// broadcast to `out_batch`.
std::string BatchOffset(const Shape& batch, const Shape& out_batch, int64_t matrix_elems) {
  if (NumElements(batch) <= 1) return "0";
  std::vector<int64_t> st = ir::BroadcastStrides(batch, out_batch);
  std::string s;
  int64_t div = 1;
  for (size_t d = out_batch.size(); d-- > 0;) {
    if (st[d] != 0)
      s += fmt::format("{}((long)(b) / {} % {}) * {}", s.empty() ? "" : " + ", div, out_batch[d],
                       st[d] * matrix_elems);
    div *= out_batch[d];
  }
  return s.empty() ? "0" : "(" + s + ")";
}
}  // namespace

KernelSpec GenerateMatMul(const ir::Node& n, const std::string& kernel_name) {
  DType t = RequireOneFloatType(n);  // f64 only reaches here with cl_khr_fp64
  const Shape& a = n.inputs[0]->type.shape;
  const Shape& b = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  int64_t m = a[a.size() - 2], k = a.back(), cols = b.back();
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2), yb(y.begin(), y.end() - 2);
  int64_t batch = NumElements(yb);
  KernelSource src(kernel_name, "matmul");
  DefineStorage(src, t);
  src.Define("M", m).Define("N", cols).Define("K", k).Define("BATCH", batch);
  src.Define("A_OFFSET(b)", BatchOffset(ab, yb, m * k));
  src.Define("B_OFFSET(b)", BatchOffset(bb, yb, k * cols));
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.args = {n.inputs[0]->id, n.inputs[1]->id, n.outputs[0]->id};
  spec.global = {RoundUp(static_cast<size_t>(cols), 8), static_cast<size_t>(m),
                 static_cast<size_t>(batch)};
  spec.local = {8, 1, 1};
  spec.flops = 2.0 * static_cast<double>(batch * m * cols * k);
  return spec;
}

}  // namespace texel::codegen
