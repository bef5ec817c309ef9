// What the long-running test tools (tests/soak, tests/fault) share: reading their arguments,
// resident memory, and random inputs for a model's tensors.
#pragma once

#include <texel/texel.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace texel::test {

// Walks argv; on a problem prints "TOOL: why" and the usage line, and exits with status 2.
class ArgReader {
 public:
  ArgReader(int argc, char** argv, std::string tool, std::string usage)
      : argc_(argc), argv_(argv), tool_(std::move(tool)), usage_(std::move(usage)) {}
  bool Next() { return ++i_ < argc_ && (arg_ = argv_[i_], true); }
  const std::string& arg() const { return arg_; }
  std::string Value() {
    if (i_ + 1 >= argc_) Fail(arg_ + " needs a value");
    return argv_[++i_];
  }
  double Number(double lo) {
    std::string v = Value();
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x >= lo)) {
      char bound[32];
      std::snprintf(bound, sizeof bound, "%g", lo);
      Fail(arg_ + " '" + v + "': want a number >= " + bound);
    }
    return x;
  }
  // An argument no option took: the one MODEL, or an unknown option.
  void Model(std::string& model) {
    if (!arg_.empty() && arg_[0] == '-') Fail("unknown option " + arg_);
    if (!model.empty()) Fail("more than one model");
    model = arg_;
  }
  [[noreturn]] void Fail(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\nusage: %s\n", tool_.c_str(), why.c_str(), usage_.c_str());
    std::exit(2);
  }

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string arg_, tool_, usage_;
};

inline double ResidentMb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// Random bytes for one input: floats in [-1, 1] (f32 and f16), zeros for other types (indices
// and masks stay in range).
inline std::vector<uint8_t> RandomInput(const texel_tensor_info_t& info, uint64_t seed) {
  std::vector<uint8_t> bytes(info.bytes, 0);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  if (info.dtype == TEXEL_DTYPE_F32) {
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      float x = u(rng);
      std::memcpy(&bytes[i], &x, 4);
    }
  } else if (info.dtype == TEXEL_DTYPE_F16) {
    for (size_t i = 0; i + 2 <= bytes.size(); i += 2) {
      // A half in [-1, 1): sign, exponent 1..14, random mantissa.
      uint16_t h =
          static_cast<uint16_t>((rng() & 0x8000) | ((1 + rng() % 14) << 10) | (rng() & 0x3ff));
      std::memcpy(&bytes[i], &h, 2);
    }
  }
  return bytes;
}

}  // namespace texel::test
