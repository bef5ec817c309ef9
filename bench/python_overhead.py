#!/usr/bin/env python3
"""The Python package's run overhead over the C API, on one model and device.

Times InferenceSession.run (inputs checked and copied in, fresh output arrays, the GIL released)
against texel_capi_run_bench (texel_session_run on memory bound once), in alternating rounds so
that both see the same machine state; prints each side's median over all runs and the ratio.

    PYTHONPATH=build/python python3 bench/python_overhead.py build/models/squeezenet1_1/model.onnx \
        --capi-bench build/bench/texel_capi_run_bench
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import texel


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="MODEL.onnx or MODEL.texel")
    p.add_argument("--capi-bench", required=True, help="texel_capi_run_bench")
    p.add_argument("--runs", type=int, default=100, help="timed runs per round and side")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        artifact = args.model
        if not texel.is_artifact(artifact):  # both sides load the same artifact, binary included
            artifact = os.path.join(tmp, "model.texel")
            texel.compile(args.model).save(artifact, binaries=True)
        sess = texel.InferenceSession(artifact)
        rng = np.random.default_rng(0)
        feed = {i.name: rng.standard_normal(i.shape).astype(i.dtype) for i in sess.get_inputs()}
        for _ in range(5):
            sess.run(None, feed)
        c_times, py_times = [], []
        for _ in range(args.rounds):
            out = subprocess.run([args.capi_bench, artifact, str(args.runs)], check=True,
                                 capture_output=True, text=True).stdout
            c_times += [float(line) for line in out.split()]
            for _ in range(args.runs):
                start = time.perf_counter()
                sess.run(None, feed)
                py_times.append((time.perf_counter() - start) * 1e3)
    c, py = statistics.median(c_times), statistics.median(py_times)
    print(f"device   {sess.model.device}")
    print(f"C API    median {c:.3f} ms over {len(c_times)} runs")
    print(f"Python   median {py:.3f} ms over {len(py_times)} runs")
    print(f"overhead {100 * (py / c - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
