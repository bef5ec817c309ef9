# Writes OUT: a C++ file with every kernel template of FILES as a raw string, looked up by file
# stem through texel::codegen::KernelTemplate(name).
set(body "")
set(table "")
string(REPLACE "|" ";" FILES "${FILES}")
foreach(f ${FILES})
  get_filename_component(stem ${f} NAME_WE)
  file(READ ${f} text)
  string(APPEND body "static const char k_${stem}[] = R\"texelcl(${text})texelcl\";\n")
  string(APPEND table "    {\"${stem}\", k_${stem}},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from src/codegen/opencl/kernels/*.cl; do not edit.
#include <string_view>
#include <utility>
namespace texel::codegen {
${body}
static const std::pair<std::string_view, const char*> kKernels[] = {
${table}};
const char* FindKernelTemplate(std::string_view name) {
  for (const auto& [n, text] : kKernels)
    if (n == name) return text;
  return nullptr;
}
}  // namespace texel::codegen
")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
