#!/usr/bin/env python3
"""Two --algo choices (or two joule binaries) for the same model, per layer, alternated in one session.

Profiles MODEL with `joule profile --algo A` and `--algo B` in turn, ROUNDS times each (so a slow
phase of the machine hits both), and prints each selected layer's best median under both, the
algorithm that ran, and the ratio B / A, then the sums and the whole model's best plain time.

  /usr/bin/python3 tools/ab_algo.py build/joule MODEL INPUT.npy [--rounds 3] [--runs 10] [--threads 1]
      [--a conv=onednn] [--b conv=grouped,onednn] [--layers grouped|conv|all] [--args "--precision bf16"]
      [--a-joule OLD/build/joule]

--a-joule: A runs this binary (e.g. a `git worktree` build of an older commit), B the first
argument; give both `--a guess --b guess` to compare plans and kernels.
--layers grouped: grouped (not depthwise) convolutions; conv: every convolution; all: every layer.
"""
import argparse
import collections
import json
import subprocess


def dims(t):  # "float32[1,2,3]" -> [1, 2, 3]
    return [int(x) for x in t.split("[", 1)[1].rstrip("]").split(",") if x]


def selected(layer, which):
    if which == "all":
        return True
    if not layer["op"].endswith("Conv") or len(layer["inputs"]) < 2:
        return False
    if which == "conv":
        return True
    x, w = dims(layer["inputs"][0]), dims(layer["inputs"][1])
    return len(x) == 4 and w[1] not in (x[1], x[3]) and w[1] > 1  # C/group is neither C (N,C,H,W or N,H,W,C) nor 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("joule")
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--a", default="conv=onednn")
    ap.add_argument("--b", default="conv=grouped,onednn")
    ap.add_argument("--layers", default="grouped", choices=["grouped", "conv", "all"])
    ap.add_argument("--args", default="", help="more joule profile arguments for both, e.g. '--precision bf16'")
    ap.add_argument("--a-joule", default="", help="the binary A runs (default: the same as B)")
    a = ap.parse_args()
    best = collections.defaultdict(lambda: float("inf"))
    info, plain, order = {}, collections.defaultdict(lambda: float("inf")), []
    for _ in range(a.rounds):
        for key, spec in (("a", a.a), ("b", a.b)):
            binary = a.a_joule if key == "a" and a.a_joule else a.joule
            out = subprocess.run([binary, "profile", a.model, "-i", a.input, "--threads", str(a.threads), "--runs",
                                  str(a.runs), "--energy", "none", "--no-layer-energy", "--format", "json", "-q",
                                  "--algo", spec] + a.args.split(), capture_output=True, text=True, check=True)
            point = json.loads(out.stdout)["points"][0]
            plain[key] = min(plain[key], point["attribution"]["plain_median_ms"])
            for layer in point["layers"]:
                if not selected(layer, a.layers):
                    continue
                name = layer["name"]
                if name not in order:
                    order.append(name)
                best[(name, key)] = min(best[(name, key)], layer["latency_ms"]["median"])
                info[(name, key)] = (layer["inputs"][0], layer["inputs"][1] if len(layer["inputs"]) > 1 else "",
                                     layer["algorithm"])
    sums = {"a": 0.0, "b": 0.0}
    print(f"{'input':28} {'weight':22} {'A algo':>12} {'A ms':>8} {'B algo':>12} {'B ms':>8}  B/A")
    for name in order:
        if (name, "a") not in best or (name, "b") not in best:
            continue
        ta, tb = best[(name, "a")], best[(name, "b")]
        sums["a"] += ta
        sums["b"] += tb
        x, w, algo_b = info[(name, "b")]
        print(f"{x:28} {w:22} {info[(name, 'a')][2]:>12} {ta:8.3f} {algo_b:>12} {tb:8.3f}  {tb / ta:.2f}")
    if sums["a"] > 0:
        print(f"selected layers: A {sums['a']:.2f} ms, B {sums['b']:.2f} ms, B/A {sums['b'] / sums['a']:.2f}; "
              f"model (plain run): A {plain['a']:.2f} ms, B {plain['b']:.2f} ms")


if __name__ == "__main__":
    main()
