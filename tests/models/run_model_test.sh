#!/bin/bash
# Runs one exported model through texel and compares its output with PyTorch's.
# Usage: run_model_test.sh TEXEL_BINARY MODEL_DIR OUT_DIR
#   MODEL_DIR holds model.onnx, input.npy and output.npy (scripts/export_models.py), and one
#   NAME.npy per further model input (e.g. attention_mask.npy): every *.npy but output.npy is
#   bound to the input named after it; OUT_DIR is scratch space, emptied first so that a stale
#   output cannot pass.
# The interpreter for compare_npy.py is $TEXEL_PYTHON (default /usr/bin/python3); TEXEL_MODEL_ARGS
# adds texel options (e.g. "--backends clblast,native"); TEXEL_MODEL_REL_L2 the tolerance
# (default 1e-4). The model is then compiled to an artifact (texel compile -o) and run from it:
# its outputs must equal the direct run's bit for bit (TEXEL_MODEL_ARTIFACT=0 skips that).
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 TEXEL_BINARY MODEL_DIR OUT_DIR" >&2
  exit 2
fi
texel=$1
model_dir=$2
out_dir=$3
python=${TEXEL_PYTHON:-/usr/bin/python3}
scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)

rm -rf "$out_dir"
mkdir -p "$out_dir"

if [[ ! -f "$model_dir/input.npy" ]]; then
  echo "$0: no $model_dir/input.npy" >&2
  exit 2
fi
inputs=()
for npy in "$model_dir"/*.npy; do
  name=$(basename "$npy" .npy)
  [[ $name == output ]] || inputs+=(--input "$name=$npy")
done

set -x
# One run, no warmup: these tests check the output, not the latency.
# shellcheck disable=SC2086  # TEXEL_MODEL_ARGS: extra texel options, split on spaces
"$texel" run "$model_dir/model.onnx" "${inputs[@]}" --output-dir "$out_dir" \
  --repeat 1 --warmup 0 ${TEXEL_MODEL_ARGS:-}
"$python" "$scripts/compare_npy.py" "$model_dir/output.npy" "$out_dir/output.npy" \
  --rel-l2 "${TEXEL_MODEL_REL_L2:-1e-4}"

if [[ ${TEXEL_MODEL_ARTIFACT:-1} != 0 ]]; then
  # shellcheck disable=SC2086
  "$texel" compile "$model_dir/model.onnx" -o "$out_dir/model.texel" ${TEXEL_MODEL_ARGS:-}
  mkdir -p "$out_dir/artifact"
  "$texel" run "$out_dir/model.texel" "${inputs[@]}" --output-dir "$out_dir/artifact" \
    --repeat 1 --warmup 0
  for out in "$out_dir"/*.npy; do
    cmp "$out" "$out_dir/artifact/$(basename "$out")"
  done
fi
