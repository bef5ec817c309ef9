// Compiling models: texel_compile_options_init, texel_model_compile_* (libtexel.so only; the
// runtime library loads artifacts instead).
#include <cstddef>
#include <sstream>

#include "api/compile_options.h"
#include "api/compiler.h"
#include "capi/handles.h"

namespace texel::capi {
namespace {

// The struct's fields and settings, applied through the option table (api/compile_options.h).
CompileOptions ToOptions(const texel_compile_options_t* o) {
  CompileOptions opts;
  opts.keep_graph = false;  // a model is its executable
  if (!o) return opts;
  // The struct as texel_compile_options_init set it up, here or in a texel.h before the notice
  // fields (whose callers are not told).
  constexpr size_t kBeforeNotice = offsetof(texel_compile_options_t, notice);
  if (o->struct_size < kBeforeNotice)
    Fail(ErrorCode::kInvalidArgument, "options were not set up by texel_compile_options_init");
  if (o->struct_size >= sizeof(*o) && o->notice) {
    auto notice = o->notice;
    void* user_data = o->notice_user_data;
    opts.on_notice = [notice, user_data](const std::string& m) { notice(m.c_str(), user_data); };
  }
  const std::pair<const char*, const char*> fields[] = {{"backends", o->backends},
                                                        {"partition", o->partition},
                                                        {"storage", o->storage},
                                                        {"precision", o->precision}};
  for (const auto& [name, value] : fields)
    if (value) ApplyCompileOption(opts, name, value);
  if (o->texture_fp16) ApplyCompileOption(opts, "texture_precision", "fp16");
  if (o->input_shapes) {
    std::stringstream list(o->input_shapes);
    for (std::string item; std::getline(list, item, ';');)
      if (!item.empty()) ApplyCompileOption(opts, "input_shape", item);
  }
  if (o->settings) ApplyCompileSettings(opts, o->settings);
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

size_t texel_compile_option_count(void) { return texel::CompileOptionTable().size(); }

texel_status_t texel_compile_option_get_info(size_t index, texel_compile_option_info_t* out_info) {
  return Guard(__func__, [&] {
    Require(out_info, "out_info");
    const auto& table = texel::CompileOptionTable();
    if (index >= table.size()) Fail(ErrorCode::kNotFound, "option {} of {}", index, table.size());
    const texel::CompileOptionSpec& spec = table[index];
    out_info->name = spec.name.c_str();
    out_info->values = spec.values.c_str();
    out_info->help = spec.help.c_str();
    out_info->repeatable = spec.repeatable ? 1 : 0;
  });
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
