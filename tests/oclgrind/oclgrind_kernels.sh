#!/bin/bash
# oclgrind_kernels.sh RUNNER OUT_DIR CONFIGS [FILTERS]
# texel's kernel generators under oclgrind (the OpenCL simulator; --data-races --check-api): the
# ONNX backend node tests, small shapes of every op texel supports, through texel_conformance
# (RUNNER) on oclgrind's device, in each configuration of the comma list CONFIGS:
#   plain    the kernels oclgrind's device gets (a GPU of one compute unit)
#   gpu      TEXEL_TARGET=gpu:132: a large GPU's tiled products and convolutions, split K,
#            work-groups sharing reductions and softmax rows
#   mma      TEXEL_TARGET=gpu:132:mma, --precision tf32: the warp-tiled matrix-engine kernels
#            (their copies emulated)
#   texture  --storage texture: activations in 2D images
#   fp16     --precision fp16: f16 storage
# FILTERS (optional): test-name substrings, comma-separated (texel_conformance --filter).
# Env SUITES: the test suites (default node; all four: node,pytorch-converted,pytorch-operator,
# simple). Env CHECKS: oclgrind's checks (default --data-races --check-api; add --uninitialized
# for reads of memory never written).
# Fails on any report oclgrind writes, on a crash, and, in the fp32 configurations, on a wrong
# answer (tf32 and fp16 answers are not held to the fp32 tolerance here).
# Kernels are built unoptimised (-cl-opt-disable) into a program cache of their own: at -O2 the
# compiler turns a reflection's `if (p < 0) p = -p` into LLVM's abs intrinsic, which oclgrind
# 21.10 cannot execute (every memory access of the source is checked either way).
set -uo pipefail
runner=${1:?usage: oclgrind_kernels.sh RUNNER OUT_DIR CONFIGS [FILTERS]}
out=${2:?usage: oclgrind_kernels.sh RUNNER OUT_DIR CONFIGS [FILTERS]}
configs=${3:?usage: oclgrind_kernels.sh RUNNER OUT_DIR CONFIGS [FILTERS]}
filters=${4:-}
mkdir -p "$out"
export TEXEL_CACHE_DIR=$out/cache
failed=0
for config in ${configs//,/ }; do
  env=() args=(--suites "${SUITES:-node}" --jobs 2 --timeout 900 -v)
  [ -n "$filters" ] && args+=(--filter "$filters")
  case $config in
    plain) ;;
    gpu) env=(TEXEL_TARGET=gpu:132) ;;
    mma) env=(TEXEL_TARGET=gpu:132:mma) args+=(--precision tf32) ;;
    texture) args+=(--storage texture) ;;
    fp16) args+=(--precision fp16) ;;
    *) echo "oclgrind_kernels: unknown configuration '$config'"; exit 2 ;;
  esac
  log=$out/$config.log
  start=$SECONDS
  # shellcheck disable=SC2086
  env "${env[@]}" oclgrind ${CHECKS:---data-races --check-api} --build-options -cl-opt-disable "$runner" "${args[@]}" >"$log" 2>&1
  # oclgrind's reports name the kernel or the API function on an indented line.
  reports=$(grep -cE $'^\t(Kernel|Function): ' "$log")
  crashes=$(grep -cE '^crashed|crashed \(signal' "$log")
  wrong=0
  [[ $config == plain || $config == gpu || $config == texture ]] && wrong=$(grep -c '^fail' "$log")
  summary=$(grep -E '^total' "$log" | tail -1)
  echo "$config: $summary; $reports oclgrind reports, $crashes crashes, $wrong wrong answers ($((SECONDS - start)) s)"
  if ((reports + crashes + wrong > 0)); then
    grep -B3 -A8 -E $'^\t(Kernel|Function): |^crashed|^fail' "$log" | head -60
    failed=1
  fi
done
exit $failed
