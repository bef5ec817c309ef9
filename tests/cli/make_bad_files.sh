#!/bin/bash
# Writes the malformed inputs of the CLI tests into OUT_DIR:
#   truncated.onnx  the first 1000 bytes of DATA_DIR/tiny_conv.onnx (about 3 KB)
#   not_onnx.onnx   a text file
# Usage: make_bad_files.sh DATA_DIR OUT_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 DATA_DIR OUT_DIR" >&2
  exit 2
fi
data=$1
out=$2
mkdir -p "$out"
size=$(wc -c <"$data/tiny_conv.onnx")
if [[ $size -le 1000 ]]; then
  echo "$data/tiny_conv.onnx has $size bytes; the truncation test needs more than 1000" >&2
  exit 1
fi
head -c 1000 "$data/tiny_conv.onnx" >"$out/truncated.onnx"
printf 'This is a text file, not an ONNX model.\nIt has two lines.\n' >"$out/not_onnx.onnx"
