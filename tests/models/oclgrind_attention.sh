#!/bin/bash
# The attention kernels under oclgrind (out-of-bounds accesses, data races between work-items):
# a causal attention of 2 heads, sequence 130 (two full key tiles and a partial one), head
# dim 64, run with the kernels a CPU gets (one row per work-item) and with those a GPU gets
# (TEXEL_TARGET: the tiled kernel, split over the keys, and the merge kernel), each compared
# with PyTorch's output.
# Usage: oclgrind_attention.sh TEXEL_BINARY OUT_DIR
set -euo pipefail
texel=$1 out=$2
py=${TEXEL_PYTHON:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
m=sdpa_causal_small
"$py" "$root/scripts/export_models.py" --out "$out/models" --models $m
for target in cpu gpu:132; do
  log=$out/$m.$target.oclgrind.log
  rm -f "$log"
  env $([[ $target == cpu ]] || echo TEXEL_TARGET=$target) \
    oclgrind --data-races --max-errors 20 --log "$log" \
    "$texel" run "$out/models/$m/model.onnx" --input "input=$out/models/$m/input.npy" \
    --repeat 1 --warmup 0 -o "$out/$target" > "$out/$m.$target.run.log"
  grep -E "^model" "$out/$m.$target.run.log"
  if [ -s "$log" ]; then
    echo "oclgrind reported on $m ($target kernels):"
    head -40 "$log"
    exit 1
  fi
  "$py" "$root/scripts/compare_npy.py" "$out/models/$m/output.npy" "$out/$target/output.npy" \
    --rel-l2 1e-4
done
echo "oclgrind: no errors in the attention kernels"
