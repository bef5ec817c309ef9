// Sessions: texel_tensor_init, texel_session_*.

#include "capi/handles.h"

namespace texel::capi {
namespace {

runtime::ExternalTensor ToExternal(const texel_tensor_t* t) {
  if (t->struct_size < sizeof(*t))
    Fail(ErrorCode::kInvalidArgument, "the tensor was not set up by texel_tensor_init");
  runtime::ExternalTensor e;
  const int kind = RawEnum(t->kind);  // it may be no texel_memory_kind_t at all
  switch (kind) {
    case TEXEL_MEMORY_HOST: e.kind = runtime::ExternalTensor::Kind::kHost; break;
    case TEXEL_MEMORY_CL_BUFFER: e.kind = runtime::ExternalTensor::Kind::kClBuffer; break;
    case TEXEL_MEMORY_SVM: e.kind = runtime::ExternalTensor::Kind::kSvm; break;
    case TEXEL_MEMORY_USM: e.kind = runtime::ExternalTensor::Kind::kUsm; break;
    default: Fail(ErrorCode::kInvalidArgument, "memory kind {} is not a texel_memory_kind_t", kind);
  }
  e.buffer = t->buffer;
  e.offset = t->offset;
  e.pointer = t->pointer;
  e.bytes = t->bytes;
  return e;
}

// Every input and output is the caller's memory: an unbound one would be read uninitialised or
// written where nobody looks.
void RequireAllBound(const texel_session_s& s) {
  for (const auto& in : s.model->plan().inputs)
    if (!s.session->IsBound(false, in.name))
      Fail(ErrorCode::kInvalidArgument, "input '{}' is not bound", in.name);
  for (const auto& out : s.model->plan().outputs)
    if (!s.session->IsBound(true, out.name))
      Fail(ErrorCode::kInvalidArgument, "output '{}' is not bound", out.name);
}

}  // namespace
}  // namespace texel::capi

using texel::ErrorCode;
using texel::Fail;
using texel::capi::Guard;
using texel::capi::Require;

extern "C" {

void texel_tensor_init(texel_tensor_t* tensor) { texel::capi::ResetStruct(tensor); }

texel_status_t texel_session_create(texel_model_t model, texel_session_t* out_session) {
  return Guard(__func__, [&] {
    Require(model, "model");
    Require(out_session, "out_session");
    auto session = std::make_unique<texel::runtime::Session>(*model->executable);
    auto* handle = new texel_session_s;
    ++model->refs;
    handle->model.reset(model);
    handle->session = std::move(session);
    *out_session = handle;
  });
}

texel_status_t texel_session_retain(texel_session_t session) {
  return texel::capi::RetainHandle(__func__, session, "session");
}

texel_status_t texel_session_release(texel_session_t session) {
  return texel::capi::ReleaseHandle(__func__, session, "session");
}

texel_status_t texel_session_bind_input(texel_session_t session, const char* name,
                                        const texel_tensor_t* tensor) {
  return Guard(__func__, [&] {
    Require(session, "session");
    Require(name, "name");
    Require(tensor, "tensor");
    session->session->BindInput(name, texel::capi::ToExternal(tensor));
  });
}

texel_status_t texel_session_bind_output(texel_session_t session, const char* name,
                                         const texel_tensor_t* tensor) {
  return Guard(__func__, [&] {
    Require(session, "session");
    Require(name, "name");
    Require(tensor, "tensor");
    session->session->BindOutput(name, texel::capi::ToExternal(tensor));
  });
}

texel_status_t texel_session_run(texel_session_t session) {
  return Guard(__func__, [&] {
    Require(session, "session");
    texel::capi::RequireAllBound(*session);
    session->session->Execute();
  });
}

texel_status_t texel_session_enqueue(texel_session_t session, cl_uint num_wait_events,
                                     const cl_event* wait_events, cl_event* out_event) {
  return Guard(__func__, [&] {
    Require(session, "session");
    if (num_wait_events > 0) Require(wait_events, "wait_events (with num_wait_events > 0)");
    for (cl_uint i = 0; i < num_wait_events; ++i)
      if (!wait_events[i]) Fail(ErrorCode::kInvalidArgument, "wait_events[{}] is NULL", i);
    texel::capi::RequireAllBound(*session);
    std::vector<cl_event> wait(wait_events, wait_events + num_wait_events);
    texel::cl::Event done = session->session->Enqueue(wait);
    if (out_event) *out_event = done.release();
  });
}

}  // extern "C"
