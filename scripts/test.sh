#!/bin/bash
# Runs texel's whole test suite: sets up and builds texel (scripts/setup.sh), then runs ctest.
# Extra arguments go to ctest (e.g. -LE models to skip the model tests, -R cli). The exit status
# is ctest's.
# Usage: bash scripts/test.sh [ctest options...]
# Env: TEXEL_BUILD_DIR  build directory (default: build)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${TEXEL_BUILD_DIR:-build}

bash scripts/setup.sh
exec ctest --test-dir "$build_dir" --output-on-failure -j2 "$@"
