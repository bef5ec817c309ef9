#!/bin/bash
# A short tune of a real model on empty caches, its waves compiled by worker processes, ends
# with its budget: programs still compiling at the budget's end are dropped and builds not
# started are not run, which the log says (before, SqueezeNet at `--budget 3 --jobs 4` on PoCL
# took 16 s, its wave's unfinished programs then compiled one by one as its builds ran).
# Usage: tune_budget.sh TEXEL MODEL.onnx BUDGET SLACK  (SLACK: seconds allowed past the budget)
set -euo pipefail
texel=$1 model=$2 budget=$3 slack=$4
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# Empty caches, the drivers' own too: every program compiles.
export TEXEL_CACHE_DIR=$d/cache POCL_CACHE_DIR=$d/pocl CUDA_CACHE_PATH=$d/nv
start=$(date +%s.%N)
"$texel" tune "$model" --budget "$budget" --jobs 4 --db "$d/db.jsonl" >"$d/out" 2>"$d/err" || {
  echo "FAIL: tune: $(cat "$d/err")"
  exit 1
}
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
grep -a "^tuned \|builds of candidates" "$d/out" "$d/err" || true
took=$(sed -n 's/^tuned .* in \([0-9.]*\) s:.*/\1/p' "$d/out")
[[ -n $took ]] || { echo "FAIL: no summary line: $(cat "$d/out")"; exit 1; }
echo "budget $budget s: the tune says $took s, its process took $wall s"
grep -q "the budget ended a wave" "$d/err" || {
  echo "FAIL: no wave was cut by the budget, so the test tested nothing: $(cat "$d/err")"
  exit 1
}
if awk -v t="$took" -v w="$wall" -v b="$budget" -v s="$slack" \
  'BEGIN { exit !(t > b + s || w > b + s + 2) }'; then
  echo "FAIL: the tune overran its budget of $budget s by more than $slack s"
  exit 1
fi
echo "PASS"
