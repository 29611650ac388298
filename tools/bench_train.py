#!/usr/bin/python3
"""Training speed: joule against PyTorch on the same model, data, batch and threads.

The model is the bundled Fashion-MNIST CNN's architecture (tools/train_fashion_mnist.py) with
the same seeded initial weights in both (PyTorch's, exported to ONNX for joule); the data is
Debian's Fashion-MNIST; the optimizer AdamW. Each engine trains STEPS steps per process in
PROCESSES processes, alternating; a step is forward, loss, backward and the optimizer update (the
batch is assembled outside the timing in PyTorch, read ahead on a thread in joule). Reported:
the best process's median ms per step, the epoch time it makes (60000 / batch steps), and the
ratio joule / PyTorch.

    PYTHONPATH=build/python /usr/bin/python3 tools/bench_train.py [--batch 256] [--threads 2]
        [--steps 40] [--processes 3]
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def trainer_module():
    spec = importlib.util.spec_from_file_location("train_fashion_mnist", os.path.join(HERE, "train_fashion_mnist.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def run_torch(a, onnx_path):
    import numpy as np
    import torch
    import torch.nn.functional as F
    tf = trainer_module()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = tf.FashionCNN()
    model.load_state_dict(torch.load(onnx_path + ".pt"))
    images, labels = tf.load_split("train")
    x = torch.from_numpy(tf.normalise(images))
    y = torch.from_numpy(labels.astype(np.int64))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=5e-4)
    model.train()
    times = []
    for s in range(a.steps):
        xb, yb = x[s * a.batch:(s + 1) * a.batch], y[s * a.batch:(s + 1) * a.batch]
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def run_joule(a, onnx_path):
    import joule
    m = joule.load(onnx_path)
    records = []
    joule.train(m, "/usr/share/datasets/fashion-mnist:train", batch=a.batch, steps=a.steps, optimizer="adamw",
                lr=1e-3, weight_decay=5e-4, shuffle=False, threads=a.threads, on_record=records.append)
    return [1e3 * a.batch / r["samples_per_s"] for r in records if r["event"] == "step"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--engine", choices=["torch", "joule"], help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.engine:  # one measuring process
        times = (run_torch if a.engine == "torch" else run_joule)(a, a.model)
        print(json.dumps(times[3:]))  # the first steps warm up (allocation, oneDNN primitives)
        return
    import torch
    tf = trainer_module()
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "fashion_cnn_init.onnx")
    torch.manual_seed(0)
    model = tf.FashionCNN().eval()
    torch.save(model.state_dict(), path + ".pt")
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), path, input_names=["input"], output_names=["logits"],
                      opset_version=13, do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
    best = {"torch": float("inf"), "joule": float("inf")}
    for p in range(a.processes):
        for engine in ("torch", "joule"):
            out = subprocess.run([sys.executable, __file__, "--engine", engine, "--model", path, "--batch", str(a.batch),
                                  "--threads", str(a.threads), "--steps", str(a.steps)],
                                 check=True, capture_output=True, text=True).stdout
            ms = statistics.median(json.loads(out.strip().splitlines()[-1]))
            best[engine] = min(best[engine], ms)
            print(f"process {p + 1}: {engine:<6} median {ms:8.2f} ms/step", flush=True)
    steps_per_epoch = 60000 // a.batch
    print(f"\nFashion-MNIST CNN, batch {a.batch}, {a.threads} thread(s), AdamW; best of {a.processes} processes")
    print(f"{'engine':<8} {'ms/step':>9} {'epoch s':>9}")
    for engine in ("torch", "joule"):
        print(f"{engine:<8} {best[engine]:>9.2f} {best[engine] * steps_per_epoch / 1e3:>9.1f}")
    print(f"joule / PyTorch: {best['joule'] / best['torch']:.2f}x")


if __name__ == "__main__":
    main()
