// Seeded random tensors for inputs that are not given (benchmarks, the tuner's model check):
// floats standard normal, integers 0-9 (valid indices and lengths for most models' integer
// inputs), booleans either.
#pragma once

#include <random>

#include "core/tensor.h"

namespace texel {

HostTensor RandomTensor(DType dtype, const Shape& shape, std::mt19937_64& rng);

}  // namespace texel
