"""texel: an ahead-of-time inference compiler and runtime for neural networks on OpenCL devices.

    import texel
    sess = texel.InferenceSession("resnet50.onnx")           # as onnxruntime's
    out, = sess.run(None, {"input": x})

    model = texel.compile("resnet50.onnx", device="gpu", precision="fp16")
    model.save("resnet50.texel")                             # an artifact: load without ONNX
    sess = texel.InferenceSession(texel.load("resnet50.texel"))
"""

from . import _errors, _texel
from ._errors import (BuildError, DeviceError, Error, InternalError, InvalidArgumentError,
                      InvalidModelError, IoError, NoticeWarning, NotFoundError,
                      UnsupportedError)
from ._model import (Device, Model, TensorInfo, compile, compile_options, devices, is_artifact,
                     load)
from ._session import InferenceSession, NodeArg

_texel.set_error_classes(_errors.BY_STATUS)

__version__ = _texel.version()
#: False in a package built over libtexel_runtime.so: it loads artifacts but cannot compile.
has_compiler = _texel.has_compiler

__all__ = [
    "BuildError", "Device", "DeviceError", "Error", "InferenceSession", "InternalError",
    "InvalidArgumentError", "InvalidModelError", "IoError", "Model", "NodeArg", "NoticeWarning",
    "NotFoundError",
    "TensorInfo", "UnsupportedError", "compile", "compile_options", "devices", "has_compiler",
    "is_artifact", "load",
]
