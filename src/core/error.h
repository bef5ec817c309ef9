// texel::Error — the single error type thrown inside texel and caught at the API boundaries
// (CLI, C API, Python). It carries a code, a message and a context chain (file, node, op), so
// that every failure can name what it is about. Thread safety: a plain value.
#pragma once

#include <fmt/format.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace texel {

enum class ErrorCode {
  kInvalidArgument,  // bad user input: flags, shapes, .npy files
  kNotFound,         // missing file, device, input name
  kInvalidModel,     // malformed or inconsistent model
  kUnsupported,      // valid input that texel does not support (yet): op, attribute, dtype
  kNotConstant,      // a value that decides shapes is only known at run time (static shapes)
  kDevice,           // an OpenCL call failed
  kBuild,            // an OpenCL program failed to build
  kIo,               // file system errors
  kInternal,         // a broken invariant inside texel
};

const char* ErrorCodeName(ErrorCode code);

class Error : public std::exception {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {
    Render();
  }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::vector<std::string>& context() const { return context_; }
  // The IR value or graph input the error is about, when there is one (kNotConstant).
  const std::string& subject() const { return subject_; }
  Error& SetSubject(std::string s) {
    subject_ = std::move(s);
    return *this;
  }
  // Adds an outer context ("node 'conv1' (Conv)", "model.onnx"); shown before the message.
  Error& AddContext(std::string ctx) {
    context_.insert(context_.begin(), std::move(ctx));
    Render();
    return *this;
  }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  void Render();
  ErrorCode code_;
  std::string message_;
  std::vector<std::string> context_;
  std::string subject_;
  std::string what_;
};

template <typename... Args>
[[noreturn]] void Fail(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(code, fmt::format(f, std::forward<Args>(args)...));
}

// Internal invariant check: a failure is a texel bug, reported as kInternal, never a crash.
#define TEXEL_CHECK(cond, ...)                                                             \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::texel::Fail(::texel::ErrorCode::kInternal, "{}:{}: check failed: {} {}", __FILE__, \
                    __LINE__, #cond, ::fmt::format(__VA_ARGS__));                          \
  } while (0)

}  // namespace texel
