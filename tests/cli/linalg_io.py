#!/usr/bin/python3
"""Writes the inputs of the CLI run of tests/data/matmul_add.mlir and its expected output.

Usage: linalg_io.py OUT_DIR
Writes OUT_DIR/arg0.npy (64x128), OUT_DIR/arg1.npy (128x128), seeded uniform in [-1, 1], and
OUT_DIR/arg2_expected.npy = arg0 @ arg1 + arg0 (computed in float64, stored as float32).
"""

import os
import sys

import numpy as np


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(42)
    a = rng.uniform(-1, 1, (64, 128)).astype(np.float32)
    b = rng.uniform(-1, 1, (128, 128)).astype(np.float32)
    np.save(os.path.join(out, "arg0.npy"), a)
    np.save(os.path.join(out, "arg1.npy"), b)
    want = a.astype(np.float64) @ b.astype(np.float64) + a
    np.save(os.path.join(out, "arg2_expected.npy"), want.astype(np.float32))


if __name__ == "__main__":
    main()
