"""InferenceSession, shaped like onnxruntime's, so that code written for onnxruntime runs on
texel by changing the import."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from . import _model, _texel
from ._errors import InvalidArgumentError, NotFoundError

# onnxruntime's type strings for numpy dtypes.
_ORT_TYPES = {
    "float32": "tensor(float)", "float16": "tensor(float16)", "float64": "tensor(double)",
    "int8": "tensor(int8)", "uint8": "tensor(uint8)", "int16": "tensor(int16)",
    "uint16": "tensor(uint16)", "int32": "tensor(int32)", "uint32": "tensor(uint32)",
    "int64": "tensor(int64)", "uint64": "tensor(uint64)", "bool": "tensor(bool)",
}


class NodeArg:
    """An input or output as onnxruntime describes it: ``name``, ``shape`` (a list) and
    ``type`` ("tensor(float)")."""

    def __init__(self, info: _model.TensorInfo):
        self.name = info.name
        self.shape = list(info.shape)
        self.type = _ORT_TYPES[np.dtype(info.dtype).name]
        self.dtype = np.dtype(info.dtype)

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape})"


class InferenceSession:
    """Runs a model: a path or bytes of an ONNX model, MLIR fragment or .texel artifact (told
    apart by content), or a :class:`texel.Model`. ``device`` and the keyword options are those
    of :func:`texel.compile` (options do not apply to artifacts). ``sess_options``,
    ``providers`` and ``provider_options`` are accepted for onnxruntime code and ignored: the
    device is chosen with ``device`` (default: env TEXEL_DEVICE, else the first GPU, else the
    first CPU). A session may be shared between threads; runs take turns."""

    def __init__(self, path_or_model: Union[str, bytes, "_model.Model", Any],
                 sess_options: Any = None, providers: Optional[Sequence[Any]] = None,
                 provider_options: Optional[Sequence[Any]] = None, *,
                 device: Optional[str] = None, **options: Any):
        if isinstance(path_or_model, _model.Model):
            if options or device is not None:
                raise InvalidArgumentError(
                    "device and compile options apply to a path or bytes, not to a Model")
            model = path_or_model
        elif _model.is_artifact(path_or_model):
            if options:
                raise InvalidArgumentError(
                    f"compile options {sorted(options)} do not apply to a .texel artifact")
            model = _model.load(path_or_model, device)
        else:
            model = _model.compile(path_or_model, device, **options)
        self._model = model
        self._session = _texel.Session(model._impl)
        self._inputs = [NodeArg(t) for t in model.inputs]
        self._outputs = [NodeArg(t) for t in model.outputs]
        self._output_index = {o.name: i for i, o in enumerate(self._outputs)}

    @property
    def model(self) -> "_model.Model":
        return self._model

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_providers(self) -> list[str]:
        return [f"texel:{self._model.device}"]

    def run(self, output_names: Optional[Sequence[str]],
            input_feed: Mapping[str, np.ndarray], run_options: Any = None) -> list[np.ndarray]:
        """Runs once on ``input_feed`` ({name: numpy array} with the input's dtype and shape,
        C-contiguous) and returns the outputs named by ``output_names`` (None: all), in that
        order."""
        if not isinstance(input_feed, Mapping):
            raise InvalidArgumentError(
                f"input_feed: expected a dict of name -> numpy array, got "
                f"{type(input_feed).__name__}")
        names = [i.name for i in self._inputs]
        unknown = [n for n in input_feed if n not in names]
        if unknown:
            raise NotFoundError(f"input {unknown[0]!r} is not an input of the model "
                                f"(inputs: {', '.join(names)})")
        missing = [n for n in names if n not in input_feed]
        if missing:
            raise InvalidArgumentError(f"input {missing[0]!r} was not given")
        outputs = self._session.run([input_feed[n] for n in names])
        if output_names is None:
            return outputs
        picked = []
        for name in output_names:
            if name not in self._output_index:
                raise NotFoundError(
                    f"output {name!r} is not an output of the model "
                    f"(outputs: {', '.join(o.name for o in self._outputs)})")
            picked.append(outputs[self._output_index[name]])
        return picked
