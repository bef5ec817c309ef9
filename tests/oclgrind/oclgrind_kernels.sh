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
# for reads of memory never written). Env JOBS (default 2) and TIMEOUT (seconds per test,
# default 900): texel_conformance's.
# Fails on any report oclgrind writes, on a crash, on any failed test (in tf32 and fp16 except
# values outside the fp32 tolerance), and when no test passed (oclgrind or the test data
# missing).
# Kernels are built unoptimised (-cl-opt-disable) into a program cache of their own: at -O2 the
# compiler turns a reflection's `if (p < 0) p = -p` into LLVM's abs intrinsic, which oclgrind
# 21.10 cannot execute (every memory access of the source is checked either way).
set -uo pipefail
runner=${1:?usage: oclgrind_kernels.sh RUNNER OUT_DIR CONFIGS [FILTERS]}
out=${2:?usage: oclgrind_kernels.sh RUNNER OUT_DIR CONFIGS [FILTERS]}
configs=${3:?usage: oclgrind_kernels.sh RUNNER OUT_DIR CONFIGS [FILTERS]}
filters=${4:-}
command -v oclgrind > /dev/null || { echo "oclgrind_kernels: oclgrind is not installed"; exit 1; }
mkdir -p "$out"
export TEXEL_CACHE_DIR=$out/cache
failed=0
for config in ${configs//,/ }; do
  env=() args=(--suites "${SUITES:-node}" --jobs "${JOBS:-2}" --timeout "${TIMEOUT:-900}" -v)
  [ -n "$filters" ] && args+=(--filter "$filters")
  case $config in
    plain) ;;
    gpu) env=(TEXEL_TARGET=gpu:132) ;;
    cpu) env=(TEXEL_TARGET=cpu) ;;
    mma) env=(TEXEL_TARGET=gpu:132:mma) args+=(--precision tf32) ;;
    texture) args+=(--storage texture) ;;
    fp16) args+=(--precision fp16) ;;
    *) echo "oclgrind_kernels: unknown configuration '$config'"; exit 2 ;;
  esac
  log=$out/$config.log
  start=$SECONDS
  # shellcheck disable=SC2086
  env "${env[@]}" oclgrind ${CHECKS:---data-races --check-api} --build-options -cl-opt-disable \
    "$runner" "${args[@]}" >"$log" 2>&1
  # oclgrind's reports name the kernel or the API function on an indented line; its fatal
  # errors (an instruction it cannot execute) stop the kernel.
  reports=$(grep -cE $'^\t(Kernel|Function): |^OCLGRIND FATAL' "$log")
  crashes=$(grep -cE '^crashed|crashed \(signal' "$log")
  # Failed tests; in reduced precision, values outside the fp32 tolerance do not count.
  tolerance='^fail .*output [0-9]+: element [0-9]+ is .* expected'
  if [[ $config == mma || $config == fp16 ]]; then
    failed_tests=$(grep '^fail' "$log" | grep -cvE "$tolerance")
  else
    failed_tests=$(grep -c '^fail' "$log")
  fi
  summary=$(grep -E '^total' "$log" | tail -1)
  passed=$(awk '{print $2}' <<< "$summary")
  echo "$config: $summary; $reports oclgrind reports, $crashes crashes," \
    "$failed_tests failed tests ($((SECONDS - start)) s)"
  if [[ -z $summary || ${passed:-0} == 0 ]]; then
    echo "oclgrind_kernels: no test passed in $config:"; tail -20 "$log"; failed=1
  fi
  if ((reports + crashes + failed_tests > 0)); then
    grep -B3 -A8 -E $'^\t(Kernel|Function): |^OCLGRIND FATAL|^crashed|^fail' "$log" | head -60
    failed=1
  fi
done
exit $failed
