#!/bin/bash
# Runs texel's whole test suite: sets up and builds texel (scripts/setup.sh) and runs ctest; then
# builds texel again with clang, AddressSanitizer, UndefinedBehaviorSanitizer and the libFuzzer
# harnesses (TEXEL_SANITIZE, TEXEL_FUZZ) into build-sanitize and runs the unit, C API, CLI, fuzz,
# soak and fault-injection tests there (docs/reliability.md). Extra arguments go to the first
# ctest (e.g. -LE models to skip the model tests, -R cli). The exit status is non-zero when
# either run failed.
# Usage: bash scripts/test.sh [ctest options...]
# Env: TEXEL_BUILD_DIR     build directory (default: build)
#      TEXEL_SANITIZE_DIR  the sanitized build's directory (default: build-sanitize)
#      TEXEL_SANITIZE=0    skip the sanitized build and run
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${TEXEL_BUILD_DIR:-build}
san_dir=${TEXEL_SANITIZE_DIR:-build-sanitize}

bash scripts/setup.sh
export TEXEL_TEST_REQUIRE_CLBLAST=1  # setup.sh installs it: its tests must not skip
status=0
ctest --test-dir "$build_dir" --output-on-failure -j2 "$@" || status=$?

if [[ ${TEXEL_SANITIZE:-1} != 0 ]]; then
  echo "test: the sanitized build ($san_dir)"
  CC=clang CXX=clang++ cmake -S . -B "$san_dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O1 \
    -DTEXEL_SANITIZE=ON -DTEXEL_FUZZ=ON -DTEXEL_BUILD_PYTHON=OFF -DTEXEL_BUILD_BENCH=OFF \
    -DTEXEL_BUILD_EXAMPLES=OFF > /dev/null
  cmake --build "$san_dir"
  # allocator_may_return_null: texel turns a failed allocation into its "out of host memory"
  # error, which the CLI tests check. No leak check here: LeakSanitizer's exit-time scan crashes
  # (signal 11 in its tracer) in processes where PoCL has compiled kernels, and PoCL keeps its
  # memory until exit; the fuzz harnesses, which make no OpenCL calls, check for leaks.
  # use_sigaltstack=0: a thread on which PoCL's LLVM builds a program gets LLVM's own alternate
  # signal stack (heap memory) in place of ASan's, which ASan then fails to unmap when the
  # thread exits (a CHECK failure in its runtime, NodeTimerTest.CompilesMeasuringOnTwoThreads).
  export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=0:abort_on_error=1:use_sigaltstack=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir "$san_dir" --output-on-failure -j2 -L 'unit|capi|cli|fuzz|soak|fault' || status=$?
fi
exit $status
