"""python -m texel run|compile|devices."""

import os
import subprocess
import sys

import numpy as np

from conftest import DEVICE


def texel_cli(*args):
    device = ["-d", DEVICE] if DEVICE and args[0] != "devices" else []
    return subprocess.run([sys.executable, "-m", "texel", *args, *device],
                          capture_output=True, text=True, env=os.environ)


def test_run_prints_outputs_and_writes_them(mlp, tmp_path, rng):
    x = rng.standard_normal((2, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    done = texel_cli("run", str(mlp.path), "--input-shape", "x=2x64", "-i",
                     f"x={tmp_path / 'x.npy'}", "-o", str(tmp_path / "out"), "-r", "3")
    assert done.returncode == 0, done.stderr
    assert "output   y: float32[2x32]" in done.stdout and "latency  median" in done.stdout
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), mlp.reference(x)[0],
                               rtol=1e-5, atol=1e-5)


def test_compile_then_run_the_artifact(mlp, tmp_path):
    artifact = tmp_path / "mlp.texel"
    done = texel_cli("compile", str(mlp.path), "-o", str(artifact))
    assert done.returncode == 0, done.stderr
    done = texel_cli("run", str(artifact), "-r", "1")
    assert done.returncode == 0, done.stderr
    assert "output   z: float32[1x64]" in done.stdout


def test_devices_and_errors(mlp, tmp_path):
    done = texel_cli("devices")
    assert done.returncode == 0 and done.stdout.startswith("[")
    done = texel_cli("run", str(tmp_path / "absent.onnx"))
    assert done.returncode == 1
    assert "texel: error:" in done.stderr and "absent.onnx" in done.stderr
    done = texel_cli("run", str(mlp.path), "-i", "broken")
    assert done.returncode == 1 and "expected NAME=VALUE" in done.stderr
