#!/usr/bin/python3
"""Compares an actual .npy output against the expected one by relative L2 error.

Usage: compare_npy.py EXPECTED.npy ACTUAL.npy [--rel-l2 1e-4]

Prints one line, `NAME: rel_l2=... max_abs=... OK` or a line with FAIL, and exits 1 on
failure: a missing or unreadable file, a shape mismatch, a non-finite value or an error above
the tolerance.
"""

import argparse
import os
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("expected", help="reference .npy file")
    parser.add_argument("actual", help=".npy file to check")
    parser.add_argument(
        "--rel-l2",
        type=float,
        default=1e-4,
        help="tolerance on ||actual - expected|| / ||expected|| (default: %(default)g)",
    )
    args = parser.parse_args()
    # Name the comparison after the model directory when the file is DIR/NAME/output.npy.
    name = os.path.basename(os.path.dirname(os.path.abspath(args.expected))) or args.expected
    name = f"{name}/{os.path.basename(args.expected)}"

    def fail(why):
        print(f"{name}: FAIL ({why})")
        return 1

    arrays = []
    for path in (args.expected, args.actual):
        try:
            arrays.append(np.load(path, allow_pickle=False))
        except Exception as e:  # OSError, ValueError, EOFError for empty files, ...
            return fail(f"cannot read {path}: {e}")
    expected, actual = arrays
    if expected.shape != actual.shape:
        return fail(f"shape mismatch: expected {expected.shape}, actual {actual.shape}")
    if expected.dtype != actual.dtype:
        # Not an error by itself (e.g. f16 vs f32 outputs); the values decide.
        print(f"{name}: note: dtype {actual.dtype}, expected {expected.dtype}")

    e = expected.astype(np.float64)
    a = actual.astype(np.float64)
    if not np.isfinite(a).all():
        bad = int(np.size(a) - np.isfinite(a).sum())
        return fail(f"{bad} of {a.size} actual values are NaN or infinite")
    diff = a - e
    norm_e = np.linalg.norm(e)
    norm_d = np.linalg.norm(diff)
    # An all-zero reference only matches an all-zero result.
    rel = norm_d / norm_e if norm_e > 0 else (0.0 if norm_d == 0 else float("inf"))
    max_abs = float(np.abs(diff).max()) if diff.size else 0.0
    figures = f"rel_l2={rel:.3g} max_abs={max_abs:.3g}"
    if not rel <= args.rel_l2:  # also catches NaN in the reference
        print(f"{name}: {figures} FAIL (tolerance {args.rel_l2:g})")
        return 1
    print(f"{name}: {figures} OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
