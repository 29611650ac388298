#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs to tests/fuzz/seeds/TARGET/ (committed; rerun to refresh).

Usage: tools/fuzz_seeds.py BUILD_DIR   (BUILD_DIR/joule makes the seeds that are joule's own output:
tuning cache, calibration cache, sweep resume files). The ONNX model and TensorProto targets also
start from the conformance suite (libonnx-testdata), which `make fuzz` adds to their corpora.
"""
import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper, TensorProto
from torchvision.io import encode_jpeg

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(ROOT, "tests", "fuzz", "seeds")


def put(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy_bytes(a, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def jpeg(c, h, w, seed, quality=90):
    g = torch.Generator().manual_seed(seed)
    img = torch.randint(0, 256, (c, h, w), dtype=torch.uint8, generator=g)
    return bytes(encode_jpeg(img, quality=quality).numpy().tobytes())


def idx(images, labels=None):
    n, h, w = images.shape
    img = struct.pack(">IIII", 0x803, n, h, w) + images.astype(np.uint8).tobytes()
    lab = b"" if labels is None else struct.pack(">II", 0x801, n) + labels.astype(np.uint8).tobytes()
    return img, lab


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    joule = os.path.join(build, "joule")
    shutil.rmtree(SEEDS, ignore_errors=True)
    rng = np.random.default_rng(0)

    # ONNX models: the bundled CNN, and small graphs with a control-flow body and a sequence.
    # (`make fuzz` adds the conformance suite's 1000-odd node models.)
    with open(os.path.join(ROOT, "models", "fashion_cnn.onnx"), "rb") as fh:
        put("onnx_model", "fashion_cnn.onnx", fh.read())
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2, 3])])
    loop = helper.make_graph(
        [helper.make_node("Loop", ["n", "c", "acc0"], ["acc"], body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.array(3, np.int64), "n"), numpy_helper.from_array(np.array(True), "c")])
    put("onnx_model", "loop.onnx", helper.make_model(loop, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    convs = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Concat", ["p", "p"], ["y"], axis=1)], "convs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")])
    put("onnx_model", "conv_dynamic_batch.onnx", helper.make_model(convs, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    # joule's own activation pruning in front of a MatMul (its ratio attribute, per-sample ranking)
    w = numpy_helper.from_array(np.linspace(-1, 1, 40).astype(np.float32).reshape(10, 4), "w")
    pa = helper.make_graph([helper.make_node("PruneActivation", ["x"], ["p"], domain="joule", ratio=0.3),
                            helper.make_node("MatMul", ["p", "w"], ["y"])], "pa",
                           [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 10])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w])
    put("onnx_model", "prune_activation.onnx", helper.make_model(
        pa, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("joule", 1)]).SerializeToString())

    # TensorProtos (`make fuzz` adds the conformance suite's inputs and outputs).
    for name, a in [("f32", rng.standard_normal((2, 3)).astype(np.float32)), ("i64", np.arange(4, dtype=np.int64)),
                    ("u8", np.arange(6, dtype=np.uint8).reshape(2, 3)), ("bool", np.array([True, False])),
                    ("f16", np.ones(3, np.float16)), ("scalar", np.array(2.5, np.float64))]:
        put("tensor_pb", name + ".pb", numpy_helper.from_array(a, name).SerializeToString())
    t = helper.make_tensor("as_floats", TensorProto.FLOAT, [2, 2], [1.0, 2.0, 3.0, 4.0])  # float_data, not raw
    put("tensor_pb", "float_data.pb", t.SerializeToString())
    put("tensor_pb", "strings.pb", helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"bc"]).SerializeToString())

    # .npy: dtypes, versions, orders, 0-d, empty.
    put("npy", "f32.npy", npy_bytes(rng.standard_normal((2, 3)).astype(np.float32)))
    put("npy", "u8.npy", npy_bytes(rng.integers(0, 255, (4, 1, 3, 3)).astype(np.uint8)))
    put("npy", "i64_v2.npy", npy_bytes(np.arange(5, dtype=np.int64), version=(2, 0)))
    put("npy", "f16_v3.npy", npy_bytes(np.ones((2, 2), np.float16), version=(3, 0)))
    put("npy", "fortran.npy", npy_bytes(np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))))
    put("npy", "scalar.npy", npy_bytes(np.float32(3.5)))
    put("npy", "empty.npy", npy_bytes(np.zeros((0, 3), np.int32)))
    put("npy", "bool.npy", npy_bytes(np.array([True, False])))
    put("npy", "big_endian.npy", npy_bytes(np.arange(3, dtype=">f4")))

    # IDX: [uint16 LE labels length][labels file][images file]
    img, lab = idx(rng.integers(0, 255, (3, 4, 5)), rng.integers(0, 10, 3))
    put("idx", "with_labels", struct.pack("<H", len(lab)) + lab + img)
    put("idx", "no_labels", struct.pack("<H", 0) + img)
    put("idx", "gzipped", struct.pack("<H", len(lab)) + gzip.compress(lab) + gzip.compress(img))
    img28, lab28 = idx(rng.integers(0, 255, (1, 28, 28)), np.array([7]))
    put("idx", "mnist_size", struct.pack("<H", len(lab28)) + lab28 + img28)

    # JPEG: [selector byte: bit 0 RGB, bits 1-6 crop, bit 7 explicit resize][JPEG]
    put("jpeg", "rgb", bytes([0x01 | (7 << 1)]) + jpeg(3, 10, 13, 1))
    put("jpeg", "gray", bytes([0x00 | (3 << 1)]) + jpeg(1, 7, 5, 2))
    put("jpeg", "rgb_to_gray_resize", bytes([0x80 | (5 << 1)]) + jpeg(3, 16, 9, 3, quality=50))
    put("jpeg", "gray_to_rgb", bytes([0x01 | (2 << 1)]) + jpeg(1, 9, 9, 4))

    # LMDB: meta record, then image records [int64 label][uint32 n][name][JPEG], "\xffREC" between.
    meta = b"joule-imagefolder-lmdb 1\ncount 2\nclasses 2\ncat\ndog\n"
    recs = []
    for i, (c, lbl) in enumerate([(3, 0), (1, 1)]):
        name = f"{'cat' if lbl == 0 else 'dog'}/{i}.jpg".encode()
        recs.append(struct.pack("<qI", lbl, len(name)) + name + jpeg(c, 12, 10, 10 + i))
    put("lmdb", "two_images", b"\xffREC".join([meta] + recs))
    put("lmdb", "empty", b"joule-imagefolder-lmdb 1\ncount 0\nclasses 0\n")

    # Quantization and algorithm YAML.
    qdir = os.path.join(ROOT, "examples", "quant")
    for f in sorted(os.listdir(qdir)):
        with open(os.path.join(qdir, f), "rb") as fh:
            put("quant_config", f, fh.read())
    put("algo_config", "class_rules.yaml", b"conv: [winograd, onednn]\ngemm: onednn\ndefault: guess\n")
    put("algo_config", "reference.yaml", b"default: reference\n")
    put("algo_config", "one_list.yaml", b"matmul: 'sgemm, reference'\n")

    # configs: [selector byte: 0 prune, 1 search space, 2 operator sweep, 3 experiment][YAML]
    for sel, folder in [(0, "prune"), (2, "opdb"), (3, "experiments")]:
        d = os.path.join(ROOT, "examples", folder)
        for f in sorted(os.listdir(d)):
            with open(os.path.join(d, f), "rb") as fh:
                put("configs", f"{folder}_{f}", bytes([sel]) + fh.read())
    put("configs", "prune_global", bytes([0]) + b"default: {ratio: 0.5, structured: true, criterion: l1, scope: global}\n")
    put("configs", "space_small", bytes([1]) + b"precision: [fp32, int8]\nprune: [0, 0.25]\n")
    put("configs", "space_full", bytes([1]) + b"""precision: [fp32, bf16, int8, w4]
formats:
  w4: {weight: {format: int, bits: 4, symmetric: true, granularity: per_channel}}
layers: {type: Conv}
prune: [0, 0.125, 0.25]
criterion: l1
finetune: {steps: 30, batch: 32, lr: 0.002, optimizer: sgd}
constraints: {accuracy_drop: 0.5, min_accuracy: 30, latency_ms: 10, energy_mj: 5, size_mb: 4}
""")
    with open(os.path.join(ROOT, "data", "energy", "default_cpu.json"), "rb") as fh:
        put("device_profile", "default_cpu.json", fh.read())

    # joule's own files: tuning cache, calibration cache (data label "fuzz", as the target reads it)
    # and a sweep's resume CSVs ([uint16 LE L][overall.csv][layers.csv]).
    with tempfile.TemporaryDirectory() as tmp:
        tc = os.path.join(tmp, "tuning.json")
        subprocess.run([joule, "bench", "default", "--runs", "1", "--algo", "auto", "--tuning-cache", tc, "--threads", "1"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(tc, "rb") as fh:
            put("tuning_cache", "fashion_cnn.json", fh.read())
        cc = os.path.join(tmp, "calib.json")
        subprocess.run([joule, "quantize", "default", "--config", os.path.join(ROOT, "examples", "quant", "w8a8.yaml"),
                        "--calib", "/usr/share/datasets/fashion-mnist:test",
                        "--calib-samples", "2", "--calib-cache", cc, "-o", os.path.join(tmp, "q.onnx")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(cc) as fh:
            cache = json.load(fh)
        # key: TENSOR|METHOD|...|axisN|DATA LABEL (the label itself may hold '|')
        relabel = lambda k: k[: k.index("|", k.index("|axis") + 1)] + "|fuzz"
        cache["ranges"] = {relabel(k): v for k, v in cache["ranges"].items()}
        put("calib_cache", "fashion_cnn.json", json.dumps(cache, indent=1).encode())
        out = os.path.join(tmp, "sweep")
        subprocess.run([joule, "profile", "default", "--batch", "1", "--threads", "1", "--runs", "2",
                        "--warmup", "0", "-o", out], check=True, stdout=subprocess.DEVNULL)
        stem = [f for f in os.listdir(out) if f.endswith("_overall.csv")][0][: -len("_overall.csv")]
        overall = open(os.path.join(out, stem + "_overall.csv"), "rb").read()
        layers = open(os.path.join(out, stem + "_layers.csv"), "rb").read()
        put("sweep_resume", "one_point_done", struct.pack("<H", len(overall)) + overall + layers)
        put("sweep_resume", "half_written", struct.pack("<H", len(overall) // 2) + overall[: len(overall) // 2])
    print("seeds in", SEEDS)


if __name__ == "__main__":
    main()
