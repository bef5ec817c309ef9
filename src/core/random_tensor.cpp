#include "core/random_tensor.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/threads.h"

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

// UniformTensor's elements [from, to) of t, element i from Mix(base + i * golden).
void FillUniform(HostTensor& t, uint64_t base, int64_t from, int64_t to) {
  auto fill = [&](auto* p, auto value) {
    for (int64_t i = from; i < to; ++i)
      p[i] = value(Mix(base + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ull));
  };
  // 24 bits: [-1, 1).
  auto real = [](uint64_t z) { return static_cast<float>(z >> 40) * 0x1p-23f - 1.0f; };
  switch (t.dtype) {
    case DType::kFloat32: fill(t.data<float>(), real); break;
    case DType::kFloat16:  // 11 bits, every value a half (24 would round 1 - 2^-24 up to 1)
      fill(t.data<uint16_t>(),
           [](uint64_t z) { return FloatToHalf(static_cast<float>(z >> 53) * 0x1p-10f - 1.0f); });
      break;
    case DType::kFloat64: fill(t.data<double>(), real); break;
    case DType::kBool:
      fill(t.data<uint8_t>(), [](uint64_t z) { return static_cast<uint8_t>(z & 1); });
      break;
    default:
      VisitDType(t.dtype, [&](auto e) {
        using E = decltype(e);
        fill(t.data<E>(), [](uint64_t z) { return static_cast<E>(z % 10); });
      });
  }
}

}  // namespace

HostTensor UniformTensor(DType dtype, const Shape& shape, uint64_t seed) {
  HostTensor t(dtype, shape);
  const uint64_t base = Mix(seed);
  // The tuner's inputs at batch 32 are tens of millions of elements per build: chunks of them
  // over the host's cores (each element depends on its index alone, so the split changes
  // nothing).
  constexpr int64_t kChunk = int64_t{1} << 20;
  const int64_t n = t.size(), chunks = (n + kChunk - 1) / kChunk;
  std::atomic<int64_t> next{0};
  RunOnThreads(static_cast<size_t>(std::clamp<int64_t>(
                   chunks, 1, std::max<int64_t>(1, std::thread::hardware_concurrency()))),
               [&](size_t) {
                 for (int64_t c; (c = next++) < chunks;)
                   FillUniform(t, base, c * kChunk, std::min(n, (c + 1) * kChunk));
               });
  return t;
}

}  // namespace texel
