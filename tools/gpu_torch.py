#!/usr/bin/env python3
"""The PyTorch side of joule's GPU check (tools/gpu_check.sh), run on the GPU machine.

export DIR: ResNet-50, MobileNetV2 and ViT-B/16 (torchvision, seeded random weights, eval) to
  ONNX (opset 13, dynamic batch), seeded inputs at batch 1 and 32, and PyTorch's own FP32
  outputs on the GPU (TF32 off) for both batches.
time DIR: PyTorch eager latency on the GPU per model and batch, FP32 (TF32 off), TF32 and FP16,
  median of CUDA-event timings -> DIR/torch_times.json.
compare DIR OUTDIR: joule's outputs (OUTDIR/<model>_b<batch>/*.npy) against PyTorch's.
"""
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
        print(f"exported {name} in {time.time() - t0:.1f}s", flush=True)


def time_model(m, x, runs=50, warmup=10):
    """Median ms of m(x) with x on the GPU (CUDA events), and of the whole trip from a numpy array
    in host memory to a numpy array of the outputs (wall clock), as joule's run and bench time it."""
    host = x.cpu().numpy()
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


def time_all(d):
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "cudnn": torch.backends.cudnn.version()}
    for name in MODELS:
        m = build(name).cuda()
        for b in BATCHES:
            x = torch.randn(b, 3, 224, 224).cuda()
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
            out[f"{name}_b{b}_fp32"] = time_model(m, x)
            torch.backends.cudnn.allow_tf32 = True
            torch.backends.cuda.matmul.allow_tf32 = True
            out[f"{name}_b{b}_tf32"] = time_model(m, x)
            out[f"{name}_b{b}_fp16"] = time_model(m.half(), x.half())
            m.float()
        for k, v in out.items():
            if k.startswith(name):
                print(f"torch {k}: on-GPU {v[0]:.3f} ms, numpy to numpy {v[1]:.3f} ms", flush=True)
    json.dump(out, open(f"{d}/torch_times.json", "w"), indent=1)


def compare(d, outdir):
    for name in MODELS:
        for b in BATCHES:
            p = f"{outdir}/{name}_b{b}/logits.npy"
            if not os.path.exists(p):
                print(f"{name} b{b}: no joule output")
                continue
            j, t = np.load(p), np.load(f"{d}/{name}_torch{b}.npy")
            rel = float(np.abs(j - t).max() / max(np.abs(t).max(), 1e-12))
            sqnr = float(10 * np.log10((t ** 2).sum() / max(((j - t) ** 2).sum(), 1e-30)))
            print(f"{name} b{b}: max|joule-torch|/max|torch| = {rel:.2e}  SQNR {sqnr:.1f} dB  "
                  f"top1 agree {float((j.argmax(1) == t.argmax(1)).mean()):.3f}", flush=True)


if __name__ == "__main__":
    {"export": lambda: export(sys.argv[2]), "time": lambda: time_all(sys.argv[2]),
     "compare": lambda: compare(sys.argv[2], sys.argv[3])}[sys.argv[1]]()
