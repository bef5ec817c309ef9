"""Devices, compiling, loading and models: the part of the API that is not onnxruntime's."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

from . import _texel
from ._errors import InvalidArgumentError

ARTIFACT_MAGIC = b"TEXELART"

Source = Union[str, os.PathLike, bytes]


@dataclass(frozen=True)
class Device:
    """An OpenCL device as ``texel devices`` lists it; ``label`` selects it ("P:D")."""

    label: str
    name: str
    vendor: str
    type: str


def devices() -> list[Device]:
    """Every OpenCL device of every platform."""
    return [Device(*d) for d in _texel.devices()]


_contexts: dict[str, _texel.Context] = {}
_contexts_lock = threading.Lock()


def _context(device: Optional[str]) -> _texel.Context:
    # One texel context per device spec, shared by every model on it (and its program cache).
    key = device or ""
    with _contexts_lock:
        if key not in _contexts:
            _contexts[key] = _texel.Context(key)
        return _contexts[key]


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output: its name, shape and numpy dtype."""

    name: str
    shape: tuple
    dtype: object


def _infos(raw) -> list[TensorInfo]:
    return [TensorInfo(t.name, t.shape, t.dtype) for t in raw]


class Model:
    """A compiled model on a device: made by :func:`compile` or :func:`load`."""

    def __init__(self, impl, device: str):
        self._impl = impl
        self.device = device
        self.inputs = _infos(impl.inputs)
        self.outputs = _infos(impl.outputs)

    def save(self, path: Union[str, os.PathLike], binaries: bool = False) -> None:
        """Writes the model as a .texel artifact; ``binaries`` also stores the program's binary
        for this device (used where device, driver and texel version match)."""
        self._impl.save(os.fspath(path), binaries)

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}{list(t.shape)}" for t in self.inputs)
        return f"<texel.Model on {self.device!r}: {ins}>"


def _source(source: Source):
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    raise InvalidArgumentError(
        f"expected a path or bytes, got {type(source).__name__}")


def _shapes(input_shapes: Optional[Mapping[str, Sequence[int]]]) -> str:
    if not input_shapes:
        return ""
    items = []
    for name, dims in input_shapes.items():
        if ";" in name or "=" in name:
            raise InvalidArgumentError(
                f"input_shapes: the name {name!r} contains ';' or '='")
        items.append(f"{name}=" + "x".join(str(int(d)) for d in dims))
    return ";".join(items)


def compile(source: Source, device: Optional[str] = None, *, precision: Optional[str] = None,
            storage: Optional[str] = None, backends: Union[str, Sequence[str], None] = None,
            partition: Optional[str] = None, texture_fp16: bool = False,
            input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> Model:
    """Compiles an ONNX model or an MLIR linalg fragment (a path, or the bytes of one) for a
    device ("gpu", "cpu", "P:D", a name substring; None: env TEXEL_DEVICE, else the first GPU,
    else the first CPU). Options are those of ``texel compile``: precision fp32|fp16|tf32|tf32x3,
    storage buffer|texture|auto, backends (e.g. "clblast,native"), partition
    estimate|measure|first, input_shapes {name: dims} fixing inputs' shapes (free dimensions are
    1 otherwise)."""
    if isinstance(backends, (list, tuple)):
        backends = ",".join(backends)
    ctx = _context(device)
    impl = _texel.compile(ctx, _source(source), backends=backends or "",
                          partition=partition or "", storage=storage or "",
                          texture_fp16=texture_fp16, precision=precision or "",
                          input_shapes=_shapes(input_shapes))
    return Model(impl, ctx.device)


def load(source: Source, device: Optional[str] = None) -> Model:
    """Loads a .texel artifact (a path, or its bytes) for a device, without the compiler."""
    ctx = _context(device)
    return Model(_texel.load(ctx, _source(source)), ctx.device)


def is_artifact(source: Source) -> bool:
    """Whether source (a path or bytes) is a .texel artifact, by its first bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source[:8]) == ARTIFACT_MAGIC
    try:
        with open(source, "rb") as f:
            return f.read(8) == ARTIFACT_MAGIC
    except OSError:
        return False  # the compiler or loader reports the missing file
