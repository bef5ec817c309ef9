// Window kernels: direct convolution (kernels/conv2d.cl) and pooling (kernels/pool2d.cl).
#include "codegen/opencl/generator.h"
#include "core/error.h"

namespace texel::codegen {
namespace {

// The parameters every 2-D window kernel shares.
void DefineWindow(KernelSource& src, const Shape& x, const Shape& y, const Shape& kernel,
                  const ir::Attrs& a) {
  const auto& s = a.Ints("strides");
  const auto& p = a.Ints("pads");
  const auto& d = a.Ints("dilations");
  src.Define("IH", x[2]).Define("IW", x[3]).Define("OH", y[2]).Define("OW", y[3]);
  src.Define("KH", kernel[0]).Define("KW", kernel[1]).Define("SH", s[0]).Define("SW", s[1]);
  src.Define("PH", p[0]).Define("PW", p[1]).Define("DH", d[0]).Define("DW", d[1]);
}

std::vector<size_t> WindowGlobal(const Shape& y, int64_t planes) {
  return {RoundUp(static_cast<size_t>(y[3]), 8), static_cast<size_t>(y[2]),
          static_cast<size_t>(planes)};
}

void Require2D(const ir::Node& n) {
  if (n.inputs[0]->type.shape.size() != 4)
    Fail(ErrorCode::kUnsupported, "{} over {} spatial dims is not supported on the device",
         OpName(n.op), n.inputs[0]->type.shape.size() - 2);
}

}  // namespace

KernelSpec GenerateConv(const ir::Node& n, const std::string& kernel_name) {
  RequireFloat32(n);
  Require2D(n);
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& w = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  int64_t group = n.attrs.Int("group");
  bool bias = n.inputs.size() > 2;
  KernelSource src(kernel_name, "conv2d");
  DefineWindow(src, x, y, {w[2], w[3]}, n.attrs);
  src.Define("N", x[0]).Define("IC", x[1]).Define("OC", y[1]);
  src.Define("IC_PER_G", x[1] / group).Define("OC_PER_G", y[1] / group);
  src.Define("BIAS_PARAM", bias ? ", __global const float* b" : "");
  src.Define("BIAS(oc)", bias ? "b[oc]" : "0.0f");
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  for (const ir::Value* v : n.inputs) spec.args.push_back(v->id);
  spec.args.push_back(n.outputs[0]->id);
  spec.global = WindowGlobal(y, y[0] * y[1]);
  spec.local = {8, 1, 1};
  spec.flops = 2.0 * static_cast<double>(NumElements(y)) * static_cast<double>(w[1] * w[2] * w[3]);
  return spec;
}

KernelSpec GeneratePool(const ir::Node& n, const std::string& kernel_name) {
  RequireFloat32(n);
  Require2D(n);
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  const auto& k = n.attrs.Ints("kernel");
  const auto& p = n.attrs.Ints("pads");
  KernelSource src(kernel_name, "pool2d");
  DefineWindow(src, x, y, k, n.attrs);
  src.Define("NC", x[0] * x[1]).Define("PH_END", p[2]).Define("PW_END", p[3]);
  if (n.op == ir::OpKind::kMaxPool) {
    src.Define("INIT", "(-INFINITY)");
    src.Define("ACC(acc, v)", "acc = fmax(acc, v)");
    src.Define("FINISH(acc, count, padded)", "acc");
  } else {
    bool include_pad = n.attrs.Int("count_include_pad") != 0;
    src.Define("INIT", "0.0f");
    src.Define("ACC(acc, v)", "acc += v");
    src.Define("FINISH(acc, count, padded)",
               include_pad ? "(acc / (float)(padded))" : "(acc / (float)(count))");
  }
  KernelSpec spec;
  spec.name = kernel_name;
  spec.source = src.Render();
  spec.args = {n.inputs[0]->id, n.outputs[0]->id};
  spec.global = WindowGlobal(y, y[0] * y[1]);
  spec.local = {8, 1, 1};
  spec.flops = static_cast<double>(NumElements(y) * k[0] * k[1]);
  return spec;
}

}  // namespace texel::codegen
