#!/bin/bash
# cli_faults.sh TEXEL MODEL
# `texel run MODEL` with one OpenCL call failing ($TEXEL_INJECT_FAULT=POINT:1): exit status 1 and
# exactly one error line, naming the call and the error code, for compile-time (empty cache) and
# run-time points; a malformed $TEXEL_INJECT_FAULT is ignored with a notice.
set -uo pipefail
texel=${1:?usage: cli_faults.sh TEXEL MODEL}
model=${2:?usage: cli_faults.sh TEXEL MODEL}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
expect() {  # POINT CALL CODE
  rm -rf "$work/cache"
  TEXEL_CACHE_DIR=$work/cache TEXEL_INJECT_FAULT=$1:1 "$texel" run "$model" >"$work/out" 2>&1
  local rc=$?
  if ((rc != 1)) || [[ $(grep -c "^texel: error:" "$work/out") != 1 ]] ||
    ! grep -q "^texel: error: .*$2.*failed: $3" "$work/out"; then
    echo "cli_faults: $1:1 gave exit status $rc, want 1 and an error naming $2 and $3:"
    cat "$work/out"
    failed=1
  fi
}
expect buffer clCreateBuffer CL_MEM_OBJECT_ALLOCATION_FAILURE
expect kernel clCreateKernel CL_OUT_OF_RESOURCES
expect enqueue clEnqueueNDRangeKernel CL_OUT_OF_RESOURCES
expect transfer clEnqueueWriteBuffer CL_OUT_OF_RESOURCES
expect wait clWaitForEvents CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
expect build clCreateProgramWithSource CL_OUT_OF_HOST_MEMORY
# A build from source that runs out of host memory is the device's failure, not the source's.
rm -rf "$work/cache"
TEXEL_CACHE_DIR=$work/cache TEXEL_INJECT_FAULT=build:2 "$texel" run "$model" >"$work/out" 2>&1
rc=$?
if ((rc != 1)) || ! grep -q "^texel: error: .*OpenCL build failed (CL_OUT_OF_HOST_MEMORY)" "$work/out"; then
  echo "cli_faults: build:2 gave exit status $rc:"; cat "$work/out"; failed=1
fi
TEXEL_CACHE_DIR=$work/cache TEXEL_INJECT_FAULT=enqueue:x "$texel" run "$model" >"$work/out" 2>&1
rc=$?
if ((rc != 0)) || ! grep -q "ignoring TEXEL_INJECT_FAULT='enqueue:x'" "$work/out"; then
  echo "cli_faults: a malformed TEXEL_INJECT_FAULT gave exit status $rc:"; cat "$work/out"; failed=1
fi
exit $failed
