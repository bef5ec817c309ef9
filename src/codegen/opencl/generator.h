// The native code generator: one OpenCL C kernel per core-IR node, from the templates in
// kernels/. One generator per op family (generate_*.cpp). Throws Error(kUnsupported) for an
// op/dtype combination it has no kernel for. Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/opencl/kernel_spec.h"
#include "codegen/opencl/tuning.h"
#include "ir/graph.h"

namespace texel::codegen {

// The device facts generators use, filled by the backend from the device it lowers for.
struct Target {
  bool fp64 = false;  // cl_khr_fp64: float64 tensors in elementwise, movement and reductions
  // Facts that size tiled kernels (matmul.h): a GPU wants enough work-groups for every compute
  // unit and stages tiles in local memory; a CPU runs one work-group per core at a time.
  bool gpu = false;  // CL_DEVICE_TYPE_GPU
  uint32_t compute_units = 1;
  uint64_t local_mem_bytes = 32 * 1024;
  size_t max_work_group_size = 256;
  uint32_t warp_size = 0;  // NVIDIA's warp (cl_nv_device_attribute_query); 0 when unknown
  // Inline PTX (`__asm volatile`) builds in the device's OpenCL C: NVIDIA's driver, known by
  // cl_nv_device_attribute_query. Fences, cache-bypassing loads and warp barriers use it.
  bool ptx = false;
  bool fp16 = false;  // cl_khr_fp16: f16 images are read and written with read_imageh
  // NVIDIA tensor cores through inline PTX mma.sync (compute capability >= 8.0, from
  // cl_nv_device_attribute_query): m16n8k8 on tf32, m16n8k16 on f16, fp32 accumulation.
  bool mma_sync = false;
  // Hopper's warpgroup MMA (wgmma, PTX target sm_90a: compute capability exactly 9.0), hidden
  // from the driver's sm_90 compiler and made live from the PTX (runtime/cl/ptx_sm90a.h).
  bool wgmma = false;
  // Intel's matrix engine (cl_intel_subgroup_matrix_multiply_accumulate): the subgroup size its
  // functions need, the device's smallest (8 or 16); 0 without it. texel_gemm's fp16 mode.
  uint32_t dpas_sub_group = 0;
  // Tests: reduced-precision products take the matrix-engine kernels with their emulation (FMAs
  // rounding as the engine does; the Intel function computed from its definition:
  // TEXEL_TARGET=...:mma), so that a CPU checks what the GPU will run.
  bool mma_emulated = false;
  // Tests: the warpgroup kernel runs wherever it would on a device with the instruction (wgmma),
  // with the instruction emulated from its local-memory layout (TEXEL_TARGET=...:wgmma, which
  // implies :mma).
  bool wgmma_emulated = false;
  // Work-groups may hand results to each other through a global fence and an atomic counter
  // (DefineArrival): known to hold on NVIDIA (a PTX fence) and on CPUs; elsewhere a second
  // kernel combines the parts.
  bool group_handoff = false;
  // Tuned parameters (tuning.h): tunable families take their point from here; nullptr: the
  // heuristic's.
  const TuningSource* tuning = nullptr;
};

// The kernels of one node or group, run in order (most are one kernel; GEMMs split along K are
// two). Each kernel's name starts with kernel_name.
std::vector<KernelSpec> GenerateKernel(const ir::Node& node, const std::string& kernel_name,
                                       const Target& target);
// A fusion group (passes/fuse.cpp): an anchor or elementwise node followed by the elementwise
// chain that consumes its result, as one kernel.
std::vector<KernelSpec> GenerateGroup(const std::vector<const ir::Node*>& nodes,
                                      const std::string& kernel_name, const Target& target);
// Diagnostics: how many groups this process has generated kernels for (GenerateGroup calls);
// tests check that support and cost queries generate none and a compile each group once.
uint64_t GeneratedGroups();

// Family generators, dispatched by op class. A movement node takes an elementwise epilogue
// (f32 or f16; fuse gives one to a Gather or Concat only). Pointwise kernels on GPUs compute
// several elements a work-item where the output is large (PointwiseItems).
KernelSpec GeneratePointwise(const ir::Node& node, const std::string& kernel_name,
                             const Target& target,
                             const std::vector<const ir::Node*>& epilogue = {});
// Elements per work-item of a pointwise kernel with `count` outputs on target: on GPUs, 4 for a
// million or more (their loads all issued before the first store: one 4-byte load a work-item
// in flight held a lone Relu over 58 MB at 811 GB/s on an H200), else 1.
int PointwiseItems(int64_t count, const Target& target);
// Places `float NAME(__global const TABLE* in0, __global const INDEX* in1, long i)` before src's
// template: element i (flat) of Gather node n's result as float, in0 its table, in1 its indices
// (and defines the LOAD_X it uses). For kernels that gather as they read (a LayerNorm's
// prologue). Returns the element types behind in0 and in1.
struct GatherElement {
  std::string table_type, index_type;
};
GatherElement DefineGatherElement(KernelSource& src, const ir::Node& n, const std::string& name);
// A chain of elementwise nodes (fusion) as one pointwise kernel.
KernelSpec GenerateElementwise(const std::vector<const ir::Node*>& ops,
                               const std::string& kernel_name, const Target& target);
// Anchors take the elementwise chain fused after them (passes/fuse.cpp), applied to each result.
using Chain = std::vector<const ir::Node*>;
// Conv node's tunable family on target: window_rows, conv_blocked, or its implicit GEMM's
// warp_gemm (on the matrix engine) or matmul.
std::optional<Tunable> ConvTunable(const ir::Node& node, const Target& target);
std::vector<KernelSpec> GenerateConv(const ir::Node& node, const std::string& kernel_name,
                                     const Target& target, const Chain& epilogue = {});
// Whether Conv node n (NCHW) may become channels-last (passes/channels_last.cpp): 2-D, one group,
// constant filters, one storage type, channels in whole 16-byte chunks, and a product the
// matrix-engine kernel takes on target (which alone computes channels-last convolutions).
bool ConvTakesChannelsLast(const ir::Node& n, const Target& target);
// A Conv node's declared cost (support.h's KernelTraits): its flops, and whether its kernel
// gathers the image (an implicit GEMM that cannot read x as its B).
struct KernelTraits;
KernelTraits ConvTraits(const ir::Node& node, const Target& target);
// Whether Conv node n could read its image x as f32 and convert it to f16 as it gathers it: a
// convolution of one group on f16 filters and output whose image is gathered (not a plain 1x1).
bool ConvCanConvertImage(const ir::Node& n);
// Whether Conv node n does (attribute convert_input = 1, set by passes/fuse.cpp where a graph
// input's Cast to f16 runs in the convolution's gather).
bool ConvReadsF32Image(const ir::Node& n);
// A convolution's storage type: RequireOneFloatType, or f16 where ConvReadsF32Image (then x
// must be f32 and ConvCanConvertImage hold: kUnsupported otherwise).
DType RequireConvTypes(const ir::Node& n);
// A Conv node's arithmetic: two flops per output and weight it meets (OIDHW filters).
double ConvFlops(const ir::Node& node);
KernelSpec GenerateConvTranspose(const ir::Node& node, const std::string& kernel_name,
                                 const Chain& epilogue = {});
// Whether a depthwise Conv node takes the depthwise family (tuning.h): on a GPU, into a buffer.
bool TakesDepthwiseFamily(const ir::Node& node, const Target& target);
// The tunable family "depthwise" (tuning.h) of a depthwise Conv node on a GPU: `window` 1, the
// window kernel (kernels/depthwise.cl: `ox` outputs per work-item, `lx` work-items along the row),
// or 0 with the points of `gemm`, its implicit GEMM's matmul family; nullopt elsewhere.
std::optional<Tunable> DepthwiseTunable(const ir::Node& node, const Target& target,
                                        const Tunable& gemm);
// The window kernel's parameters: outputs per work-item (ox) and work-items along the row (lx).
struct DepthwiseWindow {
  int ox = 1, lx = 8;
};
DepthwiseWindow DepthwiseWindowOf(const TunePoint& point);  // a "depthwise" point with window 1
DepthwiseWindow DepthwiseHeuristic(const ir::Node& node);   // the family's first point
KernelSpec GenerateDepthwise(const ir::Node& node, const std::string& kernel_name,
                             const DepthwiseWindow& params, const Chain& epilogue = {});
KernelSpec GeneratePool(const ir::Node& node, const std::string& kernel_name, const Target& target,
                        const Chain& epilogue = {});
std::vector<KernelSpec> GenerateMatMul(const ir::Node& node, const std::string& kernel_name,
                                       const Target& target, const Chain& epilogue = {});
// The tunable family "rows" (tuning.h) of a reduction or softmax node: `lw`, the work-items that
// share one row (1, or a power of two with a tree sum in local memory); nullopt where a row
// cannot be shared (ArgMax / ArgMin, a softmax along an axis that is not innermost).
std::optional<Tunable> RowsTunable(const ir::Node& node, const Target& target);
KernelSpec GenerateReduce(const ir::Node& node, const std::string& kernel_name,
                          const Target& target, const Chain& epilogue = {});
KernelSpec GenerateSoftmax(const ir::Node& node, const std::string& kernel_name,
                           const Target& target);
// A LayerNorm whose input is a product's result: `slices` partial products of its shape in
// scratch 0 (split-K, or one), summed, with the product's epilogue `chain` (bias, residual)
// applied, as the LayerNorm reads them; the product's result never reaches memory.
struct NormPrologue {
  const ir::Value* product = nullptr;  // the MatMul's output
  // Or a Gather, whose elements the LayerNorm gathers itself (an embedding lookup): then chain
  // is the Gather's epilogue (the position term), and there are no slices.
  const ir::Node* gather = nullptr;
  // Or a value of the LayerNorm's input shape read as stored (ElementwiseSeed), chain the
  // elementwise group that computes the input from it (a position embedding's Add).
  const ir::Value* seed = nullptr;
  Chain chain;
  int64_t slices = 1;
  // The LayerNorm's input (the chain's result), also written out when others read it.
  const ir::Value* write_input = nullptr;
};
// The input of elementwise node n that a LayerNorm prologue reads as stored and applies n's
// group to: the first of n's shape and type, or null.
const ir::Value* ElementwiseSeed(const ir::Node& n);
KernelSpec GenerateLayerNorm(const ir::Node& node, const std::string& kernel_name,
                             const Target& target, const Chain& epilogue = {},
                             const NormPrologue* prologue = nullptr);
// Attention (generate_attention.cpp): bq query rows per work-group (one per work-item; 32 or 64
// with `tiled`: kernels/attention_tiled.cl; 16 per warp with `mma`: attention_mma.cl), bk keys
// per local-memory tile, vw lanes per vector load, the keys split `splits` ways (then a merge
// kernel follows, or with `tiled` the last work-group merges where the device allows).
struct AttentionParams {
  int bq = 16, bk = 32, vw = 1, splits = 1;
  bool tiled = false;
  int rm = 4;  // tiled: query rows per work-item (4 or 8); bq (32 or 64) rows per work-group
  bool fast_exp = false;  // native_exp for the softmax's exponentials
  // Tiled: the rows' exchanges synchronise one warp (PTX bar.warp.sync, 32-lane NVIDIA warps)
  // instead of the work-group.
  bool warp_sync = false;
  // Tiled: K and V tiles copied to local memory asynchronously (DefineAsyncCopy), the next K
  // tile during this one's step; needs K and V rows contiguous and 16-byte aligned.
  bool async_copy = false;
  // f16 storage on NVIDIA's matrix engine (kernels/attention_mma.cl): bq / 16 warps of 16 rows,
  // key tiles of bk (a multiple of 16), split over the keys `splits` ways (merged by a second
  // kernel).
  bool mma = false;
};
AttentionParams ChooseAttentionParams(int64_t sq, int64_t sk, int64_t batch, int64_t d, int64_t dv,
                                      DType storage, bool causal, const Target& target);
// The tunable family "attention" (tuning.h): the heuristic's kernel for the node with its rows
// per work-group (bq), rows per work-item (rm, the tiled kernel) and key splits varied.
Tunable AttentionTunable(const ir::Node& node, const Target& target);
std::vector<KernelSpec> GenerateAttention(const ir::Node& node, const std::string& kernel_name,
                                          const Target& target);
// The same with explicit parameters (null: the heuristic's), for benchmarks and tuning.
std::vector<KernelSpec> GenerateAttentionWith(const ir::Node& node, const std::string& kernel_name,
                                              const Target& target, const AttentionParams* params);
// Texture storage (generate_texture.cpp): the kernel of a group whose result is an image (a
// Conv, MaxPool, AveragePool, spatial reduction or elementwise anchor and its chain), and a
// ConvertStorage node's.
std::vector<KernelSpec> GenerateTextureGroup(const std::vector<const ir::Node*>& nodes,
                                             const std::string& kernel_name, const Target& target);
std::vector<KernelSpec> GenerateStorageConversion(const ir::Node& node,
                                                  const std::string& kernel_name,
                                                  const Target& target);
KernelSpec GenerateNonMaxSuppression(const ir::Node& node, const std::string& kernel_name);

// The pointwise bodies of movement nodes that passed CheckMovement: Resize (generate_resize.cpp).
std::string ResizeBody(const ir::Node& node);
// Keys' cubic convolution weight of distance t >= 0 (a variable) with coefficient a.
std::string CubicWeight(const std::string& t, const std::string& a);
// The pointwise bodies of GridSample (generate_grid_sample.cpp) and RoiAlign
// (generate_roi_align.cpp).
std::string GridSampleBody(const ir::Node& node);
std::string RoiAlignBody(const ir::Node& node);
// The pointwise body of a ScatterElements or ScatterND node (generate_scatter.cpp).
std::string ScatterBody(const ir::Node& node);

// Support checks (support.h's CheckNode runs a node's): each throws the Error(kUnsupported) its
// generator would, from the node's types and attributes alone; the generators run them first.
void CheckFloat64(const std::vector<const ir::Node*>& nodes, const Target& target);
void CheckWindowRank(const ir::Node& node);  // Conv, ConvTranspose and pools: rank 3 to 5
void CheckPool(const ir::Node& node);
void CheckReduce(const ir::Node& node);
void CheckMovement(const ir::Node& node);  // and the checks below for its op
void CheckResize(const ir::Node& node);
void CheckGridSample(const ir::Node& node);
void CheckRoiAlign(const ir::Node& node);
void CheckScatter(const ir::Node& node);
void CheckNonMaxSuppression(const ir::Node& node);

// Helpers shared by generators.
// "int t = i; const int c1 = t % 5; ...": coordinates of flat index i; long where `wide`.
std::string CoordsCode(const Shape& shape, bool wide);
// Whether any of `values` has 2^31 elements or more (offsets into it need 64 bits).
bool WideIndex(const std::vector<const ir::Value*>& values);
// sum_d c_d * strides[d] over non-zero strides ("0" when none).
std::string OffsetExpr(const std::vector<int64_t>& strides);
size_t RoundUp(size_t x, size_t m);
// a / b rounded up (a >= 0, b > 0) and rounded down (any a, b > 0).
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
// The float type (f16, f32 or f64) shared by all inputs and outputs of a float op; anything else
// is unsupported on the device.
DType RequireOneFloatType(const ir::Node& node);
// Element storage for a template: T (compute type), T_STORE (element type behind __global
// pointers), LOAD(p, i) and STORE(p, i, v). f16 tensors hold half bits, computed in float via
// vload_half / vstore_half_rte, so they need no cl_khr_fp16.
void DefineStorage(KernelSource& src, DType t);
// The expression of an n-wide f16 load at p + i converted to float (n 2 or 4; p + i aligned to
// 2n bytes): vload_halfn, or where the device has inline PTX (NVIDIA's OpenCL, which compiles
// vload_halfn into n 2-byte loads: docs/precision.md) one vector load of the bits converted by
// cvt.f32.f16, whose helpers it places before src's template.
std::string HalfVectorLoad(KernelSource& src, const Target& t, int n);
// Work-groups that each finish part of a result and let the last of them combine the parts, in
// one kernel instead of a second pass: ARRIVE_LAST(counter, parties, last) (every work-item of
// the group; `last`, a __local int declared at kernel scope, becomes 1 in the group that arrives
// last, which resets *counter to 0 for the next run) publishes the group's global stores to the
// others and counts it in; the last group may then read the others' parts through volatile
// pointers. counter points into a zeroed scratch buffer (KernelSpec::zeroed_scratch).
void DefineArrival(KernelSource& src, const Target& t);
// CP_ASYNC16(dst, src, ok): 16 bytes from global src to local dst (zeros where !ok), without
// registers where the device has asynchronous copies (PTX cp.async), else a plain copy;
// CP_ASYNC_COMMIT() closes a group of them, CP_ASYNC_WAIT(n) waits until at most n groups are
// pending. dst and src 16-byte aligned.
void DefineAsyncCopy(KernelSource& src, const Target& t);
// NVIDIA's matrix engine in inline PTX (defined only where the target has mma.sync; kernels use
// them under MMA_PTX): MMA_TF32(d, a0, a1, a2, a3, b0, b1) (m16n8k8, tf32) and MMA_F16(...)
// (m16n8k16, f16), d (4 floats) += A fragment (4 words) x B fragment (2 words), fp32
// accumulation; LDMATRIX_X4(trans, d, p): four 8 x 8 blocks of 16-bit elements from local
// memory into d[0..3] (trans "" or ".trans"), lane l naming row l % 8 of block l / 8 at p.
void DefineMatrixEngine(KernelSource& src, const Target& t);

}  // namespace texel::codegen
