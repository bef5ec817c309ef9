#!/usr/bin/env python3
"""cuBLAS through PyTorch at the sizes texel_gemm_bench times, in the same compute modes: fp32
(TF32 off), tf32 and fp16 (f16 storage, fp32 accumulation), C = A B row-major: square sizes,
and --shapes MxNxK as texel_gemm_bench takes them. Each problem: warm-up, then R launches back to
back between two CUDA events (R filling about 0.3 s).

Usage: gemm_torch.py [--sizes 1024,2048,4096] [--shapes 128x2304x768,...] [--modes fp32,tf32,fp16]"""
import argparse

import torch


def time_one(fn, seconds=0.3):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    reps = max(1, int(seconds / max(start.elapsed_time(end) * 1e-3, 1e-6)))
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e-3 / reps


def time_graph(fn, per_graph=20, seconds=0.3):
    """The same through a CUDA graph of per_graph products, so that launching does not bound
    small products (torch's eager launch alone takes several microseconds)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_graph):
            fn()
    return time_one(graph.replay, seconds) / per_graph


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--modes", default="fp32,tf32,fp16")
    args = ap.parse_args()
    problems = [(int(n),) * 3 for n in args.sizes.split(",") if n]
    problems += [tuple(int(d) for d in s.split("x")) for s in args.shapes.split(",") if s]
    print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__})")
    print(f"{'MxNxK':>16}  {'mode':<6} {'ms':>9} {'TFLOP/s':>8}  (graph-replayed below 10 GFLOP)")
    for m, n, k in problems:
        a32 = torch.rand(m, k, device="cuda") * 2 - 1
        b32 = torch.rand(k, n, device="cuda") * 2 - 1
        for mode in args.modes.split(","):
            torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
            a, b = (a32.half(), b32.half()) if mode == "fp16" else (a32, b32)
            small = 2.0 * m * n * k < 1e10
            secs = (time_graph if small else time_one)(lambda: torch.matmul(a, b))
            label = f"{m}x{n}x{k}"
            print(f"{label:>16}  {mode:<6} {secs * 1e3:9.3f} {2.0 * m * n * k / secs * 1e-12:8.1f}")


if __name__ == "__main__":
    main()
