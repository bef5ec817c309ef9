#!/bin/bash
# Writes the malformed inputs of the CLI tests into OUT_DIR:
#   truncated.onnx     the first 1000 bytes of DATA_DIR/tiny_conv.onnx (about 3 KB)
#   not_onnx.onnx      a text file
#   bad_fragment.mlir  a linalg fragment with an op texel does not support (line 5, column 8)
#   parse_error.mlir   a linalg fragment with a syntax error (line 3, column 51)
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
cat >"$out/bad_fragment.mlir" <<'EOF'
func.func @f(%a: memref<1x8x8x4xf32>, %w: memref<3x3x4x8xf32>, %o: memref<1x6x6x8xf32>) {
  %0 = bufferization.to_tensor %a : memref<1x8x8x4xf32>
  %1 = bufferization.to_tensor %w : memref<3x3x4x8xf32>
  %2 = tensor.empty() : tensor<1x6x6x8xf32>
  %3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%0, %1 : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) outs(%2 : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  bufferization.materialize_in_destination %3 in %o : (tensor<1x6x6x8xf32>, memref<1x6x6x8xf32>) -> ()
  return
}
EOF
cat >"$out/parse_error.mlir" <<'EOF'
func.func @f(%a: memref<4xf32>, %o: memref<4xf32>) {
  %0 = bufferization.to_tensor %a : memref<4xf32>
  %1 = linalg.exp ins(%0 : tensor<4xf32>) outs(%0 tensor<4xf32>) -> tensor<4xf32>
  bufferization.materialize_in_destination %1 in %o : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}
EOF
