#include "runtime/cl/ptx_sm90a.h"

#include <string_view>

namespace texel::cl {

bool NeedsSm90a(const std::string& source) {
  return source.find(kSm90aMarker) != std::string::npos;
}

std::optional<std::string> ActivateSm90a(std::string ptx) {
  // The target directive: ".target sm_90" followed by the end of the line or by other options
  // (", texmode_independent"), never sm_90a already or another architecture (sm_900).
  static constexpr std::string_view kTarget = ".target sm_90";
  size_t at = ptx.find(kTarget);
  if (at == std::string::npos) return std::nullopt;
  size_t end = at + kTarget.size();
  if (end < ptx.size() && ptx[end] != '\n' && ptx[end] != '\r' && ptx[end] != ',' &&
      ptx[end] != ' ')
    return std::nullopt;
  std::string out;
  out.reserve(ptx.size() + 1);
  out.append(ptx, 0, end).push_back('a');
  const std::string_view marker = kSm90aMarker;
  for (size_t from = end;;) {
    size_t hit = ptx.find(marker, from);
    out.append(ptx, from, hit == std::string::npos ? std::string::npos : hit - from);
    if (hit == std::string::npos) break;
    from = hit + marker.size();
  }
  return out;
}

}  // namespace texel::cl
