#!/bin/bash
# texel's main job, end to end: sets up and builds texel (scripts/setup.sh), exports MobileNetV2
# from torchvision to ONNX (random weights, no download), compiles it for the default OpenCL
# device and runs it; prints the device, the output's shape and top values, and the median
# latency. Extra arguments go to `texel run` (e.g. --device cpu, --repeat 50).
# Usage: bash scripts/demo.sh [texel run options...]
# Env: TEXEL_BUILD_DIR  build directory (default: build)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${TEXEL_BUILD_DIR:-build}

bash scripts/setup.sh
/usr/bin/python3 scripts/export_models.py --out "$build_dir/models" --models mobilenet_v2
model_dir=$build_dir/models/mobilenet_v2
"$build_dir/texel" run "$model_dir/model.onnx" --input "input=$model_dir/input.npy" "$@"
