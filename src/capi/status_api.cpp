// texel_status_name, texel_last_error, and the error bookkeeping behind them.
#include "capi/handles.h"

namespace texel::capi {
namespace {
thread_local std::string last_error;
thread_local const char* fixed_error = nullptr;  // when last_error could not be set
}  // namespace

texel_status_t Failed(texel_status_t status, const char* function, const char* message) noexcept {
  try {
    last_error = std::string(function) + ": " + message;
    fixed_error = nullptr;
  } catch (...) {
    fixed_error = "texel: out of host memory while reporting an error";
  }
  return status;
}

void ClearLastError() noexcept {
  last_error.clear();
  fixed_error = nullptr;
}

const char* LastError() noexcept { return fixed_error ? fixed_error : last_error.c_str(); }

texel_status_t StatusOf(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument: return TEXEL_ERROR_INVALID_ARGUMENT;
    case ErrorCode::kNotFound: return TEXEL_ERROR_NOT_FOUND;
    case ErrorCode::kInvalidModel:
    case ErrorCode::kNotConstant: return TEXEL_ERROR_INVALID_MODEL;
    case ErrorCode::kUnsupported: return TEXEL_ERROR_UNSUPPORTED;
    case ErrorCode::kDevice: return TEXEL_ERROR_DEVICE;
    case ErrorCode::kBuild: return TEXEL_ERROR_BUILD;
    case ErrorCode::kIo: return TEXEL_ERROR_IO;
    case ErrorCode::kInternal: return TEXEL_ERROR_INTERNAL;
  }
  return TEXEL_ERROR_INTERNAL;
}

}  // namespace texel::capi

extern "C" {

const char* texel_status_name(texel_status_t status) {
  switch (status) {
    case TEXEL_OK: return "TEXEL_OK";
    case TEXEL_ERROR_INVALID_ARGUMENT: return "TEXEL_ERROR_INVALID_ARGUMENT";
    case TEXEL_ERROR_NOT_FOUND: return "TEXEL_ERROR_NOT_FOUND";
    case TEXEL_ERROR_INVALID_MODEL: return "TEXEL_ERROR_INVALID_MODEL";
    case TEXEL_ERROR_UNSUPPORTED: return "TEXEL_ERROR_UNSUPPORTED";
    case TEXEL_ERROR_DEVICE: return "TEXEL_ERROR_DEVICE";
    case TEXEL_ERROR_BUILD: return "TEXEL_ERROR_BUILD";
    case TEXEL_ERROR_IO: return "TEXEL_ERROR_IO";
    case TEXEL_ERROR_INTERNAL: return "TEXEL_ERROR_INTERNAL";
  }
  return "TEXEL_ERROR_UNKNOWN_STATUS";
}

const char* texel_last_error(void) { return texel::capi::LastError(); }

}  // extern "C"
