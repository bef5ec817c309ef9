// Kernels over texture storage (core/texture_layout.h): Conv (dense, depthwise, 1x1), max and
// average pooling, reductions over H and W, elementwise chains, and the buffer <-> image
// conversions, for the groups passes/assign_storage.cpp puts in images. Image parameters get their
// access qualifier from their use: the images a kernel reads are __read_only, the one it writes
// __write_only.
#include <fmt/format.h>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/generator.h"
#include "codegen/opencl/window.h"
#include "core/error.h"
#include "core/texture_layout.h"

namespace texel::codegen {
namespace {

// A kernel parameter for value v: an image with its inferred qualifier, or a buffer of its
// storage type (f16 values computed in float: vload_half / vstore_half).
std::string Param(const ir::Value* v, const std::string& name, bool written) {
  if (v->is_image())
    return fmt::format("{} image2d_t {}", written ? "__write_only" : "__read_only", name);
  return fmt::format("__global {}{}* restrict {}", written ? "" : "const ",
                     StorageTypeName(v->type.dtype), name);
}

// Element i of buffer p holding v's type, as float.
std::string LoadFloat(const ir::Value* v, const std::string& p, const std::string& i) {
  return v->type.dtype == DType::kFloat16 ? fmt::format("vload_half({}, {})", i, p)
                                          : fmt::format("{}[{}]", p, i);
}

// The image accessors of a kernel that writes an image with f16 channels when `half`: a sampler
// at program scope (one per kernel), READ_TEXEL(img, pos) and WRITE_TEXEL(img, pos, v) on
// float4. Reads use read_imagef, defined for f32 and f16 channels alike (a kernel may read
// both: an f32 value kept by --precision fp16's rule beside f16 ones); the arithmetic is f32.
// An f16 image is written with write_imageh where the device has cl_khr_fp16, else
// write_imagef of the value rounded to f16 first.
void DefineAccessors(KernelSource& src, const std::string& name, bool half, const Target& t) {
  std::string smp = name + "_smp";
  bool h = half && t.fp16;
  src.Prelude(
      fmt::format("{}__constant sampler_t {} = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | "
                  "CLK_FILTER_NEAREST;\n",
                  h ? "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" : "", smp));
  src.Define("READ_TEXEL(img, pos)", fmt::format("read_imagef(img, {}, pos)", smp));
  if (half && !h) {
    // write_imagef's own conversion to f16 is not promised to round to nearest (NVIDIA's
    // measured biased: ResNet-50 3.8e-2 against 1.6e-2 from f16 buffers); a value rounded to
    // f16's 11 bits here, to nearest even, converts exactly (normal range).
    src.Prelude(
        fmt::format("float4 {0}_rne(float4 v) {{\n"
                    "  const uint4 u = as_uint4(v);\n"
                    "  return as_float4((u + 0x0fffu + ((u >> 13) & 1u)) & 0xffffe000u);\n}}\n",
                    name));
    src.Define("WRITE_TEXEL(img, pos, v)", fmt::format("write_imagef(img, pos, {}_rne(v))", name));
    return;
  }
  src.Define("WRITE_TEXEL(img, pos, v)",
             h ? "write_imageh(img, pos, convert_half4(v))" : "write_imagef(img, pos, v)");
}

// STORE_TEXEL(acc, n, c4, h, w): the fused
// chain applied to each lane of acc (padded channels written as zeros, so that what reads the
// image later adds nothing from them), then the texel written to `out`. Appends the chain's
// operands to *params and spec.args: textures of the output's shape are read once per texel and
// passed by lane, everything else is read from buffers by flat index.
void DefineStoreTexel(KernelSource& src, const std::string& name, const ir::Value* seed,
                      const Chain& chain, std::string* params, KernelSpec& spec) {
  const ir::Value* out = chain.empty() ? seed : chain.back()->outputs[0];
  const Shape& y = out->type.shape;
  ChainFunction f = ChainAsFunction(name + "_chain", seed, chain, [&](const ir::Value* v) {
    return v->is_image() && v->type.shape == y;
  });
  std::string helper = f.code;
  std::string hparams = "__write_only image2d_t out, float4 acc, int n, int c4, int h, int w";
  std::string extra;  // the operands' arguments after (out, acc, n, c4, h, w)
  std::string reads, lanes[4];
  for (size_t k = 0; k < f.lane_operands.size(); ++k) {
    hparams += fmt::format(", __read_only image2d_t t{}", k);
    extra += fmt::format(", t{}", k);
    *params += ", " + Param(f.lane_operands[k], fmt::format("t{}", k), false);
    spec.args.push_back(f.lane_operands[k]->id);
    reads += fmt::format("  const float4 v{} = READ_TEXEL(t{}, pos);\n", k, k);
  }
  for (size_t k = 0; k < f.buffer_operands.size(); ++k) {
    hparams += fmt::format(", __global const {}* b{}",
                           StorageTypeName(f.buffer_operands[k]->type.dtype), k);
    extra += fmt::format(", b{}", k);
    *params += ", " + Param(f.buffer_operands[k], fmt::format("b{}", k), false);
    spec.args.push_back(f.buffer_operands[k]->id);
  }
  const char* comp = "xyzw";
  std::string body;
  for (int e = 0; e < 4; ++e) {
    std::string args = fmt::format("acc.{}, i0 + {} * plane", comp[e], e);
    for (size_t k = 0; k < f.lane_operands.size(); ++k) args += fmt::format(", v{}.{}", k, comp[e]);
    for (size_t k = 0; k < f.buffer_operands.size(); ++k) args += fmt::format(", b{}", k);
    body += fmt::format("  r.{} = c4 * 4 + {} < {} ? {}_chain({}) : 0.0f;\n", comp[e], e, y[1],
                        name, args);
  }
  helper += fmt::format(
      "void {}_store({}) {{\n"
      "  const int2 pos = (int2)(w, (n * {} + c4) * {} + h);\n{}"
      "  const long plane = {}L, i0 = (((long)n * {} + c4 * 4) * {} + h) * {} + w;\n"
      "  float4 r;\n{}  WRITE_TEXEL(out, pos, r);\n}}\n",
      name, hparams, (y[1] + 3) / 4, y[2], reads, y[2] * y[3], y[1], y[2], y[3], body);
  src.Prelude(helper);
  src.Define("STORE_TEXEL(acc, n, c4, h, w)",
             fmt::format("{}_store(out, acc, n, c4, h, w{})", name, extra));
}

// One work-item per texel of a 4-D value's NCHW4c image, in 8x8 work-groups.
void LaunchOverTexels(const Shape& y, KernelSpec& spec) {
  spec.global = {RoundUp(static_cast<size_t>(y[3]), 8), RoundUp(static_cast<size_t>(y[2]), 8),
                 static_cast<size_t>(y[0] * ((y[1] + 3) / 4))};
  spec.local = {8, 8, 1};
}

// Finishes a texture kernel: its own parameters `params` (inputs, then out), the chain's, the
// output argument retargeted to the chain's result, the launch over output texels.
KernelSpec Finish(KernelSource& src, const std::string& name, const ir::Value* seed,
                  const Chain& chain, std::string params, std::vector<int> args, double flops,
                  const Target& target) {
  const ir::Value* out = chain.empty() ? seed : chain.back()->outputs[0];
  DefineAccessors(src, name, out->half_texels, target);
  KernelSpec spec;
  spec.name = name;
  spec.args = std::move(args);
  spec.args.push_back(out->id);
  params += ", " + Param(out, "out", true);
  DefineStoreTexel(src, name, seed, chain, &params, spec);
  src.Define("PARAMS", params);
  const Shape& y = out->type.shape;
  spec.source = src.Render();
  LaunchOverTexels(y, spec);
  spec.flops = flops;
  return spec;
}

void DefineWindow2(KernelSource& src, const Window3& w) {
  src.Define("IH", w.in[1]).Define("IW", w.in[2]).Define("OH", w.out[1]).Define("OW", w.out[2]);
  src.Define("KH", w.k[1]).Define("KW", w.k[2]).Define("SH", w.s[1]).Define("SW", w.s[2]);
  src.Define("PH", w.pb[1]).Define("PW", w.pb[2]).Define("DH", w.d[1]).Define("DW", w.d[2]);
  src.Define("PH_END", w.pe[1]).Define("PW_END", w.pe[2]);
}

KernelSpec ConvTexture(const ir::Node& n, const std::string& name, const Chain& chain,
                       const Target& target) {
  const Shape& x = n.inputs[0]->type.shape;
  const Shape& wt = n.inputs[1]->type.shape;
  const Shape& y = n.outputs[0]->type.shape;
  Window3 win = ToWindow3(n, Shape(wt.begin() + 2, wt.end()));
  bool depthwise = n.attrs.Int("group") > 1;
  KernelSource src(name, "texture_conv");
  DefineWindow2(src, win);
  src.Define("C_IN4", (x[1] + 3) / 4).Define("C_OUT4", (y[1] + 3) / 4);
  src.Define("DEPTHWISE", depthwise ? 1 : 0);
  std::string params = Param(n.inputs[0], "x", false) + ", " + Param(n.inputs[1], "w", false);
  std::vector<int> args = {n.inputs[0]->id, n.inputs[1]->id};
  if (n.inputs.size() > 2) {
    const ir::Value* b = n.inputs[2];
    params += ", " + Param(b, "bias", false);
    args.push_back(b->id);
    src.Prelude(
        fmt::format("float4 {0}_bias4(__global const {2}* b, int c4) {{\n"
                    "  float4 v = (float4)(0.0f);\n"
                    "  for (int e = 0; e < 4 && c4 * 4 + e < {1}; ++e) ((float*)&v)[e] = {3};\n"
                    "  return v;\n}}\n",
                    name, y[1], StorageTypeName(b->type.dtype), LoadFloat(b, "b", "c4 * 4 + e")));
    src.Define("BIAS4(c4)", name + "_bias4(bias, c4)");
  } else {
    src.Define("BIAS4(c4)", "((float4)(0.0f))");
  }
  double flops = 2.0 * static_cast<double>(NumElements(y) * win.k[1] * win.k[2]) *
                 static_cast<double>(depthwise ? 1 : wt[1]);
  return Finish(src, name, n.outputs[0], chain, params, args, flops, target);
}

KernelSpec PoolTexture(const ir::Node& n, const std::string& name, const Chain& chain,
                       const Target& target) {
  Window3 win = ToWindow3(n, n.attrs.Ints("kernel"));
  KernelSource src(name, "texture_pool");
  DefineWindow2(src, win);
  src.Define("C4", (n.inputs[0]->type.shape[1] + 3) / 4);
  src.Define("MAX", n.op == ir::OpKind::kMaxPool ? 1 : 0);
  src.Define("AVERAGE", n.op == ir::OpKind::kAveragePool ? 1 : 0);
  src.Define("INCLUDE_PAD", n.op == ir::OpKind::kAveragePool
                                ? (n.attrs.Int("count_include_pad") != 0 ? 1 : 0)
                                : 0);
  double flops = static_cast<double>(NumElements(n.outputs[0]->type.shape) * win.k[1] * win.k[2]);
  return Finish(src, name, n.outputs[0], chain, Param(n.inputs[0], "x", false), {n.inputs[0]->id},
                flops, target);
}

// A reduction over H and W keeping them: the pooling template with the whole image as window.
KernelSpec ReduceTexture(const ir::Node& n, const std::string& name, const Chain& chain,
                         const Target& target) {
  const Shape& x = n.inputs[0]->type.shape;
  Window3 win{};
  for (int i = 0; i < 3; ++i) win.out[i] = win.s[i] = win.d[i] = 1;
  win.in[0] = win.k[0] = 1;
  win.in[1] = win.k[1] = x[2];
  win.in[2] = win.k[2] = x[3];
  KernelSource src(name, "texture_pool");
  DefineWindow2(src, win);
  src.Define("C4", (x[1] + 3) / 4);
  src.Define("MAX", n.op == ir::OpKind::kReduceMax ? 1 : 0);
  src.Define("AVERAGE", n.op == ir::OpKind::kReduceMean ? 1 : 0).Define("INCLUDE_PAD", 0);
  return Finish(src, name, n.outputs[0], chain, Param(n.inputs[0], "x", false), {n.inputs[0]->id},
                static_cast<double>(NumElements(x)), target);
}

// MODE 0 of texture_copy.cl: `seed`, a texture of the output's shape, through the whole group.
KernelSpec ElementwiseTexture(const Chain& nodes, const ir::Value* seed, const std::string& name,
                              const Target& target) {
  const Shape& y = seed->type.shape;
  KernelSource src(name, "texture_copy");
  src.Define("MODE", 0).Define("C", y[1]).Define("C4", (y[1] + 3) / 4);
  src.Define("H", y[2]).Define("W", y[3]);
  return Finish(src, name, seed, nodes, Param(seed, "x", false), {seed->id},
                static_cast<double>(NumElements(y) * nodes.size()), target);
}

}  // namespace

std::vector<KernelSpec> GenerateTextureGroup(const Chain& nodes, const std::string& name,
                                             const Target& target) {
  const ir::Node& anchor = *nodes[0];
  Chain chain(nodes.begin() + 1, nodes.end());
  for (const ir::Node* n : nodes)
    for (const ir::Value* v : n->outputs)
      if ((v->type.dtype != DType::kFloat32 && v->type.dtype != DType::kFloat16) ||
          v->type.shape.size() != 4)
        Fail(ErrorCode::kUnsupported, "texture kernels compute 4-D f32 or f16 tensors");
  if (anchor.op == ir::OpKind::kConv) return {ConvTexture(anchor, name, chain, target)};
  if (anchor.op == ir::OpKind::kMaxPool || anchor.op == ir::OpKind::kAveragePool)
    return {PoolTexture(anchor, name, chain, target)};
  if (anchor.info().cls == ir::OpClass::kReduce)
    return {ReduceTexture(anchor, name, chain, target)};
  if (anchor.info().cls == ir::OpClass::kUnary || anchor.info().cls == ir::OpClass::kBinary) {
    const Shape& y = nodes.back()->outputs[0]->type.shape;
    for (const ir::Value* v : anchor.inputs)
      if (v->is_image() && v->type.shape == y) return {ElementwiseTexture(nodes, v, name, target)};
  }
  Fail(ErrorCode::kUnsupported, "no texture kernel for {}", OpName(anchor.op));
}

std::vector<KernelSpec> GenerateStorageConversion(const ir::Node& n, const std::string& name,
                                                  const Target& target) {
  const ir::Value* in = n.inputs[0];
  const ir::Value* out = n.outputs[0];
  const Shape& y = out->type.shape;
  TEXEL_CHECK(y.size() == 4 &&
                  (out->type.dtype == DType::kFloat32 || out->type.dtype == DType::kFloat16) &&
                  in->is_image() != out->is_image() && out->storage != ir::Storage::kTextureWeight,
              "storage conversion of {} {}", TypeStr(out->type), OpName(n.op));
  KernelSource src(name, "texture_copy");
  src.Define("MODE", out->is_image() ? 1 : 2).Define("C", y[1]).Define("C4", (y[1] + 3) / 4);
  src.Define("LOAD_X(i)", LoadFloat(in, "x", "i"));
  src.Define("STORE_OUT(i, v)", out->type.dtype == DType::kFloat16
                                    ? "vstore_half_rte((v), (i), out)"
                                    : "out[i] = (v)");
  src.Define("H", y[2]).Define("W", y[3]);
  if (out->is_image())
    return {Finish(src, name, out, {}, Param(in, "x", false), {in->id}, 0, target)};
  // To a buffer: no chain, the template scatters the texel itself.
  KernelSpec spec;
  spec.name = name;
  spec.args = {in->id, out->id};
  DefineAccessors(src, name, in->half_texels, target);
  src.Define("PARAMS", Param(in, "x", false) + ", " + Param(out, "out", true));
  spec.source = src.Render();
  LaunchOverTexels(y, spec);
  return {spec};
}

}  // namespace texel::codegen
