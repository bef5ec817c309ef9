#!/usr/bin/python3
"""Writes the tiny models and inputs that the CLI tests (tests/cli) use, into this folder.

  tiny_conv.onnx       x f32[1x3x8x8] -> Conv(8 filters, 3x3, pad 1, bias) -> Relu -> Add(const
                       f32[1x8x8x8]) -> y f32[1x8x8x8]; opset 13, about 3 KB (more than the
                       1000 bytes the truncated-file test keeps)
  tiny_det.onnx        x f32[2x3x3] -> Det (node "det_node") -> y f32[2]: an op texel lacks
  tiny_reshape.onnx    x f32[4] -> Reshape(const [2, 2]) -> y f32[2x2]: a model without kernels
  tiny_pools.onnx      x f32[1x4x8x8] -> MaxPool -> AveragePool -> MaxPool -> AveragePool (all
                       3x3, pad 1, stride 1) -> y f32[1x4x8x8]: four kernels that no fusion
                       merges, whose intermediates share memory (for `texel bench`)
  tiny_matmul.onnx     x f32[4x6] -> MatMul(const f32[6x5]) -> Relu -> y f32[4x5]: a node the
                       clblast backend takes (for --backends and its fallback)
  tiny_x.npy           f32[1x3x8x8], a valid input for tiny_conv.onnx
  tiny_y.npy           f32[1x8x8x8], tiny_conv.onnx's output on tiny_x.npy, computed by numpy
  tiny_x_shape.npy     f32[1x3x4x4], the wrong shape
  tiny_x_dtype.npy     f64[1x3x8x8], the wrong dtype

Deterministic (numpy seeded with 0). Run with a python that has onnx and numpy:
  /usr/bin/python3 tests/data/make_tiny_models.py
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def tiny_conv_weights(rng):
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal((8,)).astype(np.float32)
    c = rng.standard_normal((1, 8, 8, 8)).astype(np.float32)
    return w, b, c


def tiny_conv_reference(x, w, b, c):
    """Conv (3x3, pad 1, stride 1) + bias, Relu, Add, in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    h, wd = x.shape[2], x.shape[3]
    y = np.zeros((1, w.shape[0], h, wd))
    for kh in range(3):
        for kw in range(3):
            y += np.einsum("nchw,oc->nohw", xp[:, :, kh:kh + h, kw:kw + wd], w[:, :, kh, kw])
    y += b.reshape(1, -1, 1, 1)
    return (np.maximum(y, 0) + c).astype(np.float32)


def tiny_conv(w, b, c):
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["conv_out"], name="conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv_out"], ["relu_out"], name="relu"),
        helper.make_node("Add", ["relu_out", "c"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "tiny_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
                     numpy_helper.from_array(c, "c")])
    return helper.make_model(graph, producer_name="texel-tests",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def tiny_det():
    graph = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"], name="det_node")], "tiny_det",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, producer_name="texel-tests",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def tiny_reshape():
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")], "tiny_reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        initializer=[numpy_helper.from_array(np.array([2, 2], dtype=np.int64), "shape")])
    return helper.make_model(graph, producer_name="texel-tests",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def tiny_pools():
    pool = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    names = ["x", "p1", "p2", "p3", "y"]
    nodes = [helper.make_node("MaxPool" if i % 2 == 0 else "AveragePool", [names[i]],
                              [names[i + 1]], name=f"pool{i + 1}", **pool) for i in range(4)]
    graph = helper.make_graph(
        nodes, "tiny_pools",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])])
    return helper.make_model(graph, producer_name="texel-tests",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def tiny_matmul():
    w = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["mm"], name="matmul"),
         helper.make_node("Relu", ["mm"], ["y"], name="relu")], "tiny_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])],
        initializer=[numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, producer_name="texel-tests",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def main():
    rng = np.random.default_rng(0)
    w, b, c = tiny_conv_weights(rng)
    save(tiny_conv(w, b, c), "tiny_conv.onnx")
    save(tiny_det(), "tiny_det.onnx")
    save(tiny_reshape(), "tiny_reshape.onnx")
    save(tiny_pools(), "tiny_pools.onnx")
    save(tiny_matmul(), "tiny_matmul.onnx")
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(os.path.join(HERE, "tiny_x.npy"), x)
    np.save(os.path.join(HERE, "tiny_y.npy"), tiny_conv_reference(x, w, b, c))
    np.save(os.path.join(HERE, "tiny_x_shape.npy"), x[:, :, :4, :4].copy())
    np.save(os.path.join(HERE, "tiny_x_dtype.npy"), x.astype(np.float64))


if __name__ == "__main__":
    main()
