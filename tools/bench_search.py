#!/usr/bin/env python3
"""Search benchmark: joule search on the bundled Fashion-MNIST CNN (labelled: top-1) and on
ResNet-18 of the zoo (seeded weights, so the accuracy is the output's SQNR against FP32, on
Fashion-MNIST images upsampled to 3x224x224), NSGA-II against the seeded random baseline,
measured cost; the bundled model also with predicted cost (an operator store filled from its
FP32 and W8A8 layers). Prints the fronts and whether a point dominates uniform W8A8.

  python3 tools/bench_search.py [--trials 200] [--resnet-trials 100] [--out /tmp/joule_search_bench]
"""
import argparse, gzip, json, os, subprocess, sys, time
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOULE = os.path.join(ROOT, "build", "joule")
FASHION = "/usr/share/datasets/fashion-mnist"


def images(n, offset):
    with gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)[offset:offset + n]
    x = x.astype(np.float32) / 255.0
    x = np.kron(x, np.ones((8, 8), np.float32))  # 28 -> 224, nearest
    x = (x - 0.45) / 0.25
    return np.ascontiguousarray(np.repeat(x[:, None], 3, axis=1))


def joule(*args):
    t = time.time()
    r = subprocess.run([JOULE, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"joule {' '.join(args)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout, time.time() - t


def summary(out_dir):
    j = json.load(open(os.path.join(out_dir, "search.json")))
    return j


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--resnet-trials", type=int, default=100)
    ap.add_argument("--out", default="/tmp/joule_search_bench")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    space = os.path.join(a.out, "space.yaml")
    with open(space, "w") as f:
        f.write("precision: [fp32, bf16, int8]\nprune: [0, 0.125, 0.25]\n")
    runs = []
    if a.only in ("", "bundled"):
        for algo in ("nsga2", "random"):
            d = os.path.join(a.out, f"bundled_{algo}")
            out, s = joule("search", "default", "--space", space, "--data", f"{FASHION}:train", "--val",
                           f"{FASHION}:test", "--val-samples", "1000", "--trials", str(a.trials), "--runs", "50",
                           "--algorithm", algo, "-o", d)
            print(f"== bundled model, {algo}, measured cost ({s:.0f} s)\n{out}")
            runs.append(d)
        # Predicted cost: an operator store with the model's FP32 and W8A8 layers.
        db = os.path.join(a.out, "opdb.sqlite")
        if not os.path.exists(db):
            w8 = os.path.join(a.out, "fashion_w8a8.onnx")
            q = os.path.join(ROOT, "examples", "quant", "w8a8.yaml")
            joule("quantize", "default", "--config", q, "--calib", f"{FASHION}:train", "-o", w8)
            joule("opdb", "add", "default", w8, "--db", db, "--threads", "1")
        d = os.path.join(a.out, "bundled_predicted")
        out, s = joule("search", "default", "--space", space, "--data", f"{FASHION}:train", "--val",
                       f"{FASHION}:test", "--val-samples", "1000", "--trials", str(a.trials), "--runs", "50",
                       "--cost", "predicted", "--opdb", db, "-o", d)
        print(f"== bundled model, nsga2, predicted cost ({s:.0f} s)\n{out}")
    if a.only in ("", "resnet18"):
        model = os.path.expanduser("~/.cache/joule/models/resnet18/model.onnx")
        val, calib = os.path.join(a.out, "r18_val.npy"), os.path.join(a.out, "r18_calib.npy")
        np.save(val, images(32, 0))
        np.save(calib, images(32, 5000))
        d = os.path.join(a.out, "resnet18_nsga2")
        out, s = joule("search", model, "--space", space, "--data", calib, "--calib-samples", "32", "--val", val,
                       "--trials", str(a.resnet_trials), "--runs", "10", "-o", d)
        print(f"== resnet18, nsga2, measured cost ({s:.0f} s)\n{out}")


if __name__ == "__main__":
    main()
