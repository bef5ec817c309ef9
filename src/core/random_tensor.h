// Seeded random tensors for inputs that are not given (benchmarks, the tuner's model check):
// floats standard normal, integers 0-9 (valid indices and lengths for most models' integer
// inputs), booleans either.
#pragma once

#include <random>

#include "core/tensor.h"

namespace texel {

HostTensor RandomTensor(DType dtype, const Shape& shape, std::mt19937_64& rng);

// Element i a hash of (seed, i) alone: floats uniform in [-1, 1) (f16 on a grid of 2^-10),
// integers 0-9 and booleans either, as
// RandomTensor's (never all zeros: the tuner checks candidates' outputs on them). Cheap enough
// for the tuner's inputs at batch 32 (tens of millions of elements, each build of candidates).
HostTensor UniformTensor(DType dtype, const Shape& shape, uint64_t seed);

}  // namespace texel
