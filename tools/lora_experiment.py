#!/usr/bin/python3
"""LoRA against full fine-tuning on a shifted task, all on joule's engine.

1. A small ViT-style classifier (PyTorch definition: 7x7 patches of Fashion-MNIST as 16 tokens
   of width 192, two pre-norm encoder layers with 4 heads and GELU MLPs, mean pooling, a linear
   head), exported with seeded random weights, is trained by joule on Fashion-MNIST.
2. The shifted task: the classes renamed by a fixed permutation (--shift permute, the default), or
   the images inverted (--shift invert: 255 - pixel, which a low-rank update of the patch
   embedding cannot undo: it needs -2 W there, a full-rank change).
3. Full fine-tuning and LoRA (rank 4 on every Linear and Conv, merged afterwards) each train the
   same number of epochs on the shifted training set; both are evaluated on the shifted test set.

    PYTHONPATH=build/python /usr/bin/python3 tools/lora_experiment.py [--epochs 4] [--adapt-epochs 2]
"""
import argparse
import importlib.util
import os
import sys
import tempfile
import time

import numpy as np

import joule

HERE = os.path.dirname(os.path.abspath(__file__))


def fashion():
    spec = importlib.util.spec_from_file_location("tf", os.path.join(HERE, "train_fashion_mnist.py"))
    tf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tf)
    tr, trl = tf.load_split("train")
    te, tel = tf.load_split("t10k")
    def prep(u8, invert):
        return tf.normalise(255 - u8 if invert else u8)
    return (prep(tr, False), trl.astype(np.int64), prep(te, False), tel.astype(np.int64),
            prep(tr, True), prep(te, True))


def export_model(path):
    import torch
    import torch.nn as nn

    import torch.nn.functional as F

    class Block(nn.Module):
        """Pre-norm encoder block; reshapes keep the batch as -1 (the export then fits any batch)."""

        def __init__(self, tokens, dim, heads):
            super().__init__()
            self.t, self.d, self.h = tokens, dim, heads
            self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc1, self.fc2 = nn.Linear(dim, 2 * dim), nn.Linear(2 * dim, dim)

        def forward(self, x):
            hd = self.d // self.h
            qkv = self.qkv(self.n1(x)).reshape(-1, self.t, 3, self.h, hd).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * hd ** -0.5, dim=-1)
            y = torch.matmul(att, v).transpose(1, 2).reshape(-1, self.t, self.d)
            x = x + self.proj(y)
            return x + self.fc2(F.gelu(self.fc1(self.n2(x))))

    class ViT(nn.Module):
        def __init__(self, dim=192, heads=4, layers=2, classes=10):
            super().__init__()
            self.dim = dim
            self.patch = nn.Conv2d(1, dim, 7, stride=7)
            self.pos = nn.Parameter(torch.randn(1, 16, dim) * 0.02)
            self.layers = nn.ModuleList([Block(16, dim, heads) for _ in range(layers)])
            self.norm = nn.LayerNorm(dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, x):
            t = self.patch(x).reshape(-1, self.dim, 16).transpose(1, 2) + self.pos
            for layer in self.layers:
                t = layer(t)
            return self.head(self.norm(t).mean(1))

    torch.manual_seed(0)
    net = ViT().eval()
    with torch.no_grad():  # no two parameters equal (the exporter would share them)
        for p in net.parameters():
            p.add_(torch.randn(p.shape) * 1e-3)
    import warnings
    warnings.filterwarnings("ignore")
    torch.onnx.export(net, torch.zeros(1, 1, 28, 28), path, input_names=["input"], output_names=["logits"],
                      opset_version=17, do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
    return sum(p.numel() for p in net.parameters())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=4, help="pre-training epochs")
    ap.add_argument("--adapt-epochs", type=int, default=2, help="fine-tuning epochs (both methods)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lora-lr", type=float, default=5e-3)
    ap.add_argument("--shift", choices=["permute", "invert"], default="permute")
    ap.add_argument("--lora-alpha", type=float, default=0, help="adapter scale alpha / rank (0: 1)")
    ap.add_argument("--base", help="reuse this pre-trained model (written by --save-base) instead of pre-training")
    ap.add_argument("--save-base", help="write the pre-trained model here")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "vit.onnx")
    params = export_model(path)
    x, y, xt, yt, xi, xti = fashion()
    common = dict(batch=128, optimizer="adamw", weight_decay=1e-4, schedule="cosine", warmup_steps=100,
                  threads=a.threads)
    t0 = time.time()
    base = joule.load(a.base) if a.base else joule.train(joule.load(path), (x, y), epochs=a.epochs, lr=2e-3, **common)
    t_pre = time.time() - t0
    if a.save_base:
        base.save(a.save_base)
    perm = np.array([3, 7, 0, 9, 1, 8, 2, 5, 6, 4])  # no class keeps its label
    # The shifted task's training data and test set.
    if a.shift == "permute":
        sx, sy, stx, sty = x, perm[y], xt, perm[yt]
    else:
        sx, sy, stx, sty = xi, y, xti, yt
    acc = lambda m, xs, ys: joule.evaluate(m, (xs, ys), threads=a.threads).top1
    pre, pre_shift = acc(base, xt, yt), acc(base, stx, sty)
    t0 = time.time()
    full = joule.train(base, (sx, sy), epochs=a.adapt_epochs, lr=1e-3, **common)
    t_full = time.time() - t0
    t0 = time.time()
    lora = joule.finetune(base, (sx, sy), rank=4, alpha=a.lora_alpha or None, epochs=a.adapt_epochs, lr=a.lora_lr,
                          **common)
    t_lora = time.time() - t0
    full_acc, lora_acc = acc(full, stx, sty), acc(lora, stx, sty)
    frac = lora.report.trained_values / lora.report.model_values
    print(f"small ViT, {params} parameters; Fashion-MNIST, {a.threads} threads")
    print(f"pre-trained {a.epochs} epochs ({t_pre:.0f} s): top-1 {100 * pre:.2f}% on the test set, "
          f"{100 * pre_shift:.2f}% on the shifted ({a.shift}) test set")
    print(f"{'adaptation':<28} {'trained':>16} {'shifted top-1':>15} {'seconds':>8}")
    print(f"{'full fine-tuning':<28} {full.report.trained_values:>8} (100.0%) {100 * full_acc:>14.2f}% {t_full:>8.0f}")
    print(f"{'LoRA rank 4 (' + str(len(lora.report.lora['layers'])) + ' layers)':<28} "
          f"{lora.report.trained_values:>8} ({100 * frac:>5.1f}%) {100 * lora_acc:>14.2f}% {t_lora:>8.0f}")
    print(f"LoRA - full: {100 * (lora_acc - full_acc):+.2f} points")


if __name__ == "__main__":
    sys.exit(main())
