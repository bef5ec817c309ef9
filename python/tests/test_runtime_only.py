"""The package built over libtexel_runtime.so (build/python_runtime): loads and runs
artifacts made by the full package, with the same results, and cannot compile."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

RUNTIME = os.environ.get("TEXEL_PYTHON_RUNTIME_PATH")

SCRIPT = r"""
import sys, numpy as np, texel
assert not texel.has_compiler
assert texel._texel.__file__.startswith(sys.argv[1]), texel._texel.__file__
x = np.load(sys.argv[3])
outputs = texel.InferenceSession(sys.argv[2]).run(None, {"x": x})
np.savez(sys.argv[4], *outputs)
try:
    texel.compile(sys.argv[2])
except texel.UnsupportedError as e:
    print("compile:", e)
"""


@pytest.mark.skipif(not RUNTIME, reason="TEXEL_PYTHON_RUNTIME_PATH is not set")
def test_runtime_only_package_runs_artifacts(mlp_model, tmp_path, rng):
    artifact, x_path, out_path = tmp_path / "m.texel", tmp_path / "x.npy", tmp_path / "out.npz"
    mlp_model.save(artifact)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    np.save(x_path, x)
    env = dict(os.environ, PYTHONPATH=RUNTIME)
    done = subprocess.run([sys.executable, "-c", SCRIPT, RUNTIME, str(artifact), str(x_path),
                           str(out_path)], env=env, cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert "compile: texel_model_compile" not in done.stdout
    assert "without the compiler" in done.stdout
    import texel
    direct = texel.InferenceSession(mlp_model).run(None, {"x": x})
    with np.load(out_path) as loaded:
        for i, a in enumerate(direct):
            np.testing.assert_array_equal(a, loaded[f"arr_{i}"])
    # The runtime module links libtexel_runtime.so, not libtexel.so.
    module = next(pathlib.Path(RUNTIME, "texel").glob("_texel*.so"))
    linked = subprocess.run(["ldd", str(module)], capture_output=True, text=True).stdout
    assert "libtexel_runtime.so" in linked and "libtexel.so" not in linked
