// texel_gemm's engine (api/gemm.h).
#include "api/gemm.h"

#include <fmt/format.h>

#include <algorithm>

#include "codegen/opencl/gemm/dpas_gemm.h"
#include "codegen/opencl/gemm/wgmma_gemm.h"
#include "core/error.h"
#include "runtime/cl/fault_injection.h"
#include "runtime/cl/program_cache.h"

namespace texel::api {
namespace {

// Sizes and leading dimensions stay within 2^30 so that the kernel's 32-bit tile arithmetic
// (row + tile offsets, K rounded up to whole steps) cannot wrap; batches and row tiles within
// 65535, the most a grid dimension takes on every GPU texel knows.
constexpr int64_t kMaxSize = int64_t{1} << 30, kMaxBatch = 65535;

// One past the last element a stored rows x cols matrix (leading dimension ld) reaches in batch
// entries 0..batch-1 at `stride`, from the buffer's start; exact in 128 bits.
__int128 Extent(int64_t offset, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                int64_t stride) {
  return __int128{offset} + __int128{batch - 1} * stride + __int128{rows - 1} * ld + cols;
}

void CheckOperand(const char* name, cl_mem mem, int64_t offset, int64_t rows, int64_t cols,
                  int64_t ld, int64_t batch, int64_t stride, size_t elem_bytes) {
  if (mem == nullptr) Fail(ErrorCode::kInvalidArgument, "{} is NULL", name);
  if (ld < cols)
    Fail(ErrorCode::kInvalidArgument,
         "ld{} = {} is less than the {} elements of a stored row of {}", name, ld, cols, name);
  if (ld > kMaxSize) Fail(ErrorCode::kInvalidArgument, "ld{} = {} is past 2^30", name, ld);
  size_t bytes = 0;
  cl_int err = clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(bytes), &bytes, nullptr);
  if (err != CL_SUCCESS)
    Fail(ErrorCode::kInvalidArgument, "{} is not a valid cl_mem (error {})", name, err);
  if (rows == 0) return;  // k = 0: the operand is not read
  __int128 need = Extent(offset, rows, cols, ld, batch, stride);
  if (need * elem_bytes > bytes)
    Fail(ErrorCode::kInvalidArgument,
         "{} holds {} bytes; the problem reaches {} elements of {} bytes from its start", name,
         bytes, static_cast<double>(need), elem_bytes);
}

}  // namespace

void CheckGemm(const codegen::GemmProblem& g, const GemmOperands& ops, const codegen::Target& t) {
  bool cm = ops.column_major;
  const char *a = cm ? "b" : "a", *b = cm ? "a" : "b", *m = cm ? "n" : "m";
  if (g.elem != DType::kFloat32 && g.elem != DType::kFloat16)
    Fail(ErrorCode::kInvalidArgument, "element type {}: want f32 or f16", DTypeName(g.elem));
  for (auto [name, v] : {std::pair{m, g.m}, {cm ? "m" : "n", g.n}, {"k", g.k}}) {
    if (v < 0) Fail(ErrorCode::kInvalidArgument, "{} = {} is negative or past 2^63", name, v);
    if (v > kMaxSize) Fail(ErrorCode::kInvalidArgument, "{} = {} is past 2^30", name, v);
  }
  if (g.batch < 0 || g.batch > kMaxBatch)
    Fail(ErrorCode::kInvalidArgument, "batch = {}: want 0 to {}", g.batch, kMaxBatch);
  if (g.m > kMaxBatch * 32)
    Fail(ErrorCode::kInvalidArgument, "{} = {} is past {} (65535 tiles of 32 rows)", m, g.m,
         kMaxBatch * 32);
  for (auto [name, v] : {std::pair{fmt::format("{}_offset", a), g.a_offset},
                         {fmt::format("{}_offset", b), g.b_offset},
                         {std::string("c_offset"), g.c_offset},
                         {fmt::format("stride_{}", a), g.stride_a},
                         {fmt::format("stride_{}", b), g.stride_b},
                         {std::string("stride_c"), g.stride_c}})
    if (v < 0) Fail(ErrorCode::kInvalidArgument, "{} = {} is negative or past 2^63", name, v);
  if (g.mode != ComputeMode::kFp32 && !t.mma_sync && !codegen::DpasApplies(g, t))
    Fail(ErrorCode::kUnsupported,
         "compute mode {} needs a matrix engine (NVIDIA compute capability 8.0 or later through "
         "inline PTX; for fp16 also Intel's cl_intel_subgroup_matrix_multiply_accumulate); this "
         "device has none: use fp32",
         ComputeModeName(g.mode));
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;  // nothing to write
  size_t eb = DTypeSize(g.elem);
  CheckOperand(a, ops.a, g.a_offset, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch,
               g.stride_a, eb);
  CheckOperand(b, ops.b, g.b_offset, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch,
               g.stride_b, eb);
  CheckOperand("c", ops.c, g.c_offset, g.m, g.n, g.ldc, g.batch, g.stride_c, eb);
  // Batch entries of C are written by different work-groups: they must not share elements.
  if (g.batch > 1 && g.stride_c < (g.m - 1) * g.ldc + g.n)
    Fail(ErrorCode::kInvalidArgument,
         "stride_c = {} is less than the {} elements of one C: batch entries would overlap",
         g.stride_c, (g.m - 1) * g.ldc + g.n);
}

struct GemmKernels::Built {
  std::string key;  // the kernel's class
  std::unique_ptr<cl::Program> program;
  cl::Kernel kernel;
};

// A queue's scratch: released buffers live on until the queue's commands that use them are done
// (clReleaseMemObject's contract), so growing or dropping it never waits.
struct GemmKernels::Scratch {
  cl_command_queue queue = nullptr;  // retained
  cl::Buffer parts, counters, packed;
  ~Scratch() {
    if (queue) clReleaseCommandQueue(queue);
  }
};

GemmKernels::GemmKernels(std::shared_ptr<const cl::Context> ctx) : ctx_(std::move(ctx)) {}
GemmKernels::~GemmKernels() = default;

GemmKernels::Scratch& GemmKernels::ScratchFor(cl_command_queue queue, size_t parts, size_t counters,
                                              size_t packed) {
  auto it = std::find_if(scratch_.begin(), scratch_.end(),
                         [&](const auto& s) { return s->queue == queue; });
  if (it == scratch_.end()) {
    if (scratch_.size() == kScratchQueues) scratch_.erase(scratch_.begin());
    auto s = std::make_unique<Scratch>();
    cl::CheckCL(clRetainCommandQueue(queue), "clRetainCommandQueue");
    s->queue = queue;
    scratch_.push_back(std::move(s));
  } else {
    std::rotate(it, it + 1, scratch_.end());  // most recently used last
  }
  Scratch& s = *scratch_.back();
  if (s.parts.bytes() < parts) s.parts = cl::Buffer(*ctx_, parts);
  if (s.packed.bytes() < packed) s.packed = cl::Buffer(*ctx_, packed);
  if (s.counters.bytes() < counters) {
    // Zeroed before any kernel counts in (a blocking fill on the context's queue); each tile's
    // last work-group resets its counter for the next product.
    cl::Buffer fresh(*ctx_, counters);
    fresh.Zero(*ctx_);
    s.counters = std::move(fresh);
  }
  return s;
}

size_t GemmKernels::built() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernels_.size();
}

GemmKernels::Choice GemmKernels::Choose(const codegen::GemmProblem& g,
                                        const codegen::Target& target,
                                        const codegen::WarpGemmParams* params,
                                        const codegen::WgmmaTiling* forced, bool in_order) const {
  // NVIDIA's tensor cores (or any device in fp32: the warp-tiled kernel; on Hopper the warpgroup
  // kernel where the problem suits it and the driver builds it, unless warp tiles are asked
  // for), else Intel's matrix engine for fp16.
  Choice c;
  c.in_order = in_order;
  c.dpas = !target.mma_sync && !params && !forced && codegen::DpasApplies(g, target);
  c.warp = params ? *params : codegen::ChooseWarpGemmParams(g, target);
  if (!params && !in_order) c.warp.split_k = 1;
  if (auto why = codegen::CheckGemmSplit(g, c.warp, target))
    Fail(ErrorCode::kInvalidArgument, "{}", *why);
  // tf32 operands the warpgroup kernel cannot read as stored are packed first, where that pays
  // (or a tiling is asked for), on an in-order queue.
  std::optional<codegen::GemmPacking> pack;
  if (!params && !c.dpas && (target.wgmma || target.wgmma_emulated))
    pack = codegen::PackForWgmma(g);
  if (pack && !forced && !codegen::PackingPays(g)) pack.reset();
  // The packs' scratch stays within a quarter of the device's largest allocation.
  uint64_t cap = ctx_->info().max_alloc_bytes / 4;
  if (pack && cap > 0 && static_cast<uint64_t>(pack->elements()) * DTypeSize(g.elem) > cap) {
    if (forced)
      Fail(ErrorCode::kInvalidArgument,
           "wgmma tiling {}: packing this problem's operands takes {} bytes of scratch, over a "
           "quarter of the device's largest allocation ({} bytes)",
           forced->ToString(), pack->elements() * DTypeSize(g.elem), 4 * cap);
    pack.reset();
  }
  if (pack && !in_order) {
    if (forced)
      Fail(ErrorCode::kInvalidArgument,
           "wgmma tiling {}: this problem's operands are packed first, which needs an in-order "
           "queue",
           forced->ToString());
    pack.reset();
  }
  const codegen::GemmProblem& wp = pack ? pack->packed : g;
  // The warpgroup kernel where the problem suits it, unless its tiles would leave more than half
  // the compute units idle and the warp-tiled kernel splits K instead (docs/precision.md).
  c.tiling = forced ? *forced : codegen::ChooseWgmmaTiling(wp, target);
  const codegen::WgmmaTiling& w = c.tiling;
  int64_t wgmma_tiles = codegen::CeilDiv(wp.m, w.bm) * codegen::CeilDiv(wp.n, w.bn) * wp.batch;
  c.wgmma = forced ||
            (!params && wgmma_failure_.empty() && codegen::WgmmaApplies(wp, target) &&
             !(c.warp.split_k > 1 && wgmma_tiles * 2 < static_cast<int64_t>(target.compute_units)));
  if (c.wgmma) c.pack = std::move(pack);
  Launch& launch = c.launch;
  launch.split_tiles = c.dpas || c.wgmma ? 0 : codegen::GemmSplitTiles(g, c.warp);
  c.key = c.dpas    ? codegen::DpasGemmClass(g, target)
          : c.wgmma ? codegen::WgmmaGemmClass(wp, w, target)
                    : codegen::WarpGemmClass(g, target, c.warp);
  if (c.dpas)
    codegen::DpasGemmGeometry(g, target, &launch.global, &launch.local);
  else if (c.wgmma)
    codegen::WgmmaGemmGeometry(wp, w, &launch.global, &launch.local);
  else
    codegen::WarpGemmGeometry(g, c.warp, &launch.global, &launch.local);
  return c;
}

std::string GemmKernels::KernelClass(const codegen::GemmProblem& g, const codegen::Target& target,
                                     const codegen::WarpGemmParams* params,
                                     const codegen::WgmmaTiling* wgmma) const {
  std::lock_guard<std::mutex> lock(mu_);
  Choice c = Choose(g, target, params, wgmma, true);
  if (!c.pack) return c.key;
  return fmt::format("{} packed {}{}", c.key, c.pack->a ? "a" : "", c.pack->b ? "b" : "");
}

GemmKernels::Built& GemmKernels::BuiltFor(const std::string& key,
                                          const std::function<codegen::KernelSpec()>& generate) {
  // The kernel is generated only when its class has none yet: rendering the source per call
  // cost more host time than a small product takes on the device.
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return *it->second;
  codegen::KernelSpec spec = generate();
  auto built = std::make_unique<Built>();
  built->key = key;
  cl::ProgramCache cache = cl::ProgramCache::Default();
  // A failed build leaves no entry.
  built->program =
      std::make_unique<cl::Program>(*ctx_, spec.source, "", cache.enabled() ? &cache : nullptr);
  built->kernel = cl::Kernel(built->program->get(), spec.name);
  return *kernels_.emplace(key, std::move(built)).first->second;
}

GemmKernels::Built& GemmKernels::KernelFor(const codegen::GemmProblem& g,
                                           const codegen::Target& target,
                                           const codegen::WarpGemmParams* params,
                                           const codegen::WgmmaTiling* forced, Choice* c) {
  try {
    return BuiltFor(c->key, [&] {
      return c->dpas    ? codegen::GenerateDpasGemm(g, "texel_gemm", target)
             : c->wgmma ? codegen::GenerateWgmmaGemm(c->pack ? c->pack->packed : g, "texel_gemm",
                                                     target, c->tiling)
                        : codegen::GenerateWarpGemm(g, "texel_gemm", target, c->warp);
    });
  } catch (const Error& e) {
    // A driver that does not build the warpgroup kernel (its sm_90a PTX) leaves the warp-tiled
    // kernel to this context's products; running out of resources is reported as it is.
    if (!c->wgmma || forced || e.code() == ErrorCode::kDevice) throw;
    wgmma_failure_ = e.what();
    *c = Choose(g, target, params, nullptr, c->in_order);
    return KernelFor(g, target, params, nullptr, c);
  }
}

std::string GemmKernels::wgmma_failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return wgmma_failure_;
}

void GemmKernels::EnqueuePacks(const codegen::GemmPacking& pack, const GemmOperands& ops,
                               cl_mem scratch, cl_command_queue queue,
                               const std::vector<cl_event>& wait) {
  bool first = true;
  int64_t at = 0;  // where the pack goes in scratch (elements)
  for (auto [p, mem] : {std::pair{&pack.a, ops.a}, {&pack.b, ops.b}}) {
    if (!*p) continue;
    const codegen::GemmPack& pk = **p;
    Built& built = BuiltFor(codegen::GemmPackClass(pk),
                            [&] { return codegen::GenerateGemmPack(pk, "texel_gemm_pack"); });
    cl::Kernel& k = built.kernel;
    unsigned i = 0;
    auto arg = [&](const auto& v) { k.SetArg(i++, sizeof(v), &v); };
    arg(mem);
    arg(static_cast<cl_long>(pk.offset));
    arg(static_cast<cl_int>(pk.ld));
    arg(static_cast<cl_long>(pk.stride));
    arg(static_cast<cl_int>(pk.rows));
    arg(static_cast<cl_int>(pk.k));
    arg(static_cast<cl_int>(pk.kp));
    arg(scratch);
    arg(static_cast<cl_long>(at));
    at += pk.elements();
    std::vector<size_t> global, local;
    codegen::GemmPackGeometry(pk, &global, &local);
    // The first pack waits for the caller's events; the queue orders the rest after it.
    cl_uint nw = first ? static_cast<cl_uint>(wait.size()) : 0;
    const cl_event* wl = nw ? wait.data() : nullptr;
    cl_int err = cl::Guarded(cl::FaultPoint::kEnqueue, [&] {
      return clEnqueueNDRangeKernel(queue, k.get(), 3, nullptr, global.data(), local.data(), nw, wl,
                                    nullptr);
    });
    if (err != CL_SUCCESS) cl::CheckCL(err, "clEnqueueNDRangeKernel(texel_gemm's operand pack)");
    first = false;
  }
}

void GemmKernels::Enqueue(const codegen::GemmProblem& g, const GemmOperands& ops,
                          cl_command_queue queue, const std::vector<cl_event>& wait,
                          cl_event* event, const codegen::Target& target,
                          const codegen::WarpGemmParams* params,
                          const codegen::WgmmaTiling* wgmma) {
  if (queue == nullptr) queue = ctx_->queue();
  const cl_event* wl = wait.empty() ? nullptr : wait.data();
  cl_uint nw = static_cast<cl_uint>(wait.size());
  if (g.m == 0 || g.n == 0 || g.batch == 0) {
    cl::CheckCL(cl::Guarded(cl::FaultPoint::kEnqueue,
                            [&] { return clEnqueueMarkerWithWaitList(queue, nw, wl, event); }),
                "clEnqueueMarkerWithWaitList");
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  Choice c = Choose(g, target, params, wgmma, true);
  if (c.Orders()) {
    // Split K's slices and packed operands live in scratch kept per queue, which orders the
    // products that share it: not on an out-of-order queue (asked only of products that need it).
    cl_command_queue_properties props = 0;
    cl::CheckCL(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof(props), &props, nullptr),
                "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)");
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
      c = Choose(g, target, params, wgmma, false);
      if (c.Splits()) Fail(ErrorCode::kInvalidArgument, "split K on an out-of-order queue");
    }
  }
  Built& built = KernelFor(g, target, params, wgmma, &c);
  Scratch* s = nullptr;
  if (c.Orders()) {
    size_t splits = c.launch.global[2] / static_cast<size_t>(g.batch);
    size_t parts = c.Splits() ? splits * g.batch * g.m * g.n * sizeof(float) : 0;
    s = &ScratchFor(queue, parts, static_cast<size_t>(c.launch.split_tiles) * sizeof(cl_int),
                    c.pack ? c.pack->elements() * DTypeSize(g.elem) : 0);
  }
  if (c.pack) {
    EnqueuePacks(*c.pack, ops, s->packed.mem(), queue, wait);
    nw = 0, wl = nullptr;  // the product follows the packs on the in-order queue
  }
  const codegen::GemmProblem& run = c.pack ? c.pack->packed : g;
  cl_mem a = c.pack && c.pack->a ? s->packed.mem() : ops.a;
  cl_mem b = c.pack && c.pack->b ? s->packed.mem() : ops.b;
  cl::Kernel& k = built.kernel;
  unsigned i = 0;
  auto arg = [&](const auto& v) { k.SetArg(i++, sizeof(v), &v); };
  arg(static_cast<cl_int>(run.m));
  arg(static_cast<cl_int>(run.n));
  arg(static_cast<cl_int>(run.k));
  arg(ops.alpha);
  // Each operand: buffer, offset, leading dimension, batch stride.
  auto operand = [&](cl_mem m, int64_t offset, int64_t ld, int64_t stride) {
    arg(m);
    arg(static_cast<cl_long>(offset));
    arg(static_cast<cl_int>(ld));
    arg(static_cast<cl_long>(stride));
  };
  operand(a, run.a_offset, run.lda, run.stride_a);
  operand(b, run.b_offset, run.ldb, run.stride_b);
  arg(ops.beta);
  operand(ops.c, run.c_offset, run.ldc, run.stride_c);
  if (c.Splits()) {
    arg(s->parts.mem());
    arg(s->counters.mem());
  }
  const Launch& launch = c.launch;
  cl_int err = cl::Guarded(cl::FaultPoint::kEnqueue, [&] {
    return clEnqueueNDRangeKernel(queue, k.get(), static_cast<cl_uint>(launch.global.size()),
                                  nullptr, launch.global.data(), launch.local.data(), nw, wl,
                                  event);
  });
  // The message is formatted only on failure: this runs for every product.
  if (err != CL_SUCCESS)
    cl::CheckCL(err, fmt::format("clEnqueueNDRangeKernel(texel_gemm {})", built.key));
}

}  // namespace texel::api
