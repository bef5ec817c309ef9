#include "core/error.h"

namespace texel {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kInvalidModel: return "invalid model";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNotConstant: return "not a compile-time constant";
    case ErrorCode::kDevice: return "device error";
    case ErrorCode::kBuild: return "kernel build failed";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

void Error::Render() {
  what_.clear();
  for (const auto& c : context_) what_ += c + ": ";
  what_ += message_;
}

}  // namespace texel
