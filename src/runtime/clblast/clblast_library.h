// CLBlast, loaded at run time with dlopen, so that texel builds and runs without it: the
// `clblast` backend supports nothing when the library is missing, and texel says so once.
// Only the C API declarations (clblast_c.h) are used at build time; nothing links CLBlast.
// TEXEL_CLBLAST=off pretends it is missing (to test the fallback); TEXEL_CLBLAST_LIBRARY names
// another file to load. Thread safety: loaded once, then read-only.
#pragma once

#include <clblast_c.h>

#include <string>

namespace texel::runtime {

struct ClblastApi {
  decltype(&CLBlastSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&CLBlastSconvgemm) sconvgemm = nullptr;
};

// The loaded API, or nullptr with *why saying what is missing.
const ClblastApi* LoadClblast(std::string* why = nullptr);

// Registers CLBlast's routines as library calls (runtime/library_call.h): "clblast.sgemm",
// "clblast.sconvgemm". They fail with Error(kUnsupported) when CLBlast cannot be loaded.
void RegisterClblastCalls();

}  // namespace texel::runtime
