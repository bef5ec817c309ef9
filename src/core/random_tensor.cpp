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

}  // namespace texel
