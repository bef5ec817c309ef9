// Reading and writing NumPy .npy files (format versions 1.0-3.0, little-endian, C order).
// Thread safety: pure functions.
#pragma once

#include <string>

#include "core/tensor.h"

namespace texel {

// Throws Error(kNotFound) for a missing file, Error(kInvalidArgument) naming the file for a
// malformed header, a Fortran-order or big-endian array, an unsupported dtype, or truncated data.
HostTensor ReadNpy(const std::string& path);
// Throws Error(kIo) naming the file when it cannot be written.
void WriteNpy(const std::string& path, const HostTensor& t);

}  // namespace texel
