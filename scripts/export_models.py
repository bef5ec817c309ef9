#!/usr/bin/python3
"""Exports models to ONNX, with an input and PyTorch's output, for texel's model tests.

For each model NAME this writes
  DIR/NAME/model.onnx   input "input", output "output"; the opset is per model (MODELS)
  DIR/NAME/input.npy    the input, numpy RNG seeded with 0: float32 standard normal
                        (1x3x224x224 for the image models) or int64 token ids
  DIR/NAME/<name>.npy   each further input of a model that has more (Spec.extra_inputs), e.g.
                        bert_masked's attention_mask.npy
  DIR/NAME/output.npy   PyTorch's float32 output on those inputs

The models are torchvision classifiers (1x3x224x224 in, 1x1000 out), a torchvision
segmentation model that returns only its 'out' map, and transformers built from torch.nn: a
BERT-style encoder ([1, 128] int64 token ids in, [1, 128, 256] hidden states out), the same with
hand-written attention and an attention_mask input (bert_masked), and a GPT-2-style causal
decoder ([1, 64] ids in, [1, 64, 256] out; gpt2_decoder). Each is built with
weights=None (no downloads) after torch.manual_seed(0). The defaults would make every
BatchNorm an identity (mean 0, var 1, weight 1, bias 0) that hides folding bugs, so each
BatchNorm gets a random weight and bias and running statistics measured on a random
calibration batch. The files are deterministic for a given torch/torchvision version;
existing ones are kept unless --force.

The summary line per model gives the relative change of PyTorch's output on a second random
input. A value near 0 means the output hardly depends on the input, and the comparison then
mostly checks the ops after the point where it stops mattering (op coverage more than
accuracy).

Usage: export_models.py --out DIR [--models squeezenet1_1,resnet18,mobilenet_v2] [--force]
"""

import argparse
import dataclasses
import os
import sys
import time
import typing
import warnings

DEFAULT_MODELS = ["squeezenet1_1", "resnet18", "mobilenet_v2"]


@dataclasses.dataclass(frozen=True)
class Spec:
    """How to build and export one model.

    build: a function returning the torch.nn.Module (called right after torch.manual_seed(0));
    input_shape, input_dtype: the first input "input" ("float32": standard normal; "int64":
    uniform integers in [0, input_high)); extra_inputs: further inputs, in the order forward()
    takes them after "input", as (name, make) pairs where make(rng) returns the numpy array
    (rng: the numpy Generator that made "input"); opset: the ONNX opset to export with.
    """

    build: typing.Callable
    input_shape: tuple = (1, 3, 224, 224)
    input_dtype: str = "float32"
    input_high: int = 0
    extra_inputs: tuple = ()
    opset: int = 13


def torchvision_model(name, opset=13, init=None, **kwargs):
    """A torchvision classifier: 1x3x224x224 input, a single 1x1000 tensor out in eval mode.
    init, if given, changes the freshly built model's weights in place."""

    def build():
        import torchvision

        model = getattr(torchvision.models, name)(weights=None, **kwargs)
        if init is not None:
            init(model)
        return model

    return Spec(build=build, opset=opset)


def random_vit_head(model):
    """torchvision's ViT zero-initializes its classification head, which makes the output all
    zeros whatever the input; give it random weights instead."""
    import torch

    with torch.no_grad():
        torch.nn.init.normal_(model.heads.head.weight, std=0.02)


def strong_layer_scale(model):
    """torchvision's ConvNeXt starts every block's layer scale at 1e-6, which makes the blocks
    near-identities that a comparison cannot check; scale them to O(0.1) instead."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layer_scale"):
                p.uniform_(0.05, 0.3)


def segmentation_model(name, opset=13):
    """A torchvision segmentation model (no pretrained backbone) returning only the 'out' map,
    upsampled to the input size by a Resize inside the graph."""

    def build():
        import torch
        import torchvision

        class OutOnly(torch.nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, x):
                return self.model(x)["out"]

        return OutOnly(
            getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)
        )

    return Spec(build=build, opset=opset)


def bert_encoder(vocab=1000, seq=128, d_model=256, nhead=4, dim_feedforward=1024, layers=2):
    """A BERT-style encoder from torch.nn: token and learned position embeddings, post-norm
    TransformerEncoder layers (ReLU, no dropout) and a final LayerNorm. Input: [1, seq] int64
    token ids; output: the final hidden states [1, seq, d_model]."""

    def build():
        import torch

        class BertEncoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.tokens = torch.nn.Embedding(vocab, d_model)
                self.positions = torch.nn.Parameter(0.1 * torch.randn(1, seq, d_model))
                layer = torch.nn.TransformerEncoderLayer(
                    d_model=d_model,
                    nhead=nhead,
                    dim_feedforward=dim_feedforward,
                    dropout=0.0,
                    batch_first=True,
                )
                self.encoder = torch.nn.TransformerEncoder(layer, num_layers=layers)
                self.norm = torch.nn.LayerNorm(d_model)

            def forward(self, ids):
                return self.norm(self.encoder(self.tokens(ids) + self.positions))

        return BertEncoder()

    # Opset 17 keeps each LayerNorm one LayerNormalization node (earlier opsets decompose it).
    return Spec(
        build=build, input_shape=(1, seq), input_dtype="int64", input_high=vocab, opset=17
    )


def random_layer_norms(model):
    """LayerNorm starts as weight 1, bias 0, which would hide a lost scale or shift; give each a
    random weight in [0.5, 1.5) and bias in [-0.2, 0.2) instead."""
    import torch

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return model


def gpt2_decoder(vocab=1000, seq=64, d_model=256, nhead=4, dim_feedforward=1024, layers=2):
    """A GPT-2-style causal decoder from torch.nn, its attention written out the way Hugging
    Face's GPT2Attention writes it: token and learned position embeddings, pre-norm blocks whose
    attention is one fused c_attn Linear split into q, k and v, heads by view and transpose,
    q @ k^T / sqrt(head_dim), a causal mask from torch.tril(torch.ones(S, S)) applied with
    torch.where(mask, scores, finfo(float32).min), a softmax between a .float() and a .to(dtype)
    (two Casts in the graph), @ v, heads merged by transpose and reshape, then c_proj; the MLP is
    c_fc, tanh GELU, c_proj; a final LayerNorm. Input: [1, seq] int64 token ids; output: the final
    hidden states [1, seq, d_model]."""

    def build():
        import math

        import torch

        class Attention(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.c_attn = torch.nn.Linear(d_model, 3 * d_model)
                self.c_proj = torch.nn.Linear(d_model, d_model)

            def forward(self, h):
                b, s, _ = h.shape
                head_dim = d_model // nhead
                q, k, v = self.c_attn(h).split(d_model, dim=2)
                q, k, v = (t.view(b, s, nhead, head_dim).transpose(1, 2) for t in (q, k, v))
                scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)
                causal = torch.tril(torch.ones(s, s, device=h.device)).to(torch.bool).view(1, 1, s, s)
                min_value = torch.full([], torch.finfo(torch.float32).min, dtype=scores.dtype, device=h.device)
                scores = torch.where(causal, scores, min_value)
                probs = torch.softmax(scores.float(), dim=-1).to(v.dtype)
                out = (probs @ v).transpose(1, 2).reshape(b, s, d_model)
                return self.c_proj(out)

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.ln_1 = torch.nn.LayerNorm(d_model)
                self.attn = Attention()
                self.ln_2 = torch.nn.LayerNorm(d_model)
                self.mlp = torch.nn.Sequential(
                    torch.nn.Linear(d_model, dim_feedforward),  # c_fc
                    torch.nn.GELU(approximate="tanh"),
                    torch.nn.Linear(dim_feedforward, d_model),  # c_proj
                )

            def forward(self, h):
                h = h + self.attn(self.ln_1(h))
                return h + self.mlp(self.ln_2(h))

        class Gpt2Decoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.wte = torch.nn.Embedding(vocab, d_model)
                self.wpe = torch.nn.Embedding(seq, d_model)
                self.h = torch.nn.ModuleList(Block() for _ in range(layers))
                self.ln_f = torch.nn.LayerNorm(d_model)

            def forward(self, ids):
                positions = torch.arange(ids.shape[1], dtype=torch.long, device=ids.device).unsqueeze(0)
                h = self.wte(ids) + self.wpe(positions)
                for block in self.h:
                    h = block(h)
                return self.ln_f(h)

        return random_layer_norms(Gpt2Decoder())

    # Opset 14: every LayerNorm decomposes (ReduceMean, Sub, Pow, Sqrt, Div, ...), unlike in
    # bert_encoder; Trilu needs 14.
    return Spec(
        build=build, input_shape=(1, seq), input_dtype="int64", input_high=vocab, opset=14
    )


def padding_mask(seq, padding):
    """A make function for Spec.extra_inputs: an int64 [1, seq] attention mask, ones then
    `padding` zeros."""

    def make(rng):
        import numpy as np

        mask = np.ones((1, seq), dtype=np.int64)
        mask[:, seq - padding :] = 0
        return mask

    return make


def bert_masked(
    vocab=1000, seq=128, padding=28, d_model=256, nhead=4, dim_feedforward=1024, layers=2
):
    """A BERT-style encoder from torch.nn written out the way Hugging Face's BertModel writes
    it, with a padding mask: token and position embeddings and a LayerNorm, then post-norm
    layers with separate query, key and value Linears, heads by view and permute,
    q @ k^T / sqrt(head_dim) plus the extended mask (1 - mask[:, None, None, :].float()) *
    finfo(float32).min, softmax, @ v, heads merged, dense + residual + LayerNorm, and an erf
    GELU FFN with its own dense + residual + LayerNorm. Inputs: "input", [1, seq] int64 token
    ids, and "attention_mask", [1, seq] int64, ones then `padding` zeros; output: the final
    hidden states [1, seq, d_model]."""

    def build():
        import math

        import torch

        class SelfAttention(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.query = torch.nn.Linear(d_model, d_model)
                self.key = torch.nn.Linear(d_model, d_model)
                self.value = torch.nn.Linear(d_model, d_model)

            def heads(self, t):
                b, s, _ = t.shape
                return t.view(b, s, nhead, d_model // nhead).permute(0, 2, 1, 3)

            def forward(self, h, extended_mask):
                q, k, v = (self.heads(f(h)) for f in (self.query, self.key, self.value))
                scores = q @ k.transpose(-1, -2) / math.sqrt(d_model // nhead)
                probs = torch.softmax(scores + extended_mask, dim=-1)
                out = (probs @ v).permute(0, 2, 1, 3).contiguous()
                return out.view(out.shape[0], out.shape[1], d_model)

        class Layer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.attention = SelfAttention()
                self.attention_dense = torch.nn.Linear(d_model, d_model)
                self.attention_norm = torch.nn.LayerNorm(d_model, eps=1e-12)
                self.intermediate = torch.nn.Linear(d_model, dim_feedforward)
                self.gelu = torch.nn.GELU()
                self.output = torch.nn.Linear(dim_feedforward, d_model)
                self.output_norm = torch.nn.LayerNorm(d_model, eps=1e-12)

            def forward(self, h, extended_mask):
                a = self.attention_norm(self.attention_dense(self.attention(h, extended_mask)) + h)
                return self.output_norm(self.output(self.gelu(self.intermediate(a))) + a)

        class BertMasked(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.word_embeddings = torch.nn.Embedding(vocab, d_model)
                self.position_embeddings = torch.nn.Embedding(seq, d_model)
                self.embeddings_norm = torch.nn.LayerNorm(d_model, eps=1e-12)
                self.layers = torch.nn.ModuleList(Layer() for _ in range(layers))

            def forward(self, ids, attention_mask):
                positions = torch.arange(ids.shape[1], dtype=torch.long, device=ids.device).unsqueeze(0)
                h = self.word_embeddings(ids) + self.position_embeddings(positions)
                h = self.embeddings_norm(h)
                extended = attention_mask[:, None, None, :].float()
                extended = (1.0 - extended) * torch.finfo(torch.float32).min
                for layer in self.layers:
                    h = layer(h, extended)
                return h

        return random_layer_norms(BertMasked())

    return Spec(
        build=build,
        input_shape=(1, seq),
        input_dtype="int64",
        input_high=vocab,
        extra_inputs=(("attention_mask", padding_mask(seq, padding)),),
        opset=17,
    )


def Sdpa(causal=False):
    """softmax(q kᵀ / 8) v over one input holding q, k and v stacked on the first axis; with
    causal, keys after the query masked out by torch.where on a tril mask."""
    import torch

    class Sdpa(torch.nn.Module):
        def forward(self, x):
            q, k, v = x[0:1], x[1:2], x[2:3]
            scores = q @ k.transpose(-1, -2) / 8.0
            if causal:
                s = x.shape[2]
                keep = torch.tril(torch.ones(s, s, dtype=torch.bool, device=x.device))
                fill = torch.tensor(torch.finfo(torch.float32).min, device=x.device)
                scores = torch.where(keep, scores, fill)
            return torch.softmax(scores, dim=-1) @ v

    return Sdpa()


MODELS = {
    "squeezenet1_0": torchvision_model("squeezenet1_0"),
    "squeezenet1_1": torchvision_model("squeezenet1_1"),
    "alexnet": torchvision_model("alexnet"),
    "vgg11": torchvision_model("vgg11"),
    "vgg11_bn": torchvision_model("vgg11_bn"),
    "resnet18": torchvision_model("resnet18"),
    "resnet34": torchvision_model("resnet34"),
    "resnet50": torchvision_model("resnet50"),
    "resnext50_32x4d": torchvision_model("resnext50_32x4d"),
    "wide_resnet50_2": torchvision_model("wide_resnet50_2"),
    "mobilenet_v2": torchvision_model("mobilenet_v2"),
    "mobilenet_v3_small": torchvision_model("mobilenet_v3_small"),
    "mobilenet_v3_large": torchvision_model("mobilenet_v3_large"),
    "efficientnet_b0": torchvision_model("efficientnet_b0"),
    "efficientnet_b1": torchvision_model("efficientnet_b1"),
    "shufflenet_v2_x1_0": torchvision_model("shufflenet_v2_x1_0"),
    "mnasnet1_0": torchvision_model("mnasnet1_0"),
    "densenet121": torchvision_model("densenet121"),
    "regnet_x_400mf": torchvision_model("regnet_x_400mf"),
    "regnet_y_400mf": torchvision_model("regnet_y_400mf"),
    "googlenet": torchvision_model("googlenet", aux_logits=False, init_weights=True),
    "convnext_tiny": torchvision_model("convnext_tiny", init=strong_layer_scale),
    "vit_b_16": torchvision_model("vit_b_16", opset=14, init=random_vit_head),
    "swin_t": torchvision_model("swin_t", opset=14),
    # Attention alone at sequence 1024, 12 heads, head dim 64: the attention kernel's benchmark.
    "sdpa_1024": Spec(build=lambda: Sdpa(), input_shape=(3, 12, 1024, 64), opset=14),
    # A small causal one for oclgrind (tests/models/oclgrind_attention.sh).
    "sdpa_causal_small": Spec(build=lambda: Sdpa(causal=True), input_shape=(3, 2, 130, 64), opset=14),
    "bert_encoder": bert_encoder(),
    # BERT-base width (d 768, 12 heads, FFN 3072), 4 layers, sequence 128: issue 4's target.
    "bert_base4": bert_encoder(vocab=30522, d_model=768, nhead=12, dim_feedforward=3072, layers=4),
    # Attention written out as Hugging Face writes it: masks built in the graph (Trilu, Where)
    # and given as an input (attention_mask), softmax between Casts, decomposed LayerNorm.
    "gpt2_decoder": gpt2_decoder(),
    "bert_masked": bert_masked(),
    "lraspp_mobilenet_v3_large": segmentation_model("lraspp_mobilenet_v3_large"),
    "deeplabv3_mobilenet_v3_large": segmentation_model("deeplabv3_mobilenet_v3_large"),
    "fcn_resnet50": segmentation_model("fcn_resnet50"),
}

def files_of(spec):
    """The files exported for a model, output.npy last (written last: a complete entry)."""
    extra = tuple(f"{name}.npy" for name, _ in spec.extra_inputs)
    return ("model.onnx", "input.npy") + extra + ("output.npy",)


def make_input(spec, rng):
    import numpy as np

    if spec.input_dtype == "float32":
        return rng.standard_normal(spec.input_shape, dtype=np.float32)
    if spec.input_dtype == "int64":
        return rng.integers(0, spec.input_high, size=spec.input_shape, dtype=np.int64)
    raise ValueError(f"unsupported input dtype {spec.input_dtype}")


def make_inputs(spec, rng):
    """Every input of the model by name, "input" first, in the order forward() takes them."""
    inputs = {"input": make_input(spec, rng)}
    for name, make in spec.extra_inputs:
        inputs[name] = make(rng)
    return inputs


# --image-size: the image models' input height and width (default 224).
IMAGE_SIZE = None


def spec_of(name):
    spec = MODELS[name]
    if IMAGE_SIZE and len(spec.input_shape) == 4:
        spec = dataclasses.replace(spec, input_shape=(1, 3, IMAGE_SIZE, IMAGE_SIZE))
    return spec


def build_model(name):
    import torch

    spec = spec_of(name)
    torch.manual_seed(0)
    model = spec.build()
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
            if spec.input_dtype != "float32":
                raise ValueError(f"{name}: BatchNorm calibration needs a float input")
            model.train()
            model(torch.randn(4, *spec.input_shape[1:]))
        for bn, momentum in zip(bns, momenta):
            bn.momentum = momentum
    return model.eval()


def export(name, out_dir, keep_batchnorm):
    import numpy as np
    import onnx
    import torch

    spec = spec_of(name)
    model = build_model(name)
    inputs = make_inputs(spec, np.random.default_rng(0))
    args = tuple(torch.from_numpy(a) for a in inputs.values())
    with torch.no_grad():
        y = model(*args)
        # How much the output moves on another input: near 0 means the comparison with PyTorch
        # says little about the ops before the point where the input stops mattering.
        other = make_inputs(spec, np.random.default_rng(1))
        y2 = model(*(torch.from_numpy(a) for a in other.values()))
    if not isinstance(y, torch.Tensor):
        raise RuntimeError(f"{name}: the model returned {type(y).__name__}, not one tensor")
    y = y.numpy().astype(np.float32)
    if not np.isfinite(y).all():
        raise RuntimeError(f"{name}: PyTorch's output is not finite")
    sensitivity = float(np.linalg.norm(y2.numpy() - y) / max(np.linalg.norm(y), 1e-30))

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
    files = files_of(spec)
    paths = {f: os.path.join(out_dir, f) for f in files}
    tmp = {f: p + ".tmp" for f, p in paths.items()}
    # Newer torch defaults to the dynamo exporter; texel's tests use the TorchScript one.
    import inspect

    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(
        model,
        args,
        tmp["model.onnx"],
        opset_version=spec.opset,
        input_names=list(inputs),
        output_names=["output"],
        do_constant_folding=True,
        training=training,
        **extra,
    )
    proto = onnx.load(tmp["model.onnx"])
    onnx.checker.check_model(proto)
    for input_name, a in inputs.items():
        with open(tmp[f"{input_name}.npy"], "wb") as f:
            np.save(f, a)
    with open(tmp["output.npy"], "wb") as f:
        np.save(f, y)
    for f in files:
        os.replace(tmp[f], paths[f])
    return proto, sensitivity


def describe(proto):
    nodes = proto.graph.node
    bn = sum(1 for n in nodes if n.op_type == "BatchNormalization")
    return f"{len(nodes)} nodes, {bn} BatchNormalization"


def use_numpy_beside_torch():
    """Makes numpy (and onnx's protobuf) resolve from the directory torch is installed in.

    A numpy 2 installed by pip, e.g. as onnxruntime's dependency in ~/.local, comes first on
    sys.path and shadows the distribution's numpy 1.x that the distribution's torch was built
    against; torch then fails at its first numpy call ("Numpy is not available"). Packages
    installed side by side were built for each other, so that directory goes first."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None or "numpy" in sys.modules:
        return
    site = os.path.dirname(os.path.dirname(spec.origin))
    if os.path.isdir(os.path.join(site, "numpy")) and sys.path[0] != site:
        sys.path.insert(0, site)


def main():
    use_numpy_beside_torch()
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
    parser.add_argument(
        "--image-size",
        type=int,
        help="input height and width of the image models (default 224), e.g. 32 for simulators",
    )
    args = parser.parse_args()
    global IMAGE_SIZE
    IMAGE_SIZE = args.image_size

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")

    failed = 0
    for name in names:
        out_dir = os.path.join(args.out, name)
        files = files_of(spec_of(name))
        if not args.force and all(os.path.isfile(os.path.join(out_dir, f)) for f in files):
            print(f"{name}: cached in {out_dir}", flush=True)
            continue
        start = time.time()
        try:
            proto, sensitivity = export(name, out_dir, keep_batchnorm=not args.fuse_batchnorm)
        except Exception as e:  # report every model, then fail
            print(f"{name}: FAILED: {e}", flush=True)
            failed += 1
            continue
        size_mb = os.path.getsize(os.path.join(out_dir, "model.onnx")) / 1e6
        print(
            f"{name}: exported to {out_dir} ({size_mb:.1f} MB, opset {MODELS[name].opset}, "
            f"{describe(proto)}, output change on another input {sensitivity:.2g}) "
            f"in {time.time() - start:.1f}s",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
