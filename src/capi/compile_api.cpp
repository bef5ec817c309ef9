// Compiling models: texel_compile_options_init, texel_model_compile_* (libtexel.so only; the
// runtime library loads artifacts instead).
#include <sstream>

#include "api/assignments.h"
#include "api/compiler.h"
#include "capi/handles.h"

namespace texel::capi {
namespace {

CompileOptions ToOptions(const texel_compile_options_t* o) {
  CompileOptions opts;
  opts.keep_graph = false;  // a model is its executable
  if (!o) return opts;
  if (o->struct_size < sizeof(*o))
    Fail(ErrorCode::kInvalidArgument, "options were not set up by texel_compile_options_init");
  if (o->backends) {
    std::stringstream list(o->backends);
    for (std::string name; std::getline(list, name, ',');)
      if (!name.empty()) opts.backends.push_back(name);
  }
  if (o->partition && !passes::ParsePolicy(o->partition, &opts.partition))
    Fail(ErrorCode::kInvalidArgument, "partition '{}' is not estimate, measure or first",
         o->partition);
  if (o->storage && !passes::ParseStoragePolicy(o->storage, &opts.storage))
    Fail(ErrorCode::kInvalidArgument, "storage '{}' is not buffer, texture or auto", o->storage);
  opts.half_texels = o->texture_fp16 != 0;
  if (o->precision && !ParseComputeMode(o->precision, &opts.precision))
    Fail(ErrorCode::kInvalidArgument, "precision '{}' is not fp32, fp16, tf32 or tf32x3",
         o->precision);
  if (o->input_shapes) {
    std::vector<std::string> items;
    std::stringstream list(o->input_shapes);
    for (std::string item; std::getline(list, item, ';');)
      if (!item.empty()) items.push_back(item);
    opts.import.input_shapes = ParseInputShapes(items, "input_shapes");
  }
  return opts;
}

}  // namespace
}  // namespace texel::capi

using texel::ErrorCode;
using texel::Fail;
using texel::capi::Guard;
using texel::capi::Require;

extern "C" {

void texel_compile_options_init(texel_compile_options_t* options) {
  texel::capi::ResetStruct(options);
}

texel_status_t texel_model_compile_file(texel_context_t context, const char* path,
                                        const texel_compile_options_t* options,
                                        texel_model_t* out_model) {
  return Guard(__func__, [&] {
    Require(context, "context");
    Require(path, "path");
    Require(out_model, "out_model");
    texel::CompiledModel m =
        texel::Compile(path, context->context, texel::capi::ToOptions(options));
    *out_model = texel::capi::NewModel(context, std::move(m.executable));
  });
}

texel_status_t texel_model_compile_memory(texel_context_t context, const void* data, size_t size,
                                          const texel_compile_options_t* options,
                                          texel_model_t* out_model) {
  return Guard(__func__, [&] {
    Require(context, "context");
    Require(data, "data");
    Require(out_model, "out_model");
    if (size == 0) Fail(ErrorCode::kInvalidArgument, "the model is 0 bytes");
    std::string bytes(static_cast<const char*>(data), size);
    texel::CompiledModel m =
        texel::CompileBytes(bytes, context->context, texel::capi::ToOptions(options));
    *out_model = texel::capi::NewModel(context, std::move(m.executable));
  });
}

}  // extern "C"
