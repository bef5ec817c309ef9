"""Artifacts from Python: save, load from a path or bytes, sessions on them, and bad files."""

import numpy as np
import pytest

import texel
from conftest import DEVICE


@pytest.fixture(scope="module")
def artifact(mlp_model, tmp_path_factory):
    path = tmp_path_factory.mktemp("artifacts") / "mlp.texel"
    mlp_model.save(path)
    return path


def test_saved_artifact_runs_bit_identically(mlp_model, artifact, rng):
    x = rng.standard_normal((3, 64)).astype(np.float32)
    direct = texel.InferenceSession(mlp_model).run(None, {"x": x})
    for source in (artifact, str(artifact), artifact.read_bytes()):
        loaded = texel.InferenceSession(source, device=DEVICE)
        assert [i.name for i in loaded.get_inputs()] == ["x"]
        for a, b in zip(direct, loaded.run(None, {"x": x})):
            np.testing.assert_array_equal(a, b)


def test_load_and_save_again_gives_the_same_bytes(artifact, tmp_path):
    model = texel.load(artifact, DEVICE)
    assert texel.is_artifact(artifact) and texel.is_artifact(artifact.read_bytes())
    again = tmp_path / "again.texel"
    model.save(again)
    assert again.read_bytes() == artifact.read_bytes()


def test_binaries_are_stored_and_used(mlp_model, tmp_path, rng):
    plain, with_binary = tmp_path / "plain.texel", tmp_path / "binary.texel"
    mlp_model.save(plain)
    mlp_model.save(with_binary, binaries=True)
    assert with_binary.stat().st_size > plain.stat().st_size
    x = rng.standard_normal((3, 64)).astype(np.float32)
    a = texel.InferenceSession(plain, device=DEVICE).run(None, {"x": x})
    b = texel.InferenceSession(with_binary, device=DEVICE).run(None, {"x": x})
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_compile_options_do_not_apply_to_artifacts(artifact):
    with pytest.raises(texel.InvalidArgumentError, match="do not apply to a .texel artifact"):
        texel.InferenceSession(artifact, precision="fp16")


def test_bad_artifacts_raise_clear_errors(artifact, tmp_path):
    data = artifact.read_bytes()
    truncated = tmp_path / "truncated.texel"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(texel.InvalidModelError, match="truncated.texel"):
        texel.load(truncated, DEVICE)
    flipped = bytearray(data)
    flipped[len(data) - 100] ^= 0x10
    with pytest.raises(texel.InvalidModelError):
        texel.load(bytes(flipped), DEVICE)
    with pytest.raises(texel.InvalidModelError):
        texel.load(b"NOTTEXEL" + data[8:], DEVICE)
    future = bytearray(data)
    future[8] = 99  # the format version, after the magic
    with pytest.raises(texel.InvalidModelError, match="version"):
        texel.load(bytes(future), DEVICE)
    with pytest.raises(texel.NotFoundError, match="absent.texel"):
        texel.load(tmp_path / "absent.texel", DEVICE)
