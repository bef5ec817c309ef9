#!/bin/bash
# Prepares a Debian 12 machine for texel: installs the Debian packages it needs (apt is skipped
# when all of them are already installed), then configures and builds texel (CMake, Release,
# Ninja) into build/. Runs apt as root, or through sudo when not root. Safe to rerun.
# Usage: bash scripts/setup.sh
# Env: TEXEL_BUILD_DIR  build directory, relative to the repository root (default: build)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${TEXEL_BUILD_DIR:-build}

packages=(
  # toolchain; clang for the sanitized build and the libFuzzer harnesses (scripts/test.sh)
  build-essential cmake ninja-build pkg-config clang
  # OpenCL: the PoCL CPU driver, the ICD loader, C and C++ headers, clinfo, and oclgrind
  # (kernel checks)
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers clinfo oclgrind
  # CLBlast: the tuned BLAS that bench/ measures texel's GEMM against
  libclblast-dev
  # ONNX frontend (the ONNX library and protobuf) and the ONNX backend test data (conformance)
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  # Python for exporting and checking test models (/usr/bin/python3), and for texel's Python
  # package (python/: its module is built with pybind11, its tests run with pytest)
  python3-onnx python3-torchvision python3-numpy python3-dev pybind11-dev python3-pytest
  # C++ libraries: command line, formatting, JSON, tests
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libgmock-dev
)

missing=()
for p in "${packages[@]}"; do
  if [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup: installing ${missing[*]}"
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: not root and no sudo; run as root" >&2; exit 1; }
    as_root=(sudo)
  fi
  apt=(${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get)
  "${apt[@]}" update
  "${apt[@]}" install -y "${missing[@]}"
else
  echo "setup: all ${#packages[@]} Debian packages are installed"
fi

# Keep the generator of an existing build directory (CMake refuses to switch it).
generator=()
if [[ ! -f $build_dir/CMakeCache.txt ]]; then generator=(-G Ninja); fi
cmake -S . -B "$build_dir" ${generator[@]+"${generator[@]}"} -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir"
