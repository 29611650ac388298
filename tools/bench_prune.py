#!/usr/bin/env python3
"""Structured pruning: how much smaller and faster the pruned models are, on joule and on
ONNX Runtime (npm onnxruntime-node), side by side.

Each model is pruned with `joule prune --structured --ratio R` (no fine-tuning: this measures
size and speed, not accuracy); the original and the pruned models are then timed in separate
processes, interleaved, best median of --processes per engine. Prints a Markdown table.

usage: /usr/bin/python3 tools/bench_prune.py --model-dir ~/.cache/joule/models \   (or the zoo: ~/.cache/joule/zoo)
          [--models resnet18,mobilenet_v2,mobilenet_v3_small] [--ratios 0.25,0.5] [--threads 1] [--processes 3]
"""
import argparse
import json
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def joule_ms(joule, model, inp, threads, runs):
    out = subprocess.run([joule, "bench", model, "-i", inp, "--threads", str(threads), "--runs", str(runs),
                          "--warmup", "3", "--format", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["median"]


def ort_ms(model, inp, threads, runs):
    out = subprocess.run(["node", os.path.join(HERE, "peers", "ort_bench.js"), model, inp, str(threads), "3", str(runs)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["median"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--models", default="resnet18,mobilenet_v2,mobilenet_v3_small")
    ap.add_argument("--ratios", default="0.25,0.5")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--joule", default=os.path.join(ROOT, "build", "joule"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="joule_bench_prune_")
    print(f"threads {a.threads}, best median of {a.processes} processes, {a.runs} runs each\n")
    print("| model | ratio | parameters | FLOPs | joule ms | joule pruned/original | ORT ms | ORT pruned/original | joule/ORT (pruned) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in a.models.split(","):
        d = os.path.join(os.path.expanduser(a.model_dir), name)
        src, inp = os.path.join(d, "model.onnx"), os.path.join(d, "input.npy")
        variants = [("original", src, None)]
        for r in a.ratios.split(","):
            out = os.path.join(tmp, f"{name}_{r}.onnx")
            rep = json.loads(subprocess.run([a.joule, "prune", src, "--structured", "--ratio", r, "-o", out,
                                             "--format", "json"], check=True, capture_output=True, text=True).stdout)
            variants.append((r, out, rep))
        best = {}
        for _ in range(a.processes):
            for label, path, _ in variants:
                for eng, fn in (("joule", lambda: joule_ms(a.joule, path, inp, a.threads, a.runs)),
                                ("ort", lambda: ort_ms(path, inp, a.threads, a.runs))):
                    best[(label, eng)] = min(best.get((label, eng), 1e9), fn())
        j0, o0 = best[("original", "joule")], best[("original", "ort")]
        print(f"| {name} | 0 | 100% | 100% | {j0:.3f} | 1.00 | {o0:.3f} | 1.00 | {j0 / o0:.2f} |")
        for label, _, rep in variants[1:]:
            j, o = best[(label, "joule")], best[(label, "ort")]
            print(f"| {name} | {label} | {100 * rep['params_after'] / rep['params_before']:.0f}% | "
                  f"{100 * rep['flops_after'] / rep['flops_before']:.0f}% | {j:.3f} | {j / j0:.2f} | {o:.3f} | "
                  f"{o / o0:.2f} | {j / o:.2f} |")


if __name__ == "__main__":
    main()
