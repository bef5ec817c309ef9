// What the C API's opaque handles hold, and the guard every entry point runs its body in.
// Reference counts are atomic; a model holds a reference to its context, a session to its model.
#pragma once

#include <texel/texel.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"
#include "runtime/cl/context.h"
#include "runtime/executable.h"
#include "runtime/session.h"

namespace texel::api {
class GemmKernels;  // texel_gemm's (the compiler library's): absent from the runtime library
}  // namespace texel::api

namespace texel::capi {
// A reference held on a parent handle, dropped when the holder goes (declared first, so that it
// outlives the holder's other members).
template <class T, texel_status_t (*Release)(T*)>
struct Releaser {
  void operator()(T* h) const { Release(h); }
};
}  // namespace texel::capi

struct texel_context_s {
  std::atomic<int> refs{1};
  std::shared_ptr<texel::cl::Context> context;
  std::once_flag gemm_once;  // texel_gemm's kernels, made on its first call
  std::shared_ptr<texel::api::GemmKernels> gemm;
};

struct texel_model_s {
  std::atomic<int> refs{1};
  std::unique_ptr<texel_context_s, texel::capi::Releaser<texel_context_s, texel_context_release>>
      context;
  std::unique_ptr<texel::runtime::Executable> executable;
  const texel::runtime::Plan& plan() const { return executable->plan(); }
};

struct texel_session_s {
  std::atomic<int> refs{1};
  std::unique_ptr<texel_model_s, texel::capi::Releaser<texel_model_s, texel_model_release>> model;
  std::unique_ptr<texel::runtime::Session> session;
};

namespace texel::capi {

// A model handle holding executable, with a reference on context.
texel_model_t NewModel(texel_context_t context, std::unique_ptr<runtime::Executable> executable);

// Records "<function>: <message>" as the calling thread's last error and returns status. Never
// throws: without memory for the message, a fixed one is kept.
texel_status_t Failed(texel_status_t status, const char* function, const char* message) noexcept;
void ClearLastError() noexcept;
const char* LastError() noexcept;
texel_status_t StatusOf(ErrorCode code) noexcept;

// Runs body (which returns nothing and throws on failure), turning every exception into a
// status and the thread's last error, prefixed with the entry point's name.
template <class F>
texel_status_t Guard(const char* function, F&& body) noexcept {
  ClearLastError();
  try {
    body();
    return TEXEL_OK;
  } catch (const Error& e) {
    return Failed(StatusOf(e.code()), function, e.what());
  } catch (const std::bad_alloc&) {
    return Failed(TEXEL_ERROR_INTERNAL, function, "out of host memory");
  } catch (const std::exception& e) {
    return Failed(TEXEL_ERROR_INTERNAL, function, e.what());
  } catch (...) {
    return Failed(TEXEL_ERROR_INTERNAL, function, "unknown exception");
  }
}

// The body of every texel_*_init: *s value-initialised with its struct_size set; false when s is
// NULL.
template <class T>
bool ResetStruct(T* s) {
  if (s == nullptr) return false;
  *s = T{};
  s->struct_size = sizeof(T);
  return true;
}

// A C enum field as the int its caller stored: C++ may not load an enum value outside the
// enumerators' range (UndefinedBehaviorSanitizer reports it), and bad values are to be refused.
template <class E>
int RawEnum(const E& field) {
  static_assert(sizeof(E) == sizeof(int));
  int v = 0;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

// Throws Error(kInvalidArgument) "<what> is NULL" when p is null.
inline void Require(const void* p, const char* what) {
  if (p == nullptr) Fail(ErrorCode::kInvalidArgument, "{} is NULL", what);
}

// The bodies of texel_X_retain and texel_X_release: the last release deletes the object, which
// drops its reference on its parent.
template <class H>
texel_status_t RetainHandle(const char* function, H h, const char* what) {
  return Guard(function, [&] {
    Require(h, what);
    ++h->refs;
  });
}
template <class H>
texel_status_t ReleaseHandle(const char* function, H h, const char* what) {
  return Guard(function, [&] {
    Require(h, what);
    if (--h->refs == 0) delete h;
  });
}

}  // namespace texel::capi
