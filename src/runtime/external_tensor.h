// ExternalTensor: memory a host framework owns and lends to a Session as one of its inputs or
// outputs. The caller says what kind of memory it is; texel never guesses from the pointer.
// Lifetime: the memory must stay valid (and, for kHost, untouched) until the run that uses it
// has completed (Session::Run returned, or Session::Enqueue's event completed).
#pragma once

#include <CL/cl.h>

#include <cstddef>

namespace texel::runtime {

struct ExternalTensor {
  enum class Kind {
    kHost,      // a host pointer: copied in before the run and out after it
    kClBuffer,  // a cl_mem buffer of the session's context, from byte `offset`
    kSvm,       // a coarse-grained SVM pointer (clSVMAlloc) of the session's context
    kUsm,       // a USM pointer (cl_intel_unified_shared_memory)
  };
  Kind kind = Kind::kHost;
  cl_mem buffer = nullptr;  // kClBuffer
  size_t offset = 0;        // kClBuffer: bytes from the buffer's start
  void* pointer = nullptr;  // kHost, kSvm, kUsm
  size_t bytes = 0;  // kHost, kSvm, kUsm: bytes available at pointer (kClBuffer: from CL_MEM_SIZE)
};

const char* ExternalKindName(ExternalTensor::Kind kind);

}  // namespace texel::runtime
