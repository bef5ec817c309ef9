#!/bin/bash
# Builds texel's unit and C API tests with ThreadSanitizer (clang, TEXEL_TSAN) into build-tsan and
# runs the tests that use texel from several threads at once: compiles measuring nodes on two
# threads, sessions of one model on four, texel_gemm on one context from four (also deep products
# split K, each thread on a queue of its own). Run by hand, not by CI (a third build of texel
# would take CI past its time); its last figures are in docs/reliability.md. Needs what
# scripts/setup.sh installs, and clang.
# Usage: bash scripts/tsan.sh
# Env: TEXEL_TSAN_DIR  the build directory (default: build-tsan)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${TEXEL_TSAN_DIR:-build-tsan}
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O1 \
  -DTEXEL_TSAN=ON -DTEXEL_BUILD_PYTHON=OFF -DTEXEL_BUILD_BENCH=OFF -DTEXEL_BUILD_EXAMPLES=OFF \
  >/dev/null
cmake --build "$dir" --target texel_unit_tests texel_capi_tests
# halt_on_error: the first race fails the run. PoCL and its LLVM are not instrumented: their
# threads synchronise through pthreads, which TSan intercepts.
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
status=0
"$dir/tests/texel_unit_tests" --gtest_filter='NodeTimerTest.*' || status=$?
"$dir/tests/capi/texel_capi_tests" \
  --gtest_filter='CApiTest.SessionsOnSeveralThreads:CApiGemm.ThreadsShareOneContext:CApiGemm.DeepProductsOnThreadsAndQueues' \
  || status=$?
exit $status
