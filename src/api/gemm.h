// texel_gemm's engine: one BLAS-style GEMM (codegen::GemmProblem) on cl_mem objects and a queue
// the caller passes, through the warp-tiled GEMM family (codegen/opencl/gemm/warp_gemm.h). Each
// kernel is built once per shape class (transposes, element type, mode, alignment, evenness,
// tiles) and context, through the on-disk program cache, and reused for every problem of its
// class. Thread safety: GemmKernels may be used from several threads (one lock around building,
// argument binding and enqueueing).
#pragma once

#include <CL/cl.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/opencl/gemm/gemm_pack.h"
#include "codegen/opencl/gemm/warp_gemm.h"
#include "codegen/opencl/gemm/wgmma_gemm.h"
#include "runtime/cl/context.h"

namespace texel::api {

struct GemmOperands {
  cl_mem a = nullptr, b = nullptr, c = nullptr;
  float alpha = 1, beta = 0;
  // The caller asked for a column-major product, which the problem states row-major with A and
  // B (and m and n) swapped: messages name the caller's arguments.
  bool column_major = false;
};

// Throws Error(kInvalidArgument) naming the argument for a problem that cannot be run as given
// (a null buffer, sizes or leading dimensions past 2^30, batches past 65535, a leading
// dimension shorter than its row, a buffer too small for the elements the problem reaches,
// batch entries of C that overlap, an element type other than f32 and f16) and
// Error(kUnsupported) for a compute mode the device has no matrix engine for.
void CheckGemm(const codegen::GemmProblem& g, const GemmOperands& ops, const codegen::Target& t);

class GemmKernels {
 public:
  explicit GemmKernels(std::shared_ptr<const cl::Context> ctx);
  ~GemmKernels();
  // Enqueues g on queue (the context's own when null) after `wait`; *event, when given, is set
  // to an event that completes with it (the caller releases it). A problem with no output
  // (m, n or batch 0) enqueues a marker. A problem whose tiles leave compute units idle splits K
  // (on an in-order queue, where the device's work-groups can hand results over): its slices go
  // to scratch kept per queue (the queue retained until the scratch is dropped: kScratchQueues
  // queues at most, the least recently used dropped first). A large tf32 problem whose operands
  // the warpgroup kernel cannot read as stored has them packed into that scratch first, by a
  // kernel of its own on the same in-order queue (codegen/opencl/gemm/gemm_pack.h; an explicit
  // wgmma tiling packs them too, and is refused on an out-of-order queue where it would need
  // to). params: explicit warp-tiled kernel
  // tiles, or wgmma: an explicit warpgroup tiling (benchmarks, tests), else the heuristic's choice.
  // target: the device facts to generate for (tests pass one without mma_sync to run the
  // matrix-engine modes' emulation). Call CheckGemm first.
  void Enqueue(const codegen::GemmProblem& g, const GemmOperands& ops, cl_command_queue queue,
               const std::vector<cl_event>& wait, cl_event* event, const codegen::Target& target,
               const codegen::WarpGemmParams* params = nullptr,
               const codegen::WgmmaTiling* wgmma = nullptr);
  // The class of the kernel Enqueue would run g with on an in-order queue ("warp 128x64x16 /
  // 64x32 s3 split 8 ...", "wgmma 128x128 s3 ..."), for benchmarks' labels.
  std::string KernelClass(const codegen::GemmProblem& g, const codegen::Target& target,
                          const codegen::WarpGemmParams* params = nullptr,
                          const codegen::WgmmaTiling* wgmma = nullptr) const;
  size_t built() const;  // kernels built so far
  static constexpr size_t kScratchQueues = 8;
  // Why the driver did not build the warpgroup kernel (codegen/opencl/gemm/wgmma_gemm.h), whose
  // problems then take the warp-tiled kernel; empty while it builds (or was never needed).
  std::string wgmma_failure() const;

 private:
  struct Built;
  struct Launch {
    std::vector<size_t> global, local;
    int64_t split_tiles = 0;  // split K: the tiles whose slices the kernel adds up (else 0)
  };
  // Which kernel runs g, its class and launch (holds mu_); K is split only with split_ok (or as
  // params say).
  // in_order: whether the queue orders kernels (split K and packing need it).
  struct Choice {
    bool in_order = true;
    bool dpas = false, wgmma = false;
    codegen::WarpGemmParams warp;
    codegen::WgmmaTiling tiling;
    std::optional<codegen::GemmPacking> pack;  // operands packed for the warpgroup kernel
    std::string key;
    Launch launch;
    bool Splits() const { return launch.split_tiles > 0; }
    bool Orders() const { return Splits() || pack; }  // needs an in-order queue
  };
  Choice Choose(const codegen::GemmProblem& g, const codegen::Target& target,
                const codegen::WarpGemmParams* params, const codegen::WgmmaTiling* wgmma,
                bool in_order) const;
  // The kernel for g as chosen (built at its class's first use; holds mu_); where the driver
  // does not build the warpgroup kernel, the warp-tiled one and *c updated to it.
  Built& KernelFor(const codegen::GemmProblem& g, const codegen::Target& target,
                   const codegen::WarpGemmParams* params, const codegen::WgmmaTiling* wgmma,
                   Choice* c);
  // A kernel by class, generated and built at its first use (holds mu_).
  Built& BuiltFor(const std::string& key, const std::function<codegen::KernelSpec()>& generate);
  // Enqueues the packs of c.pack into scratch (holds mu_); the first waits for `wait`.
  void EnqueuePacks(const codegen::GemmPacking& pack, const GemmOperands& ops, cl_mem scratch,
                    cl_command_queue queue, const std::vector<cl_event>& wait);

  struct Scratch;
  // The scratch on queue: at least `parts` bytes of split products' slices, `counters` arrival
  // counters (zeroed) and `packed` bytes of packed operands; holds mu_.
  Scratch& ScratchFor(cl_command_queue queue, size_t parts, size_t counters, size_t packed);

  std::shared_ptr<const cl::Context> ctx_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Built>> kernels_;  // by kernel class
  std::string wgmma_failure_;
  std::vector<std::unique_ptr<Scratch>> scratch_;  // most recently used last
};

}  // namespace texel::api
