#!/bin/bash
# Checks libtexel_runtime.so: it links neither protobuf nor the ONNX library, exports texel_*
# only, has the loading functions and none of the compiling ones; prints both libraries' sizes.
# Usage: check_runtime_library.sh libtexel_runtime.so libtexel.so
set -euo pipefail
runtime=$1
full=$2
fail=0

needed=$(readelf -d "$runtime" | awk '/NEEDED/ {print $5}' | tr -d '[]')
echo "NEEDED: $(echo $needed)"
if grep -Eiq 'onnx|protobuf' <<<"$needed"; then
  echo "FAIL: $runtime links ONNX or protobuf" >&2
  fail=1
fi
exported=$(nm -D --defined-only "$runtime" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort)
if grep -v '^texel_' <<<"$exported" | grep -q .; then
  echo "FAIL: $runtime exports symbols other than texel_*:" >&2
  grep -v '^texel_' <<<"$exported" | head >&2
  fail=1
fi
if grep -Eiq 'onnx|protobuf|linalg' < <(strings "$runtime"); then
  echo "FAIL: $runtime holds ONNX, protobuf or linalg code" >&2
  fail=1
fi
for f in texel_model_load_file texel_model_load_memory texel_model_save texel_session_run \
         texel_version; do
  grep -qx "$f" <<<"$exported" || { echo "FAIL: $runtime lacks $f" >&2; fail=1; }
done
for f in texel_model_compile_file texel_model_compile_memory texel_compile_options_init \
         texel_compile_option_count texel_compile_option_get_info \
         texel_gemm; do
  if grep -qx "$f" <<<"$exported"; then
    echo "FAIL: $runtime exports the compiler's $f" >&2
    fail=1
  fi
done
echo "sizes: $(basename "$runtime") $(stat -L -c %s "$runtime") bytes," \
  "$(basename "$full") $(stat -L -c %s "$full") bytes"
exit $fail
