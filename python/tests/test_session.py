"""InferenceSession as onnxruntime's: descriptions, output selection, bad inputs, threads, and
the GIL released while texel works."""

import sys
import threading
import time

import numpy as np
import pytest

import texel
from conftest import DEVICE


@pytest.fixture(scope="module")
def sess(mlp_model):
    return texel.InferenceSession(mlp_model)


def test_descriptions_read_like_onnxruntime(sess):
    (x,) = sess.get_inputs()
    assert (x.name, x.shape, x.type) == ("x", [3, 64], "tensor(float)")
    assert [(o.name, o.shape, o.type) for o in sess.get_outputs()] == [
        ("y", [3, 32], "tensor(float)"), ("z", [3, 64], "tensor(float)")]
    assert sess.get_providers()[0].startswith("texel:")


def test_output_names_select_and_order(sess, mlp, rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    z, y = sess.run(["z", "y"], {"x": x})
    np.testing.assert_array_equal(z, mlp.reference(x)[1])
    np.testing.assert_allclose(y, mlp.reference(x)[0], rtol=1e-5, atol=1e-5)
    assert y.flags.c_contiguous and y.flags.writeable and y.dtype == np.float32


def test_each_run_returns_fresh_arrays(sess, rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    a = sess.run(["z"], {"x": x})[0]
    b = sess.run(["z"], {"x": x + 1})[0]
    assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, x * 2)


@pytest.mark.parametrize("value, message", [
    (lambda x: x.astype(np.float64), "input 'x': expected dtype float32, got float64"),
    (lambda x: x[:2], r"input 'x': expected shape \(3, 64\), got \(2, 64\)"),
    (lambda x: x.reshape(3, 64, 1), r"expected shape \(3, 64\), got \(3, 64, 1\)"),
    (lambda x: np.asfortranarray(x), "not C-contiguous"),
    (lambda x: np.ascontiguousarray(np.repeat(x, 2, axis=1))[:, ::2], "not C-contiguous"),
    (lambda x: x.tolist(), "expected a numpy.ndarray, got list"),
    (lambda x: x.astype(">f4"), "expected dtype float32, got >f4"),
])
def test_bad_inputs_raise_invalid_argument(sess, rng, value, message):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    with pytest.raises(texel.InvalidArgumentError, match=message):
        sess.run(None, {"x": value(x)})


def test_bad_feeds_and_names(sess, rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    with pytest.raises(texel.InvalidArgumentError, match="'x' was not given"):
        sess.run(None, {})
    with pytest.raises(texel.NotFoundError, match="'w' is not an input"):
        sess.run(None, {"x": x, "w": x})
    with pytest.raises(texel.NotFoundError, match="'q' is not an output"):
        sess.run(["q"], {"x": x})
    with pytest.raises(texel.InvalidArgumentError, match="input_feed"):
        sess.run(None, [x])
    # The session still runs after every failure.
    np.testing.assert_array_equal(sess.run(["z"], {"x": x})[0], x * 2)


def test_errors_form_one_hierarchy():
    assert issubclass(texel.InvalidArgumentError, texel.Error)
    assert issubclass(texel.InvalidArgumentError, ValueError)
    for cls in (texel.NotFoundError, texel.InvalidModelError, texel.UnsupportedError,
                texel.DeviceError, texel.BuildError, texel.IoError, texel.InternalError):
        assert issubclass(cls, texel.Error) and cls.status.startswith("TEXEL_ERROR_")


def test_threads_share_a_session(sess, mlp, rng):
    xs = [rng.standard_normal((3, 64)).astype(np.float32) for _ in range(4)]
    results, errors = {}, []

    def work(i):
        try:
            for _ in range(10):
                results[i] = sess.run(None, {"x": xs[i]})
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, x in enumerate(xs):
        np.testing.assert_allclose(results[i][0], mlp.reference(x)[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(results[i][1], mlp.reference(x)[1])


def test_the_gil_is_released_while_running(models_dir, rng):
    # A product that takes a while; the main thread notes the longest stretch it could not run.
    # Were the GIL held through a run, that stretch would be a whole run.
    from onnx import TensorProto, helper, numpy_helper
    import onnx
    n = 2048
    w = rng.standard_normal((n, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = models_dir / "big.onnx"
    onnx.save(model, str(path))
    sess = texel.InferenceSession(str(path), device=DEVICE)
    x = rng.standard_normal((n, n)).astype(np.float32)
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], x @ w, rtol=1e-3, atol=1e-2)
    start = time.perf_counter()
    sess.run(None, {"x": x})  # built and warm: time one run
    one_run = time.perf_counter() - start
    done = threading.Event()

    def work():
        for _ in range(3):
            sess.run(None, {"x": x})
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    try:
        longest, last = 0.0, time.perf_counter()
        t = threading.Thread(target=work)
        t.start()
        while not done.is_set():
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        t.join()
    finally:
        sys.setswitchinterval(interval)
    assert longest < one_run / 2, f"the main thread waited {longest:.4f} s; a run takes {one_run:.4f} s"
