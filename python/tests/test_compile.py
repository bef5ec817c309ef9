"""texel.compile, texel.devices, models' inputs and outputs, and results against numpy."""

import warnings

import numpy as np
import pytest

import texel
from conftest import DEVICE


def test_devices_lists_the_default_device(mlp_model):
    devices = texel.devices()
    assert devices, "no OpenCL device"
    assert mlp_model.device in [d.label for d in devices]
    assert all(d.type in ("GPU", "CPU", "ACCELERATOR", "OTHER") for d in devices)


def test_version_and_compiler():
    assert texel.__version__.count(".") == 2
    assert texel.has_compiler


def test_model_describes_inputs_and_outputs(mlp_model):
    assert [(t.name, t.shape, t.dtype) for t in mlp_model.inputs] == [("x", (3, 64), np.float32)]
    assert [(t.name, t.shape) for t in mlp_model.outputs] == [("y", (3, 32)), ("z", (3, 64))]


def test_results_match_numpy(mlp, mlp_model, rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    y, z = texel.InferenceSession(mlp_model).run(None, {"x": x})
    ry, rz = mlp.reference(x)
    np.testing.assert_allclose(y, ry, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(z, rz)


def test_compile_from_bytes_gives_the_same_results(mlp, mlp_model, rng):
    from_bytes = texel.compile(mlp.path.read_bytes(), DEVICE, input_shapes={"x": [3, 64]})
    x = rng.standard_normal((3, 64)).astype(np.float32)
    a = texel.InferenceSession(mlp_model).run(None, {"x": x})
    b = texel.InferenceSession(from_bytes).run(None, {"x": x})
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_integer_and_float_inputs(gather, rng):
    sess = texel.InferenceSession(str(gather.path), device=DEVICE)
    assert [i.type for i in sess.get_inputs()] == ["tensor(int64)", "tensor(float)"]
    ids = rng.integers(0, 10, 4).astype(np.int64)
    bias = rng.standard_normal((4, 16)).astype(np.float32)
    (out,) = sess.run(["out"], {"ids": ids, "bias": bias})
    np.testing.assert_allclose(out, gather.reference(ids, bias)[0], rtol=1e-6)


def test_options_reach_the_compiler(mlp, rng):
    model = texel.compile(mlp.path, DEVICE, input_shapes={"x": [5, 64]}, backends=["native"],
                          partition="first", storage="buffer", precision="fp32")
    x = rng.standard_normal((5, 64)).astype(np.float32)
    y, _ = texel.InferenceSession(model).run(None, {"x": x})
    np.testing.assert_allclose(y, mlp.reference(x)[0], rtol=1e-5, atol=1e-5)


def test_notices_warn_or_reach_on_notice(mlp, tmp_path):
    # A tuning database with a damaged line: read around, and the compile says so (every device).
    db = tmp_path / "damaged.jsonl"
    db.write_text('{"v":1,"family":\n')
    with pytest.warns(texel.NoticeWarning, match="damaged.jsonl:1") as caught:
        texel.compile(mlp.path, DEVICE, db=str(db))
    assert len(caught) == 1
    assert caught[0].filename == __file__  # attributed to the caller of texel.compile
    heard = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        texel.compile(mlp.path, DEVICE, db=str(db), on_notice=heard.append)
        sess = texel.InferenceSession(mlp.path, device=DEVICE, db=str(db), on_notice=heard.append)
        texel.compile(mlp.path, DEVICE, tuning="off")  # nothing to tell
    assert len(heard) == 2 and all("damaged.jsonl:1" in m for m in heard)
    assert sess.get_inputs()[0].name == "x"


@pytest.mark.parametrize("options, message", [
    ({"precision": "fp8"}, "precision 'fp8'"),
    ({"storage": "disk"}, "storage 'disk'"),
    ({"partition": "random"}, "partition 'random'"),
    ({"input_shapes": {"x": [-1, 64]}}, "x=-1x64"),
    ({"precison": "fp16"}, "unknown option 'precison'"),
    ({"disable_pass": ["no-such-pass"]}, "disable-pass 'no-such-pass'"),
    ({"input_shapes": {"q": [3, 64]}}, "'q', which is not a graph input"),
    ({"input_shapes": {"x": [3]}}, "rank 2"),
])
def test_bad_options_raise_invalid_argument(mlp, options, message):
    with pytest.raises(texel.InvalidArgumentError, match=message):
        texel.compile(mlp.path, DEVICE, **options)


def test_options_come_from_texels_table():
    names = [name for name, _, _, _ in texel.compile_options()]
    assert {"precision", "storage", "backends", "partition", "input_shape", "disable_pass",
            "texture_precision", "deny", "freeze"} <= set(names)
    assert all(help for _, _, help, _ in texel.compile_options())


def test_repeatable_options_take_lists(mlp, rng):
    model = texel.compile(mlp.path, DEVICE, input_shapes={"x": [2, 64]},
                          disable_pass=["fuse", "simplify"], texture_precision="fp16")
    x = rng.standard_normal((2, 64)).astype(np.float32)
    y, _ = texel.InferenceSession(model).run(None, {"x": x})
    np.testing.assert_allclose(y, mlp.reference(x)[0], rtol=1e-5, atol=1e-5)


def test_free_dimensions_default_to_one(mlp):
    assert texel.compile(mlp.path, DEVICE).inputs[0].shape == (1, 64)


def test_missing_and_malformed_models(tmp_path):
    with pytest.raises(texel.NotFoundError, match="nothing.onnx"):
        texel.compile(tmp_path / "nothing.onnx", DEVICE)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a model")
    with pytest.raises(texel.InvalidModelError):
        texel.compile(bad, DEVICE)
    with pytest.raises(texel.InvalidArgumentError, match="path or bytes"):
        texel.compile(42, DEVICE)
    with pytest.raises(texel.NotFoundError):
        texel.compile(bad, device="no such device")
