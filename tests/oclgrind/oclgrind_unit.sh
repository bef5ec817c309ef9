#!/bin/bash
# Unit tests under oclgrind (issue 18): runs texel_unit_tests with FILTER on oclgrind's simulated
# device (TEXEL_TEST_DEVICE=gpu picks it; TEXEL_TARGET from the environment chooses whose
# kernels it gets) with race and API checks, and fails on any report, crash or failed test.
# OCLGRIND_RACES=0 leaves races unchecked (kernels whose work-groups hand results over, which
# oclgrind calls a race). Usage: oclgrind_unit.sh UNIT_TESTS FILTER LOG
set -uo pipefail
tests=${1:?usage: oclgrind_unit.sh UNIT_TESTS FILTER LOG}
filter=${2:?usage: oclgrind_unit.sh UNIT_TESTS FILTER LOG}
log=${3:?usage: oclgrind_unit.sh UNIT_TESTS FILTER LOG}
command -v oclgrind > /dev/null || { echo "oclgrind_unit: oclgrind is not installed"; exit 1; }
races=--data-races
[[ ${OCLGRIND_RACES:-1} == 0 ]] && races=
TEXEL_TEST_DEVICE=gpu oclgrind $races --check-api --build-options -cl-opt-disable \
  "$tests" --gtest_filter="$filter" > "$log" 2>&1
status=$?
reports=$(grep -cE $'^\t(Kernel|Function): |^OCLGRIND FATAL' "$log")
echo "oclgrind_unit: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \]' "$log" | head -2 | tr '\n' ' ')$reports oclgrind reports, exit $status"
passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$')
if ((status != 0 || reports > 0 || ${passed:-0} == 0)); then
  grep -B3 -A8 -E $'^\t(Kernel|Function): |^OCLGRIND FATAL|FAILED|Failure' "$log" | head -60
  exit 1
fi
