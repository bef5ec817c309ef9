#include "codegen/opencl/generator.h"

#include <algorithm>
#include <atomic>

#include "codegen/opencl/elementwise_chain.h"
#include "codegen/opencl/matmul.h"
#include "core/error.h"

namespace texel::codegen {

bool WideIndex(const std::vector<const ir::Value*>& values) {
  for (const ir::Value* v : values)
    if (NumElements(v->type.shape) >= (int64_t{1} << 31)) return true;
  return false;
}

std::string CoordsCode(const Shape& shape, bool wide) {
  if (shape.empty()) return "";
  // 32-bit coordinates where every offset fits: PoCL vectorises their divisions across
  // work-items, not 64-bit ones (a Concat ran 2.5x faster).
  const char* type = wide ? "long" : "int";
  std::string s = fmt::format("{} t = i;", type);
  for (size_t d = shape.size(); d-- > 1;)
    s += fmt::format(" const {} c{} = t % {}; t /= {};", type, d, shape[d], shape[d]);
  s += fmt::format(" const {} c0 = t;", type);
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

DType RequireOneFloatType(const ir::Node& node) {
  DType t = node.inputs[0]->type.dtype;
  auto check = [&](const ir::Value* v) {
    if (!IsFloat(v->type.dtype) || v->type.dtype != t)
      Fail(ErrorCode::kUnsupported, "{} on {} is not supported on the device (one float type)",
           OpName(node.op), DTypeName(v->type.dtype));
  };
  for (const ir::Value* v : node.inputs) check(v);
  for (const ir::Value* v : node.outputs) check(v);
  return t;
}

void DefineStorage(KernelSource& src, DType t) {
  bool half = t == DType::kFloat16;
  src.Define("T", ValueTypeName(t))
      .Define("T_STORE", StorageTypeName(t))
      .Define("LOAD(p, i)", half ? "vload_half((i), (p))" : "(p)[i]")
      .Define("STORE(p, i, v)", half ? "vstore_half_rte((v), (i), (p))" : "(p)[i] = (v)");
}

std::string HalfVectorLoad(KernelSource& src, const Target& t, int n) {
  TEXEL_CHECK(n == 2 || n == 4, "f16 vector loads of {}", n);
  if (!t.ptx) return fmt::format("vload_half{}(0, (p) + (i))", n);
  // One definition per program, which many kernels' sources share.
  src.Prelude(R"(#ifndef TEXEL_HALF_LOADS
#define TEXEL_HALF_LOADS
inline float texel_half_bits(uint h) {
  float f;
  __asm("{ .reg .b16 b; cvt.u16.u32 b, %1; cvt.f32.f16 %0, b; }" : "=f"(f) : "r"(h));
  return f;
}
inline float2 texel_load_half2(__global const half* p) {
  const ushort2 b = *(__global const ushort2*)p;
  return (float2)(texel_half_bits(b.x), texel_half_bits(b.y));
}
inline float4 texel_load_half4(__global const half* p) {
  const ushort4 b = *(__global const ushort4*)p;
  return (float4)(texel_half_bits(b.x), texel_half_bits(b.y), texel_half_bits(b.z),
                  texel_half_bits(b.w));
}
#endif
)");
  return fmt::format("texel_load_half{}((p) + (i))", n);
}

void DefineArrival(KernelSource& src, const Target& t) {
  // OpenCL 1.2 promises no order between work-groups; NVIDIA's GPUs get a device-wide fence in
  // PTX (membar.gl, CUDA's __threadfence), others OpenCL's global fence, which orders the
  // work-item's accesses as seen by the device on CPUs.
  std::string fence =
      t.ptx ? R"(__asm volatile("membar.gl;" ::: "memory"))" : "mem_fence(CLK_GLOBAL_MEM_FENCE)";
  src.Define("ARRIVE_LAST(counter, parties, last)",
             "do { " + fence +
                 "; barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);"
                 " if (get_local_id(0) == 0 && get_local_id(1) == 0) {"
                 " (last) = atomic_inc(counter) == (parties) - 1;"
                 " if (last) atomic_xchg((counter), 0); }"
                 " barrier(CLK_LOCAL_MEM_FENCE); if (last) " +
                 fence + "; } while (0)");
}

void DefineAsyncCopy(KernelSource& src, const Target& t) {
  if (t.mma_sync) {
    // cp.async (sm_80 and later): 16 bytes, of which src-size are read and the rest zeroed.
    src.Define("CP_ASYNC16(dst, src, ok)",
               R"(__asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::)"
               R"("r"((uint)(ulong)(dst)), "l"((ulong)(src)), "r"((ok) ? 16 : 0) : "memory"))");
    src.Define("CP_ASYNC_COMMIT()", R"(__asm volatile("cp.async.commit_group;" ::: "memory"))");
    // n expanded first (a macro such as PENDING), then made the instruction's literal.
    src.Define("CP_ASYNC_STR(n)", "#n");
    src.Define("CP_ASYNC_WAIT(n)",
               R"(__asm volatile("cp.async.wait_group " CP_ASYNC_STR(n) ";" ::: "memory"))");
    return;
  }
  // Elsewhere a plain copy of the same 16 bytes (any element type: moved as four words).
  src.Define("CP_ASYNC16(dst, src, ok)",
             "vstore4((ok) ? vload4(0, (__global const uint*)(src)) : (uint4)0, 0, "
             "(__local uint*)(dst))");
  src.Define("CP_ASYNC_COMMIT()", "((void)0)").Define("CP_ASYNC_WAIT(n)", "((void)0)");
}

void DefineMatrixEngine(KernelSource& src, const Target& t) {
  if (!t.mma_sync) return;
  // Not volatile: a register-only operation the compiler may interleave with the next fragment
  // reads.
  for (auto [name, shape] : {std::pair{"MMA_TF32", "m16n8k8.row.col.f32.tf32.tf32.f32"},
                             std::pair{"MMA_F16", "m16n8k16.row.col.f32.f16.f16.f32"}})
    src.Define(std::string(name) + "(d, a0, a1, a2, a3, b0, b1)",
               fmt::format(R"(__asm("mma.sync.aligned.{} )"
                           R"({{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, {{%8,%9}}, {{%10,%11,%12,%13}};" )"
                           R"(: "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) )"
                           R"(: "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), )"
                           R"("f"(d[0]), "f"(d[1]), "f"(d[2]), "f"(d[3])))",
                           shape));
  src.Define("LDMATRIX_X4(trans, d, p)",
             R"(__asm volatile("ldmatrix.sync.aligned.m8n8.x4" trans ".shared.b16 )"
             R"({%0,%1,%2,%3}, [%4];" : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]) )"
             R"(: "r"((uint)(ulong)(p)) : "memory"))");
}

std::vector<KernelSpec> GenerateKernel(const ir::Node& node, const std::string& kernel_name,
                                       const Target& target) {
  return GenerateGroup({&node}, kernel_name, target);
}

void CheckFloat64(const Chain& nodes, const Target& target) {
  for (const ir::Node* n : nodes)
    for (const auto* values : {&n->inputs, &n->outputs})
      for (const ir::Value* v : *values)
        if (v->type.dtype == DType::kFloat64 && !target.fp64)
          Fail(ErrorCode::kUnsupported, "f64 tensors need a device with cl_khr_fp64");
}

namespace {
std::atomic<uint64_t> generated_groups{0};

// The LayerNorm in an anchor's epilogue (fuse's third rule), or end(); the ops before it go to
// pro->chain, and pro->write_input is its input where others read that too.
Chain::const_iterator SplitAtNorm(const Chain& epilogue, NormPrologue* pro) {
  auto ln = std::find_if(epilogue.begin(), epilogue.end(),
                         [](const ir::Node* m) { return m->op == ir::OpKind::kLayerNorm; });
  if (ln == epilogue.end()) return ln;
  pro->chain.assign(epilogue.begin(), ln);
  if ((*ln)->attrs.Int("write_input", 0)) pro->write_input = (*ln)->inputs[0];
  return ln;
}

// The kernel of the LayerNorm at ln (SplitAtNorm) with its prologue pro and the rest of the
// epilogue after it.
KernelSpec NormKernel(Chain::const_iterator ln, const Chain& epilogue, const std::string& name,
                      const Target& target, const NormPrologue& pro) {
  return GenerateLayerNorm(**ln, name, target, Chain(ln + 1, epilogue.cend()), &pro);
}
}  // namespace

uint64_t GeneratedGroups() { return generated_groups.load(std::memory_order_relaxed); }

std::vector<KernelSpec> GenerateGroup(const Chain& nodes, const std::string& kernel_name,
                                      const Target& target) {
  generated_groups.fetch_add(1, std::memory_order_relaxed);
  CheckFloat64(nodes, target);
  const ir::Node& node = *nodes[0];
  if (node.op == ir::OpKind::kConvertStorage)
    return GenerateStorageConversion(node, kernel_name, target);
  if (nodes.back()->outputs[0]->is_image()) return GenerateTextureGroup(nodes, kernel_name, target);
  Chain epilogue(nodes.begin() + 1, nodes.end());
  switch (node.info().cls) {
    case ir::OpClass::kUnary:
    case ir::OpClass::kBinary:
    case ir::OpClass::kTernary: {
      // An elementwise group, then a LayerNorm reading it (fuse's third rule): one kernel, the
      // LayerNorm applying the group to the seed as it reads it.
      NormPrologue pro;
      auto ln = SplitAtNorm(epilogue, &pro);
      if (ln == epilogue.end()) return {GenerateElementwise(nodes, kernel_name, target)};
      pro.seed = ElementwiseSeed(node);
      pro.chain.insert(pro.chain.begin(), &node);
      return {NormKernel(ln, epilogue, kernel_name, target, pro)};
    }
    case ir::OpClass::kConv:
      if (node.op == ir::OpKind::kConvTranspose)
        return {GenerateConvTranspose(node, kernel_name, epilogue)};
      return GenerateConv(node, kernel_name, target, epilogue);
    case ir::OpClass::kPool: return {GeneratePool(node, kernel_name, target, epilogue)};
    case ir::OpClass::kReduce: return {GenerateReduce(node, kernel_name, target, epilogue)};
    case ir::OpClass::kMatMul: {
      // A product, its epilogue, then a LayerNorm reading it (fuse's third rule): the product
      // as partial slices, the LayerNorm summing them with the epilogue applied.
      NormPrologue pro;
      auto ln = SplitAtNorm(epilogue, &pro);
      if (ln == epilogue.end()) return GenerateMatMul(node, kernel_name, target, epilogue);
      pro.product = node.outputs[0];
      KernelSpec product = GenerateMatMulPartials(node, kernel_name, target, &pro.slices);
      KernelSpec norm = NormKernel(ln, epilogue, kernel_name + "_layernorm", target, pro);
      norm.scratch_bytes = product.scratch_bytes;
      product.end_op = norm.first_op = 1;  // the LayerNorm's kernel applies the epilogue
      return {product, norm};
    }
    case ir::OpClass::kNormalize:
      if (node.op == ir::OpKind::kLayerNorm)
        return {GenerateLayerNorm(node, kernel_name, target, epilogue)};
      break;
    case ir::OpClass::kMovement: {
      // A Gather, its epilogue, then a LayerNorm reading it (fuse's third rule): one kernel,
      // the LayerNorm gathering its rows.
      NormPrologue pro;
      auto ln = SplitAtNorm(epilogue, &pro);
      if (ln != epilogue.end()) {
        TEXEL_CHECK(node.op == ir::OpKind::kGather, "a LayerNorm after a {} in one kernel",
                    OpName(node.op));  // fuse's third rule: after a Gather only
        pro.gather = &node;
        return {NormKernel(ln, epilogue, kernel_name, target, pro)};
      }
      if (!epilogue.empty()) return {GeneratePointwise(node, kernel_name, target, epilogue)};
      break;
    }
    default: break;
  }
  TEXEL_CHECK(epilogue.empty(), "{} takes no fused epilogue", OpName(node.op));
  switch (node.info().cls) {
    case ir::OpClass::kMovement: return {GeneratePointwise(node, kernel_name, target)};
    case ir::OpClass::kNormalize: return {GenerateSoftmax(node, kernel_name, target)};
    case ir::OpClass::kSelect: return {GenerateNonMaxSuppression(node, kernel_name)};
    case ir::OpClass::kAttention: return GenerateAttention(node, kernel_name, target);
    default: break;
  }
  Fail(ErrorCode::kInternal, "no generator for {}", OpName(node.op));
}

}  // namespace texel::codegen
