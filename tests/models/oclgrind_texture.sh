#!/bin/bash
# The texture kernels of resnet18 and mobilenet_v2 under oclgrind (the OpenCL simulator that
# reports out-of-bounds accesses and invalid memory use): the models at 32x32 inputs, so that
# the simulator gets through them in a minute, with --storage texture; the test fails on any
# message oclgrind logs and on outputs that differ from PyTorch's.
# usage: oclgrind_texture.sh TEXEL OUT_DIR   (env TEXEL_PYTHON: a python with torch and onnx)
set -euo pipefail
texel=$1 out=$2
py=${TEXEL_PYTHON:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
"$py" "$root/scripts/export_models.py" --out "$out/models" --models resnet18,mobilenet_v2 \
  --image-size 32
for m in resnet18 mobilenet_v2; do
  log=$out/$m.oclgrind.log
  rm -f "$log"
  oclgrind --max-errors 20 --log "$log" \
    "$texel" run "$out/models/$m/model.onnx" --input "input=$out/models/$m/input.npy" \
    --storage texture --repeat 1 --warmup 0 -o "$out/$m" > "$out/$m.run.log"
  grep -E "^device|kernels" "$out/$m.run.log" | head -2
  if [ -s "$log" ]; then
    echo "oclgrind reported on $m:"
    head -40 "$log"
    exit 1
  fi
  "$py" "$root/scripts/compare_npy.py" "$out/models/$m/output.npy" "$out/$m/output.npy" \
    --rel-l2 1e-4
done
echo "oclgrind: no errors in the texture kernels of resnet18 and mobilenet_v2"
