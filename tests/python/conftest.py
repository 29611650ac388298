"""Fixtures for the Python API tests: the built package, the joule binary, small models."""
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
SAMPLES = MODELS / "fashion_cnn_sample.npy"
W8A8 = ROOT / "examples" / "quant" / "w8a8.yaml"
# oneDNN's int8 kernels run exactly (and joule uses them) only where the CPU has VNNI.
VNNI = bool({"avx512_vnni", "avx_vnni"} & set(pathlib.Path("/proc/cpuinfo").read_text().split()))
W4A8 = ROOT / "examples" / "quant" / "w4a8.yaml"
W4A4 = ROOT / "examples" / "quant" / "w4a4.yaml"
W7A8 = ROOT / "examples" / "quant" / "w7a8.yaml"
JOULE_BIN = os.environ.get("JOULE_BIN", str(ROOT / "build" / "joule"))


def joule_cli(*args, check=True):
    """Runs the joule command; returns (exit code, stdout, stderr)."""
    r = subprocess.run([JOULE_BIN, *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"joule {' '.join(map(str, args))} exited {r.returncode}: {r.stderr}")
    return r.returncode, r.stdout, r.stderr


@pytest.fixture(scope="session")
def model():
    import joule
    return joule.load("default")


@pytest.fixture(scope="session")
def samples():
    return np.load(SAMPLES), np.load(MODELS / "fashion_cnn_sample_labels.npy")


def onnx_model(path, nodes, inputs, outputs, initializers=(), opset=17):
    """Writes a small ONNX model with python3-onnx; inputs/outputs are (name, dtype, shape)."""
    import onnx
    from onnx import helper, mapping, numpy_helper

    def info(name, dtype, shape):
        return helper.make_tensor_value_info(name, mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)], shape)

    g = helper.make_graph(nodes, "g", [info(*i) for i in inputs], [info(*o) for o in outputs],
                          [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(m, str(path))
    return str(path)
