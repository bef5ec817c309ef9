#!/usr/bin/env python3
"""texel and its peers on the same models and inputs, in one run: a latency table.

Usage:
  bench/compare.py --texel build/texel --models resnet18,mobilenet_v2 [--models-dir DIR]
                   [--peers onnxruntime,tinygrad,torch] [--device cpu|gpu] [--runs 50]
                   [--warmup 5] [--rounds 1] [--json FILE]

Models come from scripts/export_models.py (model.onnx, input.npy and PyTorch's output.npy in
DIR/NAME); missing ones are exported first with --export-python (it needs torch). Every system
gets the same input and is checked against PyTorch's output (relative L2) before it is timed, so
a fast wrong answer shows as wrong.

Latency is the median wall-clock time of one inference over --runs runs after --warmup, with the
input already where the system computes on (host memory for a CPU, device memory for a GPU) and
waiting until the result is complete:
  texel        `texel bench` (enqueue every kernel, clFinish)
  onnxruntime  InferenceSession.run, CPU execution provider on all cores
  tinygrad     its OpenCL device (CL) running the ONNX model through TinyJit, then synchronize
  torch        eager PyTorch (CUDA when --device gpu, float32, TF32 off), then synchronize
  torch_graph  PyTorch's CUDA-graph replay (float32, TF32 off), then synchronize
  torch_graph_tf32, torch_graph_fp16  the same with TF32 on / in half (channels_last for CNNs)
  texel_tf32, texel_tf32x3, texel_fp16  texel with --precision
  texel_unfused  texel without its merge-projections, attention and normalize passes
Each (model, system) pair is measured in its own process, so that no system's threads, caches
or device contexts linger into another's timing. With --rounds N each model's systems are
measured N times in turn (texel, peers, texel, peers, ...) and each reports the median of its
rounds' medians: on a shared machine whose speed drifts over minutes (up to 1.5x on the 2-core
CPU machine), systems measured minutes apart would otherwise compare the drift. Peers that
cannot run are reported with their error, not silently skipped.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def rel_l2(ref, got):
    ref = np.asarray(ref, dtype=np.float64).ravel()
    got = np.asarray(got, dtype=np.float64).ravel()
    if ref.shape != got.shape:
        return float("inf")
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def timed(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def input_files(d):
    """Every model input file of DIR: input.npy and one NAME.npy per further input."""
    return {f[:-4]: os.path.join(d, f) for f in sorted(os.listdir(d))
            if f.endswith(".npy") and f != "output.npy"}


def run_texel(args, d, x, extra=()):
    device = ["--device", args.device]
    inputs = [a for n, f in input_files(d).items() for a in ("--input", f"{n}={f}")]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([args.texel, "run", f"{d}/model.onnx", "-o", tmp, "--repeat", "1",
                        "--warmup", "0"] + inputs + device + list(extra),
                       check=True, stdout=subprocess.DEVNULL)
        out = np.load(os.path.join(tmp, "output.npy"))
        js = os.path.join(tmp, "bench.json")
        subprocess.run([args.texel, "bench", f"{d}/model.onnx", "--repeat", str(args.runs),
                        "--warmup", str(args.warmup), "--top", "1", "--json", js]
                       + inputs + device + list(extra), check=True, stdout=subprocess.DEVNULL)
        with open(js) as f:
            j = json.load(f)
        return j["latency_ms"]["median"], out, j["kernels"]


def run_texel_unfused(args, d, x):
    """texel without its transformer passes: what they buy, in the same run."""
    off = [a for p in ("merge-projections", "attention", "normalize") for a in ("--disable-pass", p)]
    return run_texel(args, d, x, off)


def run_onnxruntime(args, d, x):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = os.cpu_count()
    sess = ort.InferenceSession(f"{d}/model.onnx", opts, providers=["CPUExecutionProvider"])
    feed = {"input": x}
    out = sess.run(None, feed)[0]
    return timed(lambda: sess.run(None, feed), args.runs, args.warmup), out


def run_tinygrad(args, d, x):
    os.environ["DEV"] = "CL"  # tinygrad's OpenCL backend, on the same OpenCL driver as texel
    from tinygrad import Device, Tensor, TinyJit
    from tinygrad.nn.onnx import OnnxRunner

    runner = OnnxRunner(f"{d}/model.onnx")
    inp = Tensor(x).realize()
    step = TinyJit(lambda t: next(iter(runner({"input": t}).values())).realize())

    def once():
        y = step(inp)
        Device["CL"].synchronize()
        return y

    out = once().numpy()
    return timed(once, args.runs, args.warmup), out


def run_torch(args, d, x):
    import torch
    import export_models

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda" if args.device == "gpu" else "cpu"
    model = export_models.build_model(os.path.basename(d)).to(dev).eval()
    inp = torch.from_numpy(x).to(dev)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)

    def once():
        with torch.no_grad():
            y = model(inp)
        sync()
        return y

    out = once().cpu().numpy()
    return timed(once, args.runs, args.warmup), out


def run_torch_graph(args, d, x, mode="fp32"):
    """PyTorch's fastest path without extra tools: the model captured once in a CUDA graph and
    replayed; fp32 with TF32 off, tf32 (TF32 on for matrix products and convolutions) or fp16
    (weights and float inputs in half, channels_last for 4-D inputs)."""
    import torch
    import export_models

    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
    torch.backends.cudnn.allow_tf32 = mode == "tf32"
    model = export_models.build_model(os.path.basename(d)).cuda().eval()
    inps = [torch.from_numpy(np.load(f)).cuda() for f in input_files(d).values()]
    if mode == "fp16":
        model = model.half()
        inps = [t.half() if t.is_floating_point() else t for t in inps]
        if inps[0].dim() == 4:
            model = model.to(memory_format=torch.channels_last)
            inps = [t.to(memory_format=torch.channels_last) if t.dim() == 4 else t for t in inps]
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(*inps)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = model(*inps)

    def once():
        graph.replay()
        torch.cuda.synchronize()
        return y

    out = once().float().cpu().numpy()
    return timed(once, args.runs, args.warmup), out


PEERS = {"onnxruntime": run_onnxruntime, "tinygrad": run_tinygrad, "torch": run_torch,
         "torch_graph": run_torch_graph, "texel_unfused": run_texel_unfused}
# Reduced precision (docs/precision.md): PyTorch's graph in TF32 and fp16, texel's --precision.
for _mode in ("tf32", "fp16"):
    PEERS[f"torch_graph_{_mode}"] = lambda a, d, x, m=_mode: run_torch_graph(a, d, x, m)
for _mode in ("tf32", "tf32x3", "fp16"):
    PEERS[f"texel_{_mode}"] = lambda a, d, x, m=_mode: run_texel(a, d, x, ["--precision", m])


def measure_one(args, model, system):
    """Runs inside a child process: prints {"ms", "rel_l2"} or {"error"} as JSON."""
    d = f"{args.models_dir}/{model}"
    x = np.load(f"{d}/input.npy")
    ref = np.load(f"{d}/output.npy")
    fn = run_texel if system == "texel" else PEERS[system]
    try:
        ms, out, *kernels = fn(args, d, x)
        result = {"ms": ms, "rel_l2": rel_l2(ref, out)}
        if kernels:
            result["kernels"] = kernels[0]
    except Exception as e:  # a peer that cannot run a model is a result too
        msg = str(e).strip().splitlines()
        result = {"error": f"{type(e).__name__}: {msg[-1] if msg else ''}"[:120]}
    print("RESULT " + json.dumps(result), flush=True)


def measure(args, model, system):
    cmd = [sys.executable, os.path.abspath(__file__), "--one", f"{model}:{system}"]
    for flag in ("texel", "models_dir", "device", "runs", "warmup"):
        cmd += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    cmd += ["--models", model]
    p = subprocess.run(cmd, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit {p.returncode}: {tail}"[:120]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texel", required=True, help="the texel binary")
    ap.add_argument("--models", required=True, help="comma-separated names (export_models.py)")
    ap.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--export-python", default="/usr/bin/python3")
    ap.add_argument("--peers", default="onnxruntime,tinygrad")
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1, help="measurements of each system, in turn")
    ap.add_argument("--json", help="also write the table as JSON")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # MODEL:SYSTEM, in a child process
    args = ap.parse_args()
    if args.one:
        measure_one(args, *args.one.split(":"))
        return
    models = [m for m in args.models.split(",") if m]
    peers = [p for p in args.peers.split(",") if p]
    for p in peers:
        if p not in PEERS:
            ap.error(f"unknown peer '{p}' (known: {', '.join(PEERS)})")

    missing = [m for m in models if not os.path.exists(f"{args.models_dir}/{m}/output.npy")]
    if missing:
        subprocess.run([args.export_python, os.path.join(ROOT, "scripts", "export_models.py"),
                        "--out", args.models_dir, "--models", ",".join(missing)], check=True)

    systems = ["texel"] + peers
    results = {}
    for m in models:
        rounds = {s: [] for s in systems}
        for _ in range(max(1, args.rounds)):
            for s in systems:
                rounds[s].append(measure(args, m, s))
                print(f"{m:24s} {s:12s} {rounds[s][-1]}", file=sys.stderr, flush=True)
        for s in systems:
            timed = [r for r in rounds[s] if "ms" in r]
            # A system that failed in any round reports that failure, not a median of the rest.
            results[(m, s)] = (dict(timed[0], ms=statistics.median(r["ms"] for r in timed))
                               if len(timed) == len(rounds[s]) else
                               next(r for r in rounds[s] if "ms" not in r))

    in_turn = f", median of {args.rounds} rounds in turn" if args.rounds > 1 else ""
    print(f"\nmedian latency in ms ({args.device}, {args.runs} runs after {args.warmup} warm-up"
          f"{in_turn}); "
          "x = peer time / texel time; rel L2 vs PyTorch's output in brackets")
    header = f"| model | texel | " + " | ".join(peers) + " |"
    print(header)
    print("|" + "---|" * (2 + len(peers)))
    for m in models:
        t = results[(m, "texel")]
        kernels = lambda r: f", {r['kernels']} kernels" if "kernels" in r else ""
        cells = [f"{t['ms']:.3f}{kernels(t)} [{t['rel_l2']:.1e}]" if "ms" in t else t["error"]]
        for p in peers:
            r = results[(m, p)]
            if "ms" not in r:
                cells.append(r["error"])
                continue
            ratio = f", {r['ms'] / t['ms']:.2f}x" if "ms" in t else ""
            cells.append(f"{r['ms']:.3f}{ratio}{kernels(r)} [{r['rel_l2']:.1e}]")
        print(f"| {m} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{m}/{s}": r for (m, s), r in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
