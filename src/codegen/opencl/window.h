// The geometry of a sliding-window op (Conv, ConvTranspose, pooling) over exactly 3 spatial
// dims: 1-D and 2-D nodes get leading neutral dims of size 1 (no stride, pad or dilation), so
// one template serves all three. Shared by generate_window.cpp and generate_conv.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "codegen/opencl/kernel_spec.h"
#include "core/shape.h"
#include "ir/graph.h"

namespace texel::codegen {

struct Window3 {
  int64_t in[3], out[3], k[3], s[3], pb[3], pe[3], d[3];  // depth, height, width
};

// Whether n is a depthwise convolution: one filter per channel (group == input channels ==
// output channels, more than one).
bool IsDepthwiseConv(const ir::Node& n);

// The node's window; `kernel` holds its 1 to 3 kernel extents.
Window3 ToWindow3(const ir::Node& n, const Shape& kernel);

// Finishes a window kernel whose node is x, w[, b] -> y: defines BIAS_PARAM and BIAS(c) (the
// optional per-channel bias, 0 without one), binds the node's inputs and output in that order,
// applies the fused epilogue and renders the source. Sizes and flops are the caller's.
KernelSpec FinishConvKernel(const ir::Node& n, KernelSource& src, const std::string& kernel_name,
                            const std::vector<const ir::Node*>& epilogue);

// The template parameters every window kernel shares: ID, IH, IW (input extents), OD, OH, OW,
// KD, KH, KW, SD, SH, SW (strides), PD, PH, PW (begin pads), DD, DH, DW (dilations).
std::vector<std::pair<std::string, std::string>> WindowDefines(const Window3& w);

// The CPU convolutions' prefetch of the input rows a later input channel will read: defines
// PREFETCH_AHEAD (channels ahead) and PREFETCH_ROW(p, n) (a statement fetching the n floats from
// p into the caches: one prefetch per 64 bytes; clang's __builtin_prefetch, which PoCL's LLVM
// emits as prefetcht0, where a clang compiles for a native target, else OpenCL's prefetch(),
// which measured no faster on PoCL: SPIR targets such as Oclgrind's have no llvm.prefetch). A
// work-item's loads along a row are a few cache lines per channel plane, too short for the
// hardware's stream prefetchers, and the out-of-order window covers only a few planes: a 1x1
// convolution reading an input just written by the kernel before it ran 1.8x faster so (PoCL,
// 96 -> 24 on 56 x 56, docs/tuning.md).
void DefineRowPrefetch(KernelSource& src, const std::string& kernel_name);

// Filters [COUT, ICG, k...] laid out as [G][OCB][ICG][k...][VOC] (OCB = ceil(OCG / VOC)): the
// VOC output channels of a block next to each other for every input channel and tap, zero
// beyond each group's channels. f32.
ConstTensorPtr PackFiltersByOutput(const HostTensor& w, int64_t groups, int64_t voc);

}  // namespace texel::codegen
