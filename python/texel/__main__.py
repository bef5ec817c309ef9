"""python -m texel run|compile|devices: the CLI's main jobs through the Python package.

    python -m texel run model.onnx [-i NAME=FILE.npy] [-o DIR] [-r N] [-d DEVICE] ...
    python -m texel compile model.onnx -o model.texel [--binaries]
    python -m texel devices
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import texel


def _assignments(items, flag):
    out = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        if not eq or not name or not value:
            raise texel.InvalidArgumentError(f"{flag} {item}: expected NAME=VALUE")
        if name in out:
            raise texel.InvalidArgumentError(f"{flag} {name}: given twice")
        out[name] = value
    return out


def _model(args) -> texel.Model:
    if texel.is_artifact(args.model):
        return texel.load(args.model, args.device)
    shapes = {n: [int(d) for d in v.split("x")]
              for n, v in _assignments(args.input_shape, "--input-shape").items()}
    return texel.compile(args.model, args.device, precision=args.precision,
                         storage=args.storage, backends=args.backends,
                         partition=args.partition, input_shapes=shapes)


def _random(info, rng) -> np.ndarray:
    # As `texel run`: standard normal floats, integers in [0, 10), booleans 0/1 (other values
    # than the CLI's, which draws from its own generator).
    dtype = np.dtype(info.dtype)
    if dtype.kind == "f":
        return rng.standard_normal(info.shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, info.shape).astype(dtype)
    return rng.integers(0, 10, info.shape).astype(dtype)


def _summary(x: np.ndarray, top: int) -> str:
    if x.size == 0:
        return "empty"
    v = x.astype(np.float64).ravel()
    s = f"min {v.min():.6g}  max {v.max():.6g}  mean {v.mean():.6g}"
    if top > 0 and x.dtype.kind == "f":
        k = min(top, v.size)
        idx = np.argsort(-v, kind="stable")[:k]
        s += f"\n    top-{k}:" + "".join(f"  [{i}] {v[i]:.6g}" for i in idx)
    return s


def _run(args) -> int:
    model = _model(args)
    sess = texel.InferenceSession(model)
    given = _assignments(args.input, "--input")
    names = [i.name for i in model.inputs]
    for name in given:
        if name not in names:
            raise texel.NotFoundError(f"--input {name}: not an input (inputs: {', '.join(names)})")
    rng = np.random.default_rng(args.seed)
    feed = {i.name: np.load(given[i.name]) if i.name in given else _random(i, rng)
            for i in model.inputs}
    for _ in range(args.warmup):
        sess.run(None, feed)
    times = []
    for _ in range(max(args.repeat, 1)):
        start = time.perf_counter()
        outputs = sess.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    print(f"device   {model.device}")
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
    for info, x in zip(model.outputs, outputs):
        print(f"output   {info.name}: {x.dtype}[{'x'.join(map(str, x.shape))}]  "
              f"{_summary(x, args.top)}")
        if args.output_dir:
            safe = info.name.replace("/", "_").replace("\\", "_")
            np.save(os.path.join(args.output_dir, safe + ".npy"), x)
    print(f"latency  median {times[len(times) // 2]:.3f} ms over {len(times)} runs "
          f"(min {times[0]:.3f}, max {times[-1]:.3f}; with the copies in and out)")
    return 0


def _compile(args) -> int:
    model = _model(args)
    model.save(args.output, binaries=args.binaries)
    print(f"wrote {args.output} for {model.device}")
    return 0


def _devices(args) -> int:
    for d in texel.devices():
        print(f"[{d.label}] {d.type}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m texel", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (("run", "compile (or load) a model, run it, print its outputs"),
                           ("compile", "compile a model into a .texel artifact")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("model", help="MODEL.onnx, FRAGMENT.mlir or MODEL.texel")
        p.add_argument("-d", "--device", default=None)
        p.add_argument("--input-shape", action="append", help="NAME=DIMS (repeatable)")
        p.add_argument("--precision")
        p.add_argument("--storage")
        p.add_argument("--backends")
        p.add_argument("--partition")
    run = sub.choices["run"]
    run.add_argument("-i", "--input", action="append", help="NAME=FILE.npy (repeatable)")
    run.add_argument("-o", "--output-dir")
    run.add_argument("-r", "--repeat", type=int, default=10)
    run.add_argument("--warmup", type=int, default=2)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--top", type=int, default=5)
    run.set_defaults(func=_run)
    comp = sub.choices["compile"]
    comp.add_argument("-o", "--output", required=True, help="FILE.texel")
    comp.add_argument("--binaries", action="store_true")
    comp.set_defaults(func=_compile)
    sub.add_parser("devices", help="list the OpenCL devices").set_defaults(func=_devices)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (texel.Error, OSError, ValueError) as e:
        print(f"texel: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
