// Where a tensor's elements live in a 2D RGBA image (texture storage), shared by codegen (the
// coordinates its kernels compute) and the runtime (image sizes, host packing).
// A 4-D tensor is first packed with its channels in groups of 4, one group per texel (RGBA),
// the last group padded with zeros:
//   activation [N, C, H, W]  -> NCHW4c [N, ceil(C/4), H, W, 4]
//   weight     [O, I, H, W]  -> OIHW4o [ceil(O/4), I, H, W, 4]
// and the packed [A, B, C, D, 4] is flattened to an image by one of two conventions:
//   activation: height A*B*C, width D      (texel (x, y) = (w, (n*C4 + c4)*H + h))
//   weight:     height A,     width B*C*D  (texel (x, y) = ((i*KH + kh)*KW + kw, o4))
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/shape.h"
#include "core/tensor.h"

namespace texel {

enum class TextureKind { kActivation, kWeight };

struct TextureExtent {
  int64_t width = 0, height = 0;
  bool operator==(const TextureExtent&) const = default;
};

// [A, B, C, D] of the packed tensor (the trailing 4 implied) for a 4-D shape.
std::array<int64_t, 4> PackedDims(const Shape& shape, TextureKind kind);

// The image a 4-D tensor of `shape` needs under `kind`'s convention.
TextureExtent TextureExtentOf(const Shape& shape, TextureKind kind);

// Whether it fits the device's largest 2D image.
bool FitsImage(const TextureExtent& e, size_t max_width, size_t max_height);

// Host packing of a float32 tensor into the image's texels (height x width x 4 floats, padded
// channels zero) and back; f16 images are packed from these by the runtime.
std::vector<float> PackTexels(const HostTensor& t, TextureKind kind);
HostTensor UnpackTexels(const std::vector<float>& texels, const Shape& shape, TextureKind kind);

}  // namespace texel
