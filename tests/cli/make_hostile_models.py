#!/usr/bin/python3
"""Writes hostile ONNX models (docs/reliability.md) into OUT_DIR for the CLI tests, each of
which texel must refuse with a clear error (or, for deep.onnx, compile) before allocating what
it declares:

  ext_huge.onnx          a constant of 10^12 f32 in external data whose file holds 4 bytes
  ext_short.onnx         a 16-element constant whose external file holds 4 bytes
  sub/ext_symlink.onnx   external data through a symbolic link that leaves the model's folder
  ext_absolute.onnx      external data at an absolute path
  input_huge.onnx        a graph input of 10^12 elements
  input_large.onnx       a graph input of 15 GiB: within texel's limit, past the device's
                         largest allocation (PoCL on a 24 GiB machine: 8 GiB)
  tile_huge.onnx         Tile by 10^9 x 10^9: shape arithmetic past 64 bits
  cos_huge.onnx          ConstantOfShape 10^5 x 10^5 (evaluated on the host while importing)
  range_huge.onnx        Range(0, 10^12) (evaluated on the host)
  reshape_huge.onnx      Reshape of 4 elements to 10^18
  dup_names.onnx         two nodes defining the value 'y'
  cycle.onnx             two nodes reading each other's output
  attr_type.onnx         Softmax with a string 'axis'
  deep.onnx              2000 Relus in a row (fused in bounded groups)

Usage: make_hostile_models.py OUT_DIR (a python with onnx and numpy)
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
os.makedirs(os.path.join(out, "sub"), exist_ok=True)
X = h.make_tensor_value_info("x", T.FLOAT, [1, 4])
Y = h.make_tensor_value_info("y", T.FLOAT, None)


def save(name, nodes, inputs=(X,), inits=(), outputs=(Y,)):
    g = h.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits))
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), os.path.join(out, name))


def external(name, dims, location, dtype=T.FLOAT):
    t = T()
    t.name, t.data_type, t.data_location = name, dtype, T.EXTERNAL
    t.dims.extend(dims)
    e = t.external_data.add()
    e.key, e.value = "location", location
    return t


with open(os.path.join(out, "tiny.bin"), "wb") as f:
    f.write(b"\0\0\0\0")
add = h.make_node("Add", ["x", "w"], ["y"])
save("ext_huge.onnx", [add], inits=[external("w", [1000000, 1000000], "tiny.bin")])
save("ext_short.onnx", [add], inits=[external("w", [1, 4], "tiny.bin")])
save("ext_absolute.onnx", [add], inits=[external("w", [1, 4], os.path.abspath(
    os.path.join(out, "tiny.bin")))])
link = os.path.join(out, "sub", "link.bin")
if os.path.lexists(link):
    os.remove(link)
os.symlink(os.path.abspath(os.path.join(out, "tiny.bin")), link)  # outside sub/
save("sub/ext_symlink.onnx", [add], inits=[external("w", [1], "link.bin")])
save("input_huge.onnx", [h.make_node("Relu", ["x"], ["y"])],
     inputs=[h.make_tensor_value_info("x", T.FLOAT, [100000, 100000, 100])])
save("input_large.onnx", [h.make_node("Relu", ["x"], ["y"])],
     inputs=[h.make_tensor_value_info("x", T.FLOAT, [4, 1024, 1024, 960])])
save("tile_huge.onnx", [h.make_node("Tile", ["x", "r"], ["y"])],
     inits=[nh.from_array(np.array([10**9, 10**9], dtype=np.int64), "r")])
save("cos_huge.onnx", [h.make_node("ConstantOfShape", ["s"], ["c"]),
                       h.make_node("Add", ["x", "c"], ["y"])],
     inits=[nh.from_array(np.array([100000, 100000], dtype=np.int64), "s")])
save("range_huge.onnx", [h.make_node("Range", ["a", "b", "d"], ["r"]),
                         h.make_node("Cast", ["r"], ["rf"], to=T.FLOAT),
                         h.make_node("Add", ["x", "rf"], ["y"])],
     inits=[nh.from_array(np.array(v, dtype=np.int64), n)
            for n, v in (("a", 0), ("b", 10**12), ("d", 1))])
save("reshape_huge.onnx", [h.make_node("Reshape", ["x", "s"], ["y"])],
     inits=[nh.from_array(np.array([10**6, 10**6, 10**6], dtype=np.int64), "s")])
save("dup_names.onnx", [h.make_node("Relu", ["x"], ["y"]), h.make_node("Sigmoid", ["x"], ["y"])])
save("cycle.onnx", [h.make_node("Relu", ["b"], ["a"]), h.make_node("Relu", ["a"], ["b"]),
                    h.make_node("Add", ["x", "a"], ["y"])])
bad = h.make_node("Softmax", ["x"], ["y"])
bad.attribute.append(h.make_attribute("axis", "one"))
save("attr_type.onnx", [bad])
chain, prev = [], "x"
for i in range(2000):
    chain.append(h.make_node("Relu", [prev], [f"r{i}"]))
    prev = f"r{i}"
chain.append(h.make_node("Identity", [prev], ["y"]))
save("deep.onnx", chain)
