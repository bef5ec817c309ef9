"""Devices, compiling, loading and models: the part of the API that is not onnxruntime's."""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence, Union

from . import _texel
from ._errors import InvalidArgumentError, NoticeWarning, UnsupportedError

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


def compile_options() -> list[tuple]:
    """The compile options there are, as texel's option table declares them (the CLI's flags
    with '_' for '-'): (name, values, help, repeatable) each. Empty without the compiler."""
    return list(_texel.compile_options())


def _settings(input_shapes: Optional[Mapping[str, Sequence[int]]],
              options: Mapping[str, object]) -> list[tuple[str, str]]:
    """Keyword arguments as (name, value) pairs of the option table: a list or tuple gives a
    repeatable option several values (a comma list for backends), True a flag's value."""
    known = {name: repeatable for name, _, _, repeatable in _texel.compile_options()}
    pairs = []
    for name, dims in (input_shapes or {}).items():
        pairs.append(("input_shape", f"{name}=" + "x".join(str(int(d)) for d in dims)))
    for name, value in options.items():
        if value is None:
            continue
        if name not in known:
            raise InvalidArgumentError(
                f"compile() got an unknown option {name!r} (options: input_shapes, "
                f"{', '.join(sorted(known))})")
        if isinstance(value, (list, tuple)):
            if known[name]:
                pairs += [(name, str(v)) for v in value]
            else:
                pairs.append((name, ",".join(str(v) for v in value)))
        else:
            pairs.append((name, str(value)))
    return pairs


def _warn(message: str) -> None:
    # Frames up: this function, compile(), its caller.
    warnings.warn(message, NoticeWarning, stacklevel=3)


def compile(source: Source, device: Optional[str] = None, *,
            input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
            on_notice: Optional[Callable[[str], None]] = None, **options) -> Model:
    """Compiles an ONNX model or an MLIR linalg fragment (a path, or the bytes of one) for a
    device ("gpu", "cpu", "P:D", a name substring; None: env TEXEL_DEVICE, else the first GPU,
    else the first CPU). input_shapes {name: dims} fixes inputs' shapes (free dimensions are 1
    otherwise); the other keyword arguments are texel's compile options, the CLI's flags with
    '_' for '-' (compile_options() lists them): precision="fp16", storage="texture",
    backends=["clblast", "native"], partition="first", texture_precision="fp16",
    disable_pass=["attention"], deny=[...], freeze=["name=file.npy"]. What the compile tells of
    the options and the device (tf32 on a device without a matrix engine runs in fp32; a damaged
    tuning database line) goes to on_notice(message), or by default to a
    :class:`texel.NoticeWarning`."""
    ctx = _context(device)
    if not _texel.has_compiler:
        raise UnsupportedError(
            "this texel package was built over libtexel_runtime.so, without the compiler: load "
            "a .texel artifact (texel.load) made by a full texel")
    impl = _texel.compile(ctx, _source(source), _settings(input_shapes, options),
                          on_notice if on_notice is not None else _warn)
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
