#!/usr/bin/env python3
"""Search benchmark: joule search on the bundled Fashion-MNIST CNN (labelled: top-1) and on
ResNet-18 trained on Fashion-MNIST padded to 3x32x32 (tools/train_zoo_resnet18.py; labelled:
top-1; its pruned trials fine-tuned; and a second space over W8A8 that prunes only the
blocks' inner convs, not fine-tuned), NSGA-II (and, on the bundled model, the seeded random
baseline), measured cost; the bundled model also with predicted cost (an operator store filled from its
FP32 and W8A8 layers); and QAT as a choice on the bundled model (int8 or 4-bit weights per
layer, each quantized trial calibrated or trained by QAT). Prints the fronts and whether a
point dominates uniform W8A8.

  python3 tools/bench_search.py [--trials 200] [--resnet-trials 120] [--qat-trials 40] [--only bundled|resnet18|qat]
                                [--out /tmp/joule_search_bench]
"""
import argparse, json, os, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOULE = os.path.join(ROOT, "build", "joule")
FASHION = "/usr/share/datasets/fashion-mnist"


def joule(*args):
    t = time.time()
    r = subprocess.run([JOULE, *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"joule {' '.join(args)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout, time.time() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--resnet-trials", type=int, default=120)
    ap.add_argument("--qat-trials", type=int, default=40)
    ap.add_argument("--out", default="/tmp/joule_search_bench")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    space = os.path.join(a.out, "space.yaml")
    with open(space, "w") as f:
        f.write("precision: [fp32, bf16, int8]\nprune: [0, 0.25, 0.5]\n")
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
        # A trained ResNet-18 (tools/train_zoo_resnet18.py): labelled, so the accuracy is top-1.
        zoo = os.path.expanduser("~/.cache/joule/zoo_trained/resnet18_fashion32")
        if not os.path.exists(os.path.join(zoo, "model.onnx")):
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "train_zoo_resnet18.py")], check=True)
        # Pruned trials are fine-tuned (30 SGD steps of 32 images, on every core) before they are quantized.
        space_ft = os.path.join(a.out, "space_finetune.yaml")
        with open(space_ft, "w") as f:
            f.write("precision: [fp32, bf16, int8]\nprune: [0, 0.25, 0.5]\n"
                    "finetune: {steps: 30, batch: 32, lr: 0.002, optimizer: sgd}\n")
        d = os.path.join(a.out, "resnet18_nsga2_finetune")
        out, s = joule("search", os.path.join(zoo, "model.onnx"), "--space", space_ft, "--data",
                       os.path.join(zoo, "calib.npy"), "--calib-samples", "64", "--train-data",
                       os.path.join(zoo, "train.npy"), "--val", os.path.join(zoo, "val.npy"), "--val-samples", "1000",
                       "--trials", str(a.resnet_trials), "--runs", "20", "--name", "search:resnet18_fashion32", "-o", d)
        print(f"== resnet18 (trained on Fashion-MNIST 32x32), nsga2, pruned trials fine-tuned, measured cost "
              f"({s:.0f} s)\n{out}")
        # W8A8 with the residual blocks' inner convs (conv1 of each block: pruning them touches no
        # residual group) pruned 0, 25 or 50 %, no fine-tuning: `joule prune --sensitivity` puts
        # them at 0-1 point of top-1 each, the residual groups at 2-8.
        space_inner = os.path.join(a.out, "space_inner.yaml")
        with open(space_inner, "w") as f:
            f.write('precision: [int8]\nprune: [0, 0.25, 0.5]\nprune_layers: {regex: "layer[0-9]\\\\.[0-9]/conv1/"}\n')
        d = os.path.join(a.out, "resnet18_nsga2_inner")
        out, s = joule("search", os.path.join(zoo, "model.onnx"), "--space", space_inner, "--data",
                       os.path.join(zoo, "calib.npy"), "--calib-samples", "64", "--val", os.path.join(zoo, "val.npy"),
                       "--val-samples", "1000", "--trials", str(a.resnet_trials), "--runs", "20",
                       "--name", "search:resnet18_fashion32_inner", "-o", d)
        print(f"== resnet18 (trained on Fashion-MNIST 32x32), nsga2, W8A8 with inner convs pruned, measured cost "
              f"({s:.0f} s)\n{out}")
    if a.only in ("", "qat"):
        # QAT as a choice on the bundled model: per-layer int8 or 4-bit weights (int8 activations),
        # each quantized trial calibrated only or trained by QAT (200 Adam steps of 64 images).
        space_qat = os.path.join(a.out, "space_qat.yaml")
        with open(space_qat, "w") as f:
            f.write("precision: [int8, w4]\nformats:\n  w4: {weight: {format: int, bits: 4, symmetric: true, "
                    "granularity: per_channel}}\nqat: {steps: 200, batch: 64, lr: 0.0001, optimizer: adam, method: lsq}\n")
        d = os.path.join(a.out, "bundled_qat")
        out, s = joule("search", "default", "--space", space_qat, "--data", f"{FASHION}:train", "--train-data",
                       f"{FASHION}:train", "--val", f"{FASHION}:test", "--val-samples", "2000", "--trials",
                       str(a.qat_trials), "--runs", "50", "--objectives", "accuracy,size", "-o", d)
        print(f"== bundled model, nsga2, int8/w4 per layer x QAT off/on, accuracy and size ({s:.0f} s)\n{out}")
        # Each genome with QAT on beside the same genome calibrated only.
        trials = [json.loads(l) for l in open(os.path.join(d, "trials.jsonl")).read().splitlines()[1:]]
        by_key = {t["key"]: t for t in trials}
        pairs = [(by_key[k[:-1] + "0"], t) for k, t in by_key.items() if t.get("qat") and k[:-1] + "0" in by_key]
        print(f"{len(pairs)} genomes run both ways; top-1 calibrated -> QAT:")
        for off, on in sorted(pairs, key=lambda p: p[0]["size_mb"]):
            print(f"  {off['key'][:-1]:>12}  size {off['size_mb']:.4f} MB  {off['accuracy']:.2f} % -> {on['accuracy']:.2f} %")

if __name__ == "__main__":
    main()
