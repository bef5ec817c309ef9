#!/bin/bash
# The attention kernels under oclgrind (out-of-bounds accesses, data races between work-items):
# a causal attention of 2 heads, sequence 130 (two full key tiles and a partial one), head
# dim 64, run with the kernels oclgrind's own device gets (32 KiB of local memory: one row per
# work-item, split over the keys, and the merge kernel) and with those a GPU with 48 KiB gets
# (TEXEL_TARGET: the tiled kernel, split over the keys, and the merge kernel; or, where
# work-groups hand results over, the tiled kernel whose last work-group per row block merges),
# each run twice and compared with PyTorch's output; `mma` emulates an sm_80 GPU's kernels: K
# and V tiles copied by cp.async, here a plain copy in the same schedule; with --precision fp16
# the matrix-engine kernel (attention_mma.cl) in its emulation, between the two Casts of f16
# storage. The kernel counts are checked too. The
# hand-over between work-groups (a global fence and an atomic counter) is outside OpenCL 1.2's
# memory model, so oclgrind reports it as a race: that run is checked for out-of-bounds
# accesses only.
# Usage: oclgrind_attention.sh TEXEL_BINARY OUT_DIR
set -euo pipefail
texel=$1 out=$2
py=${TEXEL_PYTHON:-/usr/bin/python3}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
m=sdpa_causal_small
"$py" "$root/scripts/export_models.py" --out "$out/models" --models $m
for run in "own 2 fp32 1e-4" "gpu:132 2 fp32 1e-4" "gpu:132:mma 2 fp32 1e-4" \
    "gpu:132:mma 3 fp16 5e-3" "gpu:132:handoff 1 fp32 1e-4"; do
  read -r target want precision tol <<< "$run"
  name=$target.$precision
  log=$out/$m.$name.oclgrind.log
  rm -f "$log"
  env $([[ $target == own ]] || echo TEXEL_TARGET=$target) \
    oclgrind $([[ $target == *handoff ]] || echo --data-races) --max-errors 20 --log "$log" \
    $([[ $target == own ]] || echo --local-mem-size 49152) \
    "$texel" run "$out/models/$m/model.onnx" --input "input=$out/models/$m/input.npy" \
    --precision "$precision" --repeat 1 --warmup 1 -o "$out/$name" > "$out/$m.$name.run.log"
  grep -E "^model" "$out/$m.$name.run.log"
  grep -q ": $want kernels" "$out/$m.$name.run.log" || { echo "want $want kernels"; exit 1; }
  if [ -s "$log" ]; then
    echo "oclgrind reported on $m ($target kernels, $precision):"
    head -40 "$log"
    exit 1
  fi
  "$py" "$root/scripts/compare_npy.py" "$out/models/$m/output.npy" "$out/$name/output.npy" \
    --rel-l2 "$tol"
done
echo "oclgrind: no errors in the attention kernels"
