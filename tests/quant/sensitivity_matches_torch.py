#!/usr/bin/python3
"""joule's per-layer SQNR against an independent PyTorch computation of the same quantity.

A small CNN is exported to ONNX. joule quantizes it (W8A8: per-channel int8 weights, uint8
activations) and reports, in cumulative mode, each layer's output SQNR against FP32. This
script rebuilds the quantized model in PyTorch from the scales and zero points joule printed
(ONNX QuantizeLinear arithmetic written in torch), runs both, and computes the
pooled SQNR with numpy. The two must agree to 0.01 dB; the final output too.

Usage: sensitivity_matches_torch.py JOULE_BINARY
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def sqnr(ref, q):
    ref = np.asarray(ref, np.float64)
    q = np.asarray(q, np.float64)
    return 10 * np.log10((ref ** 2).sum() / ((ref - q) ** 2).sum())


# ONNX QuantizeLinear semantics: x / scale in float32, rounded half to even (torch.round), plus
# the zero point, saturated. (torch.fake_quantize_* multiply by 1/scale instead, which rounds the
# odd value at exactly +-127.5 steps differently.)
def fake_quant(x, scale, zero_point, qmin, qmax):
    q = torch.clamp(torch.round(x / scale) + zero_point, qmin, qmax)
    return (q - zero_point) * scale


def fq_act(x, p):
    return fake_quant(x, torch.tensor(p["scale"][0], dtype=torch.float32), float(p["zero_point"][0]), 0, 255)


def fq_weight(w, p, axis):
    shape = [1] * w.dim()
    shape[axis] = -1
    s = torch.tensor(p["scale"], dtype=torch.float32).reshape(shape)
    z = torch.tensor(p["zero_point"], dtype=torch.float32).reshape(shape)
    return fake_quant(w, s, z, -128, 127)


def main():
    joule = sys.argv[1]
    torch.manual_seed(0)
    net = Net().eval()
    rng = np.random.default_rng(3)
    data = rng.standard_normal((6, 3, 16, 16), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "net.onnx")
        torch.onnx.export(net, torch.from_numpy(data[:1]), model, opset_version=13, input_names=["x"],
                          output_names=["y"])
        np.save(os.path.join(tmp, "data.npy"), data)
        cfg = os.path.join(tmp, "q.yaml")
        with open(cfg, "w") as f:
            f.write("default:\n"
                    "  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel}\n"
                    "  input: {format: int, bits: 8, symmetric: false, calibrator: minmax}\n")
        common = ["--config", cfg, "--calib", os.path.join(tmp, "data.npy"), "--format", "json", "--quiet"]
        plan = json.loads(subprocess.run([joule, "quantize", model] + common, check=True, capture_output=True,
                                         text=True).stdout)["plan"]
        sens = json.loads(subprocess.run([joule, "sensitivity", model, "--samples", "6", "--mode", "cumulative",
                                          "--variants", "all", "-o", os.path.join(tmp, "s")] + common,
                                         check=True, capture_output=True, text=True).stdout)
    params = {}
    for n in plan["nodes"]:
        params[n["node"]] = {"input": n["tensors"]["input"][0], "weight": n["tensors"]["weight"][0]}
    layers = {"/conv1/Conv": (net.conv1, "conv"), "/conv2/Conv": (net.conv2, "conv"), "/fc/Gemm": (net.fc, "fc")}
    assert set(params) == set(layers), f"joule quantized {sorted(params)}"

    def run(x, quantize):
        outs = {}
        for name, (m, kind) in layers.items():
            w = m.weight
            if quantize:
                x = fq_act(x, params[name]["input"])
                w = fq_weight(w, params[name]["weight"], 0)
            y = F.conv2d(x, w, m.bias, m.stride, m.padding) if kind == "conv" else F.linear(x, w, m.bias)
            outs[name] = y
            x = torch.flatten(F.relu(y), 1) if name == "/conv2/Conv" else F.relu(y)
        return outs

    with torch.no_grad():
        ref = [run(torch.from_numpy(data[i:i + 1]), False) for i in range(len(data))]
        qnt = [run(torch.from_numpy(data[i:i + 1]), True) for i in range(len(data))]
    failures = []
    by_node = {L["node"]: L for L in sens["layers"]}
    for name in layers:
        mine = sqnr(np.concatenate([r[name].numpy().ravel() for r in ref]),
                    np.concatenate([q[name].numpy().ravel() for q in qnt]))
        theirs = by_node[name]["metrics"]["all"]["sqnr_db"]
        print(f"{name:14s} torch/numpy {mine:8.3f} dB   joule {theirs:8.3f} dB")
        if abs(mine - theirs) > 0.01:
            failures.append(name)
    final = sens["final_output"]["all"]["sqnr_db"]
    mine = sqnr(np.concatenate([r["/fc/Gemm"].numpy().ravel() for r in ref]),
                np.concatenate([q["/fc/Gemm"].numpy().ravel() for q in qnt]))
    print(f"{'final output':14s} torch/numpy {mine:8.3f} dB   joule {final:8.3f} dB")
    if abs(mine - final) > 0.01:
        failures.append("final output")
    if failures:
        print("MISMATCH:", ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
