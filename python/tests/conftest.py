"""Shared fixtures: small ONNX models built with onnx.helper on fresh random weights, and
their numpy references."""

import os
import pathlib
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import texel

# TEXEL_TEST_DEVICE: the device the tests run on (default: texel's default device).
DEVICE = os.environ.get("TEXEL_TEST_DEVICE") or None


def _save(model: onnx.ModelProto, path: pathlib.Path) -> pathlib.Path:
    model.ir_version = 8
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", 17))
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


class Mlp:
    """y = relu(x @ w + b), z = x * 2 (two outputs); x: [batch, 64] with a free batch."""

    def __init__(self, directory: pathlib.Path, seed: int):
        rng = np.random.default_rng(seed)
        self.w = rng.standard_normal((64, 32)).astype(np.float32)
        self.b = rng.standard_normal(32).astype(np.float32)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["xw"]),
             helper.make_node("Add", ["xw", "b"], ["pre"]),
             helper.make_node("Relu", ["pre"], ["y"]),
             helper.make_node("Add", ["x", "x"], ["z"])],
            "mlp",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32]),
             helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 64])],
            [numpy_helper.from_array(self.w, "w"), numpy_helper.from_array(self.b, "b")])
        self.path = _save(helper.make_model(graph), directory / "mlp.onnx")

    def reference(self, x):
        return [np.maximum(x @ self.w + self.b, 0), x * 2]


class Gather:
    """Two inputs of different types: out = table[ids] + bias; ids int64 [4], bias f32 [4, 16]."""

    def __init__(self, directory: pathlib.Path, seed: int):
        rng = np.random.default_rng(seed)
        self.table = rng.standard_normal((10, 16)).astype(np.float32)
        graph = helper.make_graph(
            [helper.make_node("Gather", ["table", "ids"], ["rows"], axis=0),
             helper.make_node("Add", ["rows", "bias"], ["out"])],
            "gather",
            [helper.make_tensor_value_info("ids", TensorProto.INT64, [4]),
             helper.make_tensor_value_info("bias", TensorProto.FLOAT, [4, 16])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 16])],
            [numpy_helper.from_array(self.table, "table")])
        self.path = _save(helper.make_model(graph), directory / "gather.onnx")

    def reference(self, ids, bias):
        return [self.table[ids] + bias]


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def mlp(models_dir):
    return Mlp(models_dir, seed=int.from_bytes(os.urandom(4), "little"))


@pytest.fixture(scope="session")
def gather(models_dir):
    return Gather(models_dir, seed=int.from_bytes(os.urandom(4), "little"))


@pytest.fixture(scope="session")
def mlp_model(mlp):
    return texel.compile(mlp.path, DEVICE, input_shapes={"x": [3, 64]})


@pytest.fixture
def rng():
    seed = int.from_bytes(os.urandom(4), "little")
    sys.stderr.write(f"seed {seed}\n")
    return np.random.default_rng(seed)
