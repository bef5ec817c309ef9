#include "backends/clblast/clblast_backend.h"

#include <fmt/format.h>

#include <optional>
#include <string_view>

#include "codegen/opencl/generator.h"
#include "codegen/opencl/matmul.h"
#include "core/error.h"
#include "runtime/clblast/clblast_library.h"

namespace texel::backends {
namespace {

// A MatMul as one strided-batched GEMM: batch x [m, k] x [k, n], row-major, each operand
// possibly stored transposed (trans_a: [k, m], trans_b: [n, k]), with each operand's batch
// stride (0 for a B shared by all batches; a shared B under a plain A folds A's batches into
// rows).
struct Gemm {
  int64_t batch, m, n, k, a_stride, b_stride, trans_a, trans_b;
};

std::optional<Gemm> GemmOf(const ir::Node& n) {
  if (n.op != ir::OpKind::kMatMul) return std::nullopt;
  for (const ir::Value* v : {n.inputs[0], n.inputs[1], n.outputs[0]})
    if (v->type.dtype != DType::kFloat32) return std::nullopt;
  const Shape& a = n.inputs[0]->type.shape;
  const Shape& b = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  if (a.size() < 2 || b.size() < 2) return std::nullopt;  // vectors stay native
  // The native kernels' shape rule (a shared B under a plain A folds A's batches into rows).
  codegen::GemmShape s = codegen::GemmShapeOf(n);
  Gemm g{s.batch, s.m, s.n, s.k, 0, 0, s.trans_a, s.trans_b};
  int64_t a_batch = NumElements(Shape(a.begin(), a.end() - 2));
  int64_t b_batch = NumElements(Shape(b.begin(), b.end() - 2));
  int64_t batches = NumElements(Shape(y.begin(), y.end() - 2));
  bool rows_folded = g.batch != batches;  // A's batches became rows of one product
  if (!rows_folded &&
      ((a_batch != batches && a_batch != 1) || (b_batch != batches && b_batch != 1)))
    return std::nullopt;  // a broadcast that is not one stride per operand
  g.a_stride = a_batch == 1 ? 0 : g.m * g.k;
  g.b_stride = b_batch == 1 ? 0 : g.k * g.n;
  if (g.batch * g.m * g.n * g.k == 0) return std::nullopt;
  return g;
}

// A 2-D Conv as CLBlast's convolution-as-GEMM: one group, symmetric padding, f32.
struct ConvGemm {
  int64_t channels, height, width, kh, kw, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, kernels,
      batch;
};

std::optional<ConvGemm> ConvGemmOf(const ir::Node& n) {
  if (n.op != ir::OpKind::kConv || n.attrs.Int("group") != 1 || n.attrs.Int("channels_last", 0))
    return std::nullopt;
  for (const ir::Value* v : n.inputs)
    if (v->type.dtype != DType::kFloat32) return std::nullopt;
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& w = n.inputs[1]->type.shape;
  if (x.size() != 4 || n.outputs[0]->type.dtype != DType::kFloat32) return std::nullopt;
  const auto& p = n.attrs.Ints("pads");
  const auto& s = n.attrs.Ints("strides");
  const auto& d = n.attrs.Ints("dilations");
  if (p[0] != p[2] || p[1] != p[3]) return std::nullopt;
  return ConvGemm{x[1], x[2], x[3], w[2], w[3], p[0], p[1], s[0], s[1], d[0], d[1], w[0], x[0]};
}

// The convolution call, then (with a bias) a small generated kernel that adds it in place:
// CLBlast's convolution has no bias.
std::vector<codegen::KernelSpec> LowerConv(const ir::Node& n, const ConvGemm& c,
                                           const std::string& name) {
  const Shape& y = n.outputs[0]->type.shape;
  codegen::KernelSpec conv;
  conv.name = name;
  conv.call = "clblast.sconvgemm";
  conv.call_args = {c.channels, c.height,   c.width, c.kh,    c.kw,      c.pad_h, c.pad_w,
                    c.stride_h, c.stride_w, c.dil_h, c.dil_w, c.kernels, c.batch};
  conv.args = {n.inputs[0]->id, n.inputs[1]->id, n.outputs[0]->id};
  conv.flops = codegen::ConvFlops(n);
  if (n.inputs.size() < 3) return {conv};
  codegen::KernelSpec bias;
  bias.name = name + "_bias";
  int64_t total = NumElements(y), plane = y[2] * y[3];
  bias.source = fmt::format(
      "__kernel void {}(__global float* y, __global const float* b) {{\n"
      "  const long i = get_global_id(0);\n"
      "  if (i < {}L) y[i] += b[i / {} % {}];\n}}\n",
      bias.name, total, plane, y[1]);
  bias.args = {n.outputs[0]->id, n.inputs[2]->id};
  bias.global = {static_cast<size_t>((total + 255) / 256 * 256)};
  bias.local = {256};
  bias.flops = static_cast<double>(total);
  return {conv, bias};
}

}  // namespace

std::optional<std::string> ClblastBackend::Unavailable() const {
  std::string why;
  if (runtime::LoadClblast(&why)) return std::nullopt;
  return why;
}

Support ClblastBackend::Supports(const ir::Node& node, const cl::DeviceInfo&) const {
  if (!GemmOf(node) && !ConvGemmOf(node))
    return Support::No(Error(ErrorCode::kUnsupported,
                             fmt::format("clblast runs GEMM-shaped MatMul, Gemm and Conv nodes, "
                                         "not this {}",
                                         OpName(node.op))));
  if (std::optional<std::string> why = Unavailable())
    return Support::No(Error(ErrorCode::kUnsupported, fmt::format("clblast: {}", *why)));
  return Support::Yes();
}

double ClblastBackend::Estimate(const ir::Node& node, const cl::DeviceInfo& device) const {
  // Measured against texel's kernels on the same devices (docs/backends.md): CLBlast's SGEMM
  // reaches 0.4-0.6x of texel's GEMM on an H100 and 0.05-0.5x on PoCL (its kernels are tuned
  // for GPUs); its convolution 0.3x of texel's implicit GEMM on the H100.
  bool gpu = device.kind == cl::DeviceKind::kGpu;
  if (std::optional<Gemm> g = GemmOf(node))
    return RooflineSeconds(2.0 * static_cast<double>(g->batch * g->m * g->n * g->k),
                           gpu ? 0.35 : 0.03, device);
  if (ConvGemmOf(node)) return RooflineSeconds(codegen::ConvFlops(node), gpu ? 0.1 : 0.02, device);
  return 1e30;
}

std::vector<codegen::KernelSpec> ClblastBackend::Lower(const std::vector<const ir::Node*>& nodes,
                                                       const std::string& name_prefix,
                                                       const cl::DeviceInfo&,
                                                       const codegen::TuningSource*) const {
  TEXEL_CHECK(nodes.size() == 1, "the clblast backend fuses no epilogues");
  const ir::Node& n = *nodes[0];
  if (std::optional<ConvGemm> c = ConvGemmOf(n)) return LowerConv(n, *c, name_prefix);
  std::optional<Gemm> g = GemmOf(n);
  if (!g) Fail(ErrorCode::kUnsupported, "CLBlast does not take {} here", OpName(n.op));
  codegen::KernelSpec spec;
  spec.name = name_prefix;
  spec.call = "clblast.sgemm";
  spec.call_args = {g->batch, g->m, g->n, g->k, g->a_stride, g->b_stride, g->trans_a, g->trans_b};
  spec.args = {n.inputs[0]->id, n.inputs[1]->id, n.outputs[0]->id};
  spec.flops = 2.0 * static_cast<double>(g->batch * g->m * g->n * g->k);
  return {spec};
}

}  // namespace texel::backends
