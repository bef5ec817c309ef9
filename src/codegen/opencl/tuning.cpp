#include "codegen/opencl/tuning.h"

#include <algorithm>

#include "codegen/opencl/generator.h"

namespace texel::codegen {

const TunePoint& Choose(const Tunable& t, const Target& target) {
  if (target.tuning != nullptr)
    if (std::optional<TunePoint> p = target.tuning->Pick(t)) {
      auto it = std::find(t.candidates.begin(), t.candidates.end(), *p);
      if (it != t.candidates.end()) return *it;
    }
  return t.candidates.front();
}

std::string PointString(const TunePoint& p) {
  std::string s;
  for (const auto& [name, value] : p) {
    if (!s.empty()) s += ',';
    s += name + '=' + std::to_string(value);
  }
  return s;
}

}  // namespace texel::codegen
