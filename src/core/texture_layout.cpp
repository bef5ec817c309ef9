#include "core/texture_layout.h"

#include "core/error.h"

namespace texel {
namespace {

int64_t Quads(int64_t c) { return (c + 3) / 4; }

void RequireRank4(const Shape& s) {
  TEXEL_CHECK(s.size() == 4, "texture storage needs a 4-D tensor, got [{}]", ShapeStr(s));
}

// Texel index (y * width + x) and lane of element (a0, a1, a2, a3) of the unpacked tensor.
std::pair<int64_t, int> TexelOf(const Shape& s, TextureKind kind, int64_t a0, int64_t a1,
                                int64_t a2, int64_t a3) {
  TextureExtent e = TextureExtentOf(s, kind);
  if (kind == TextureKind::kActivation) {  // (n, c, h, w)
    int64_t y = (a0 * Quads(s[1]) + a1 / 4) * s[2] + a2;
    return {y * e.width + a3, static_cast<int>(a1 % 4)};
  }
  int64_t x = (a1 * s[2] + a2) * s[3] + a3;  // (o, i, kh, kw)
  return {(a0 / 4) * e.width + x, static_cast<int>(a0 % 4)};
}

}  // namespace

std::array<int64_t, 4> PackedDims(const Shape& s, TextureKind kind) {
  RequireRank4(s);
  if (kind == TextureKind::kActivation) return {s[0], Quads(s[1]), s[2], s[3]};
  return {Quads(s[0]), s[1], s[2], s[3]};
}

TextureExtent TextureExtentOf(const Shape& s, TextureKind kind) {
  auto [a, b, c, d] = PackedDims(s, kind);
  if (kind == TextureKind::kActivation) return {d, a * b * c};
  return {b * c * d, a};
}

bool FitsImage(const TextureExtent& e, size_t max_width, size_t max_height) {
  return e.width > 0 && e.height > 0 && static_cast<size_t>(e.width) <= max_width &&
         static_cast<size_t>(e.height) <= max_height;
}

std::vector<float> PackTexels(const HostTensor& t, TextureKind kind) {
  TEXEL_CHECK(t.dtype == DType::kFloat32 || t.dtype == DType::kFloat16,
              "texels are packed from f32 or f16");
  const Shape& s = t.shape;
  TextureExtent e = TextureExtentOf(s, kind);
  std::vector<float> texels(static_cast<size_t>(e.width * e.height * 4), 0.0f);
  std::vector<float> widened;
  if (t.dtype == DType::kFloat16) {
    widened.resize(static_cast<size_t>(t.size()));
    for (size_t i = 0; i < widened.size(); ++i) widened[i] = HalfToFloat(t.data<uint16_t>()[i]);
  }
  const float* src = t.dtype == DType::kFloat16 ? widened.data() : t.data<float>();
  for (int64_t a0 = 0, i = 0; a0 < s[0]; ++a0)
    for (int64_t a1 = 0; a1 < s[1]; ++a1)
      for (int64_t a2 = 0; a2 < s[2]; ++a2)
        for (int64_t a3 = 0; a3 < s[3]; ++a3, ++i) {
          auto [texel, lane] = TexelOf(s, kind, a0, a1, a2, a3);
          texels[static_cast<size_t>(texel * 4 + lane)] = src[i];
        }
  return texels;
}

HostTensor UnpackTexels(const std::vector<float>& texels, const Shape& s, TextureKind kind) {
  TextureExtent e = TextureExtentOf(s, kind);
  TEXEL_CHECK(texels.size() == static_cast<size_t>(e.width * e.height * 4),
              "{} texel floats for a {}x{} image", texels.size(), e.width, e.height);
  HostTensor t(DType::kFloat32, s);
  float* dst = t.data<float>();
  for (int64_t a0 = 0, i = 0; a0 < s[0]; ++a0)
    for (int64_t a1 = 0; a1 < s[1]; ++a1)
      for (int64_t a2 = 0; a2 < s[2]; ++a2)
        for (int64_t a3 = 0; a3 < s[3]; ++a3, ++i) {
          auto [texel, lane] = TexelOf(s, kind, a0, a1, a2, a3);
          dst[i] = texels[static_cast<size_t>(texel * 4 + lane)];
        }
  return t;
}

}  // namespace texel
