#!/usr/bin/python3
"""W8A8 post-training quantization, joule vs PyTorch FX (torch.ao), side by side.

For each torchvision model: seeded random weights, BatchNorm statistics gathered by running
random batches through the model in train mode (so activations have realistic scales), then
the same calibration and evaluation samples for both engines:

  * joule: `joule sensitivity MODEL --config CFG --calib calib.npy --eval eval.npy --mode
    cumulative --variants all --format json`; final-output SQNR of its QDQ simulation.
  * PyTorch: prepare_fx / convert_fx with the onednn qconfig (Debian's torch has no fbgemm),
    calibrated on calib.npy; its int8 model run on eval.npy.

Both SQNRs are against the same FP32 reference (each engine's own FP32 output; they agree to
~1e-5). SQNR = 10 log10(sum ref^2 / sum (ref - q)^2) over all evaluation samples.

Usage: /usr/bin/python3 tools/quant_vs_torch.py [--joule build/joule] [--models resnet18,mobilenet_v2]
       [--calib 32] [--eval 16] [--configs examples/quant/w8a8.yaml,...]
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx


def build(name, seed=0):
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)(num_classes=1000)
    # Real BatchNorm statistics: cumulative averages over random batches in train mode.
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for _ in range(8):
            model(torch.randn(8, 3, 224, 224, generator=g))
    return model.eval()


def sqnr(ref, q):
    ref = np.asarray(ref, np.float64)
    q = np.asarray(q, np.float64)
    return 10 * np.log10((ref ** 2).sum() / ((ref - q) ** 2).sum())


def torch_fx_ptq(model, calib, evals):
    torch.backends.quantized.engine = "onednn"
    qmap = get_default_qconfig_mapping("onednn")
    prepared = prepare_fx(copy.deepcopy(model), qmap, example_inputs=(torch.from_numpy(calib[:1]),))
    with torch.no_grad():
        for i in range(len(calib)):
            prepared(torch.from_numpy(calib[i:i + 1]))
    q = convert_fx(prepared)
    with torch.no_grad():
        return np.stack([q(torch.from_numpy(evals[i:i + 1])).numpy() for i in range(len(evals))])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--joule", default="build/joule")
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--calib", type=int, default=32)
    ap.add_argument("--eval", type=int, default=16)
    ap.add_argument("--configs", default="tools/quant_vs_torch_w8a8.yaml,examples/quant/w8a8.yaml")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            model = build(name)
            rng = np.random.default_rng(7)
            calib = rng.standard_normal((args.calib, 3, 224, 224), dtype=np.float32)
            evals = rng.standard_normal((args.eval, 3, 224, 224), dtype=np.float32)
            onnx_path = os.path.join(tmp, name + ".onnx")
            torch.onnx.export(model, torch.from_numpy(calib[:1]), onnx_path, opset_version=13,
                              input_names=["input"], output_names=["logits"])
            np.save(os.path.join(tmp, "calib.npy"), calib)
            np.save(os.path.join(tmp, "eval.npy"), evals)
            with torch.no_grad():
                ref = np.stack([model(torch.from_numpy(evals[i:i + 1])).numpy() for i in range(len(evals))])
            t0 = time.time()
            tq = torch_fx_ptq(model, calib, evals)
            rows.append((name, "PyTorch FX, onednn qconfig", sqnr(ref, tq), time.time() - t0))
            for cfg in args.configs.split(","):
                t0 = time.time()
                out = subprocess.run(
                    [args.joule, "sensitivity", onnx_path, "--config", cfg, "--calib", os.path.join(tmp, "calib.npy"),
                     "--calib-samples", str(args.calib), "--eval", os.path.join(tmp, "eval.npy"), "--samples",
                     str(args.eval), "--mode", "cumulative", "--variants", "all", "--format", "json", "--quiet",
                     "--threads", str(args.threads), "-o", os.path.join(tmp, "sens")],
                    check=True, capture_output=True, text=True)
                j = json.loads(out.stdout)
                rows.append((name, "joule " + os.path.basename(cfg), j["final_output"]["all"]["sqnr_db"],
                             time.time() - t0))
            print(f"{name}: done", file=sys.stderr)
    print(f"calibration samples {args.calib}, evaluation samples {args.eval} (seeded normal images)")
    print("| model | quantizer | final-output SQNR (dB) | seconds |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.0f} |")


if __name__ == "__main__":
    main()
