#!/usr/bin/env python3
"""cuBLAS through PyTorch at the sizes texel_gemm_bench times, in the same compute modes: fp32
(TF32 off), tf32 and fp16 (f16 storage, fp32 accumulation), C = A B row-major, square. Each
size: warm-up, then R launches back to back between two CUDA events (R filling about 0.3 s).

Usage: gemm_torch.py [--sizes 1024,2048,4096] [--modes fp32,tf32,fp16]"""
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--modes", default="fp32,tf32,fp16")
    args = ap.parse_args()
    print(f"device: {torch.cuda.get_device_name()} (torch {torch.__version__})")
    print(f"{'n':>6}  {'mode':<6} {'ms':>9} {'TFLOP/s':>8}")
    for n in [int(s) for s in args.sizes.split(",")]:
        a32 = torch.rand(n, n, device="cuda") * 2 - 1
        b32 = torch.rand(n, n, device="cuda") * 2 - 1
        for mode in args.modes.split(","):
            torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
            a, b = (a32.half(), b32.half()) if mode == "fp16" else (a32, b32)
            secs = time_one(lambda: torch.matmul(a, b))
            print(f"{n:>6}  {mode:<6} {secs * 1e3:9.3f} {2.0 * n**3 / secs * 1e-12:8.1f}")


if __name__ == "__main__":
    main()
