#!/usr/bin/python3
"""Exports torchvision models to ONNX, with an input and PyTorch's output, for texel's model tests.

For each model NAME this writes
  DIR/NAME/model.onnx   opset 13, input "input" (1x3x224x224 float32), output "output"
  DIR/NAME/input.npy    float32 standard normal, numpy RNG seeded with 0
  DIR/NAME/output.npy   PyTorch's float32 output on that input

Models are built with weights=None (no downloads) after torch.manual_seed(0). The defaults
would make every BatchNorm an identity (mean 0, var 1, weight 1, bias 0) that hides folding
bugs, so each BatchNorm gets a random weight and bias and running statistics measured on a
random calibration batch. The files are deterministic for a given torch/torchvision version;
existing ones are kept unless --force.

Usage: export_models.py --out DIR [--models squeezenet1_1,resnet18,mobilenet_v2] [--force]
"""

import argparse
import os
import sys
import time
import warnings

DEFAULT_MODELS = ["squeezenet1_1", "resnet18", "mobilenet_v2"]

# NAME -> extra keyword arguments for torchvision.models.NAME(weights=None, ...). All of these
# take a 1x3x224x224 input and return a single 1x1000 tensor in eval mode.
MODELS = {
    "squeezenet1_0": {},
    "squeezenet1_1": {},
    "alexnet": {},
    "vgg11": {},
    "vgg11_bn": {},
    "resnet18": {},
    "resnet34": {},
    "resnet50": {},
    "resnext50_32x4d": {},
    "wide_resnet50_2": {},
    "mobilenet_v2": {},
    "mobilenet_v3_small": {},
    "mobilenet_v3_large": {},
    "efficientnet_b0": {},
    "efficientnet_b1": {},
    "shufflenet_v2_x1_0": {},
    "mnasnet1_0": {},
    "densenet121": {},
    "regnet_x_400mf": {},
    "regnet_y_400mf": {},
    "googlenet": {"aux_logits": False, "init_weights": True},
    "convnext_tiny": {},
}

INPUT_SHAPE = (1, 3, 224, 224)
OPSET = 13
FILES = ("model.onnx", "input.npy", "output.npy")


def build_model(name):
    import torch
    import torchvision

    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None, **MODELS[name])
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for bn in bns:
            if bn.affine:
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)
        # Running statistics come from one calibration batch (momentum None: a plain average).
        # Merely random ones leave activations badly scaled: deep nets then saturate and
        # mobilenet_v2's output no longer depends on its input at all.
        momenta = [bn.momentum for bn in bns]
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None
        if bns:
            model.train()
            model(torch.randn(4, *INPUT_SHAPE[1:]))
        for bn, momentum in zip(bns, momenta):
            bn.momentum = momentum
    return model.eval()


def export(name, out_dir, keep_batchnorm):
    import numpy as np
    import onnx
    import torch

    model = build_model(name)
    x = np.random.default_rng(0).standard_normal(INPUT_SHAPE, dtype=np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x))
    if not isinstance(y, torch.Tensor):
        raise RuntimeError(f"{name}: the model returned {type(y).__name__}, not one tensor")
    y = y.numpy().astype(np.float32)
    if not np.isfinite(y).all():
        raise RuntimeError(f"{name}: PyTorch's output is not finite")

    # The exporter's default (TrainingMode.EVAL) fuses every Conv+BatchNorm pair itself, which
    # would leave no BatchNormalization node for texel to fold. PRESERVE on a model in eval mode
    # exports BatchNormalization in inference form instead.
    training = torch.onnx.TrainingMode.PRESERVE if keep_batchnorm else torch.onnx.TrainingMode.EVAL
    # torch warns about constant folding with PRESERVE even for a model in eval mode, where the
    # folding cannot touch learnable parameters.
    warnings.filterwarnings("ignore", message="It is recommended that constant folding")

    # Write to temporary names and rename, output last, so that an interrupted run never leaves
    # a complete-looking cache entry.
    os.makedirs(out_dir, exist_ok=True)
    paths = {f: os.path.join(out_dir, f) for f in FILES}
    tmp = {f: p + ".tmp" for f, p in paths.items()}
    # Newer torch defaults to the dynamo exporter; texel's tests use the TorchScript one.
    import inspect

    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(
        model,
        torch.from_numpy(x),
        tmp["model.onnx"],
        opset_version=OPSET,
        input_names=["input"],
        output_names=["output"],
        do_constant_folding=True,
        training=training,
        **extra,
    )
    proto = onnx.load(tmp["model.onnx"])
    onnx.checker.check_model(proto)
    with open(tmp["input.npy"], "wb") as f:
        np.save(f, x)
    with open(tmp["output.npy"], "wb") as f:
        np.save(f, y)
    for f in FILES:
        os.replace(tmp[f], paths[f])
    return proto


def describe(proto):
    nodes = proto.graph.node
    bn = sum(1 for n in nodes if n.op_type == "BatchNormalization")
    return f"{len(nodes)} nodes, {bn} BatchNormalization"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="output directory, one subdirectory per model")
    parser.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help="comma-separated model names (default: %(default)s); known: " + ", ".join(MODELS),
    )
    parser.add_argument("--force", action="store_true", help="re-export models already present")
    parser.add_argument(
        "--fuse-batchnorm",
        action="store_true",
        help="let the PyTorch exporter fuse Conv+BatchNorm (default: keep BatchNormalization)",
    )
    args = parser.parse_args()

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")

    failed = 0
    for name in names:
        out_dir = os.path.join(args.out, name)
        if not args.force and all(os.path.isfile(os.path.join(out_dir, f)) for f in FILES):
            print(f"{name}: cached in {out_dir}", flush=True)
            continue
        start = time.time()
        try:
            proto = export(name, out_dir, keep_batchnorm=not args.fuse_batchnorm)
        except Exception as e:  # report every model, then fail
            print(f"{name}: FAILED: {e}", flush=True)
            failed += 1
            continue
        size_mb = os.path.getsize(os.path.join(out_dir, "model.onnx")) / 1e6
        print(
            f"{name}: exported to {out_dir} ({size_mb:.1f} MB, {describe(proto)}) "
            f"in {time.time() - start:.1f}s",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
