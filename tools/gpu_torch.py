#!/usr/bin/env python3
"""The PyTorch side of joule's GPU check (tools/gpu_check.sh), run on the GPU machine.

export DIR: ResNet-50, MobileNetV2 and ViT-B/16 (torchvision, seeded random weights, eval) to
  ONNX (opset 13, dynamic batch), seeded inputs at batch 1 and 32, and PyTorch's own FP32
  outputs on the GPU (TF32 off) for both batches.
time DIR [MATHS]: PyTorch eager latency on the GPU per model and batch, FP32 (TF32 off), TF32,
  FP16 and BF16 (or the comma-separated MATHS), median of CUDA-event timings -> DIR/torch_times.json.
compare DIR OUTDIR: joule's outputs (OUTDIR/<model>_b<batch>/*.npy) against PyTorch's.
"""
import copy
import json
import os
import sys
import time

import numpy as np
import torch
import torchvision

MODELS = {"resnet50": torchvision.models.resnet50, "mobilenet_v2": torchvision.models.mobilenet_v2,
          "vit_b_16": torchvision.models.vit_b_16}
BATCHES = (1, 32)


def build(name):
    torch.manual_seed(0)
    m = MODELS[name](weights=None).eval()
    if name == "vit_b_16":  # torchvision zero-initialises the head: every logit would be 0
        torch.nn.init.normal_(m.heads.head.weight, std=0.02)
        torch.nn.init.normal_(m.heads.head.bias, std=0.02)
    # Freshly initialised BatchNorm statistics (mean 0, variance 1) do not normalise: MobileNetV2's
    # activations then shrink layer by layer to logits of 3e-9, under float16's smallest number.
    # The statistics of a few seeded batches (as training would leave them) keep every layer at
    # the scale a trained network has.
    if any(isinstance(x, torch.nn.BatchNorm2d) for x in m.modules()):
        for x in m.modules():
            if isinstance(x, torch.nn.BatchNorm2d):
                x.momentum = None  # a plain average over the batches
        m.train()
        with torch.no_grad():
            for i in range(4):
                m(torch.randn(8, 3, 224, 224, generator=torch.Generator().manual_seed(100 + i)))
        m.eval()
    return m


def export(d):
    os.makedirs(d, exist_ok=True)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    for name in MODELS:
        t0 = time.time()
        m = build(name)
        x1 = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(1))
        path = f"{d}/{name}.onnx"
        torch.onnx.export(m, x1, path, opset_version=14 if name == "vit_b_16" else 13, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
        mc = m.cuda()
        for b in BATCHES:
            x = torch.randn(b, 3, 224, 224, generator=torch.Generator().manual_seed(b))
            np.save(f"{d}/{name}_in{b}.npy", x.numpy())
            with torch.no_grad():
                np.save(f"{d}/{name}_torch{b}.npy", mc(x.cuda()).float().cpu().numpy())
                for math, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):  # PyTorch's own half precision
                    mh = copy.deepcopy(mc).to(dt)  # (a round trip through half would round mc's weights)
                    np.save(f"{d}/{name}_torch{b}_{math}.npy", mh(x.cuda().to(dt)).float().cpu().numpy())
        print(f"exported {name} in {time.time() - t0:.1f}s", flush=True)


def time_model(m, x, runs=50, warmup=10):
    """Median ms of m(x) with x on the GPU (CUDA events), and of the whole trip from a numpy array
    in host memory to a numpy array of the outputs (wall clock), as joule's run and bench time it."""
    host = x.float().cpu().numpy()
    with torch.no_grad():
        for _ in range(warmup):
            m(x)
        torch.cuda.synchronize()
        ts, e2e = [], []
        for _ in range(runs):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            m(x)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        for _ in range(runs):
            t0 = time.perf_counter()
            m(torch.from_numpy(host).to("cuda", x.dtype)).float().cpu().numpy()
            e2e.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts)), float(np.median(e2e))


def time_all(d, maths="fp32,tf32,fp16,bf16"):
    maths = maths.split(",")
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "cudnn": torch.backends.cudnn.version()}
    for name in MODELS:
        m = build(name).cuda()
        for b in BATCHES:
            x = torch.randn(b, 3, 224, 224).cuda()
            for math in maths:
                tf32 = math == "tf32"
                torch.backends.cudnn.allow_tf32 = tf32
                torch.backends.cuda.matmul.allow_tf32 = tf32
                dt = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(math, torch.float32)
                out[f"{name}_b{b}_{math}"] = time_model(copy.deepcopy(m).to(dt), x.to(dt))
        for k, v in out.items():
            if k.startswith(name):
                print(f"torch {k}: on-GPU {v[0]:.3f} ms, numpy to numpy {v[1]:.3f} ms", flush=True)
    json.dump(out, open(f"{d}/torch_times.json", "w"), indent=1)


def against(j, t):
    rel = float(np.abs(j - t).max() / max(np.abs(t).max(), 1e-12))
    sqnr = float(10 * np.log10((t ** 2).sum() / max(((j - t) ** 2).sum(), 1e-30)))
    return f"max|diff|/max|fp32| = {rel:.2e}  SQNR {sqnr:.1f} dB  top1 agree {float((j.argmax(1) == t.argmax(1)).mean()):.3f}"


def compare(d, outdir, math="fp32"):
    """joule's outputs against PyTorch FP32 (and, for fp16/bf16, PyTorch's own half precision
    against its FP32: how far the same arithmetic moves PyTorch)."""
    for name in MODELS:
        for b in BATCHES:
            p = f"{outdir}/{name}_b{b}/logits.npy"
            if not os.path.exists(p):
                print(f"{name} b{b}: no joule output")
                continue
            j, t = np.load(p), np.load(f"{d}/{name}_torch{b}.npy")
            line = f"{name} b{b}: joule {math} vs torch fp32: {against(j, t)}"
            th = f"{d}/{name}_torch{b}_{math}.npy"
            if os.path.exists(th):
                line += f" | torch {math} vs torch fp32: {against(np.load(th), t)}"
            print(line, flush=True)


if __name__ == "__main__":
    {"export": lambda: export(sys.argv[2]), "time": lambda: time_all(*sys.argv[2:4]),
     "compare": lambda: compare(*sys.argv[2:5])}[sys.argv[1]]()
