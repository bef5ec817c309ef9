#include "core/random_tensor.h"

namespace texel {

HostTensor RandomTensor(DType dtype, const Shape& shape, std::mt19937_64& rng) {
  HostTensor t(dtype, shape);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < t.size(); ++i) {
    if (dtype == DType::kFloat32)
      t.data<float>()[i] = normal(rng);
    else if (dtype == DType::kFloat16)
      t.data<uint16_t>()[i] = FloatToHalf(normal(rng));
    else if (dtype == DType::kBool)
      t.data<uint8_t>()[i] = small(rng) & 1;
    else
      VisitDType(dtype,
                 [&](auto z) { t.data<decltype(z)>()[i] = static_cast<decltype(z)>(small(rng)); });
  }
  return t;
}

namespace {

// splitmix64's finaliser: consecutive counters give independent-looking 64-bit values.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

HostTensor UniformTensor(DType dtype, const Shape& shape, uint64_t seed) {
  HostTensor t(dtype, shape);
  uint64_t base = Mix(seed);
  for (int64_t i = 0; i < t.size(); ++i) {
    uint64_t z = Mix(base + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull);
    float v = static_cast<float>(z >> 40) * 0x1p-23f - 1.0f;  // 24 bits: [-1, 1)
    if (dtype == DType::kFloat32)
      t.data<float>()[i] = v;
    else if (dtype == DType::kFloat16)
      t.data<uint16_t>()[i] = FloatToHalf(v);
    else if (dtype == DType::kFloat64)
      t.data<double>()[i] = v;
    else if (dtype == DType::kBool)
      t.data<uint8_t>()[i] = static_cast<uint8_t>(z & 1);
    else
      VisitDType(dtype,
                 [&](auto e) { t.data<decltype(e)>()[i] = static_cast<decltype(e)>(z % 10); });
  }
  return t;
}

}  // namespace texel
