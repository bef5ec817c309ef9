// What every libFuzzer harness of texel's loaders shares (tests/fuzz/fuzz_*.cpp). A harness feeds
// its bytes to one loader; a texel::Error is the expected outcome of bad input. Anything else is
// a finding, and the harness aborts so that libFuzzer keeps the input: a crash or a sanitizer
// report, an exception that is not texel's (std::bad_alloc, std::out_of_range, ...), and with
// TEXEL_FUZZ_INTERNAL=1 an Error of code kInternal (a broken invariant that validation let
// through; off by default, so that the campaigns report crashes first). TEXEL_FUZZ_VERBOSE=1
// prints each input's error (to see what a corpus reaches).
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

#include "core/error.h"

namespace texel::fuzz {

template <class F>
void Contained(F&& f) {
  auto flag = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && std::string(v) == "1";
  };
  static const bool internal_is_finding = flag("TEXEL_FUZZ_INTERNAL"),
                    verbose = flag("TEXEL_FUZZ_VERBOSE");
  try {
    f();
    if (verbose) std::fprintf(stderr, "ok\n");
  } catch (const Error& e) {
    if (verbose) std::fprintf(stderr, "error: %s\n", e.what());
    if (e.code() == ErrorCode::kInternal && internal_is_finding) {
      std::fprintf(stderr, "finding: internal error: %s\n", e.what());
      std::abort();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "finding: %s escaped: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

// A file of this process holding `bytes` (for loaders that read paths): rewritten per input.
inline const std::string& ScratchFile(const char* data, size_t size, const char* suffix) {
  static const std::string path =
      fmt::format("{}/texel_fuzz_{}{}", std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp",
                  getpid(), suffix);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(data, static_cast<long>(size));
  return path;
}

}  // namespace texel::fuzz
