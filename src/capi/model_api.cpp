// Models: texel_model_* (loading, saving, inputs and outputs; compile_api.cpp compiles).

#include <string>
#include <string_view>

#include "capi/handles.h"
#include "core/file_io.h"
#include "core/version.h"

namespace texel::capi {
namespace {

void Describe(const runtime::TensorBinding& t, texel_tensor_info_t* out) {
  if (t.shape.size() > TEXEL_MAX_RANK)
    Fail(ErrorCode::kUnsupported, "tensor '{}' has rank {}, more than TEXEL_MAX_RANK", t.name,
         t.shape.size());
  texel_tensor_info_t info{};
  info.name = t.name.c_str();
  info.dtype = static_cast<texel_dtype_t>(t.dtype);
  info.rank = t.shape.size();
  for (size_t i = 0; i < t.shape.size(); ++i) info.shape[i] = t.shape[i];
  info.bytes = static_cast<size_t>(DTypeSize(t.dtype) * NumElements(t.shape));
  *out = info;
}

}  // namespace

texel_model_t NewModel(texel_context_t context, std::unique_ptr<runtime::Executable> executable) {
  auto* handle = new texel_model_s;
  ++context->refs;
  handle->context.reset(context);
  handle->executable = std::move(executable);
  return handle;
}

}  // namespace texel::capi

using texel::ErrorCode;
using texel::Fail;
using texel::capi::Guard;
using texel::capi::Require;

// texel_dtype_t mirrors texel::DType value for value.
#define TEXEL_SAME(c, k) static_assert(c == static_cast<int>(texel::DType::k))
TEXEL_SAME(TEXEL_DTYPE_F32, kFloat32);
TEXEL_SAME(TEXEL_DTYPE_F16, kFloat16);
TEXEL_SAME(TEXEL_DTYPE_F64, kFloat64);
TEXEL_SAME(TEXEL_DTYPE_I8, kInt8);
TEXEL_SAME(TEXEL_DTYPE_U8, kUInt8);
TEXEL_SAME(TEXEL_DTYPE_I16, kInt16);
TEXEL_SAME(TEXEL_DTYPE_U16, kUInt16);
TEXEL_SAME(TEXEL_DTYPE_I32, kInt32);
TEXEL_SAME(TEXEL_DTYPE_U32, kUInt32);
TEXEL_SAME(TEXEL_DTYPE_I64, kInt64);
TEXEL_SAME(TEXEL_DTYPE_U64, kUInt64);
TEXEL_SAME(TEXEL_DTYPE_BOOL, kBool);
#undef TEXEL_SAME

extern "C" {

texel_status_t texel_model_save(texel_model_t model, const char* path, int with_binaries) {
  return Guard(__func__, [&] {
    Require(model, "model");
    Require(path, "path");
    texel::WriteFileAtomically(
        path, texel::runtime::WriteArtifact(model->executable->ToArtifact(with_binaries != 0)));
  });
}

texel_status_t texel_model_load_file(texel_context_t context, const char* path,
                                     texel_model_t* out_model) {
  return Guard(__func__, [&] {
    Require(context, "context");
    Require(path, "path");
    Require(out_model, "out_model");
    texel::cl::ProgramCache cache = texel::cl::ProgramCache::Default();
    *out_model = texel::capi::NewModel(
        context, texel::runtime::Executable::FromArtifactFile(context->context, path, &cache));
  });
}

texel_status_t texel_model_load_memory(texel_context_t context, const void* data, size_t size,
                                       texel_model_t* out_model) {
  return Guard(__func__, [&] {
    Require(context, "context");
    Require(data, "data");
    Require(out_model, "out_model");
    std::string_view bytes(static_cast<const char*>(data), size);
    texel::cl::ProgramCache cache = texel::cl::ProgramCache::Default();
    *out_model = texel::capi::NewModel(
        context,
        texel::runtime::Executable::FromArtifact(
            context->context, texel::runtime::ReadArtifact(bytes, "<memory>"), &cache, "<memory>"));
  });
}

const char* texel_version(void) { return texel::kVersion; }

texel_status_t texel_model_retain(texel_model_t model) {
  return texel::capi::RetainHandle(__func__, model, "model");
}

texel_status_t texel_model_release(texel_model_t model) {
  return texel::capi::ReleaseHandle(__func__, model, "model");
}

texel_status_t texel_model_input_count(texel_model_t model, size_t* out_count) {
  return Guard(__func__, [&] {
    Require(model, "model");
    Require(out_count, "out_count");
    *out_count = model->plan().inputs.size();
  });
}

texel_status_t texel_model_output_count(texel_model_t model, size_t* out_count) {
  return Guard(__func__, [&] {
    Require(model, "model");
    Require(out_count, "out_count");
    *out_count = model->plan().outputs.size();
  });
}

texel_status_t texel_model_get_input(texel_model_t model, size_t index,
                                     texel_tensor_info_t* out_info) {
  return Guard(__func__, [&] {
    Require(model, "model");
    Require(out_info, "out_info");
    const auto& inputs = model->plan().inputs;
    if (index >= inputs.size())
      Fail(ErrorCode::kNotFound, "input {} does not exist; the model has {}", index, inputs.size());
    texel::capi::Describe(inputs[index], out_info);
  });
}

texel_status_t texel_model_get_output(texel_model_t model, size_t index,
                                      texel_tensor_info_t* out_info) {
  return Guard(__func__, [&] {
    Require(model, "model");
    Require(out_info, "out_info");
    const auto& outputs = model->plan().outputs;
    if (index >= outputs.size())
      Fail(ErrorCode::kNotFound, "output {} does not exist; the model has {}", index,
           outputs.size());
    texel::capi::Describe(outputs[index], out_info);
  });
}

}  // extern "C"
