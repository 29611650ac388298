#!/usr/bin/env python3
"""BF16 against FP32 on joule's engine, side by side, on a zoo of exported models.

For each model (NAME/model.onnx + NAME/input.npy under --model-dir, e.g. the zoo of tools/zoo.py),
interleaved in separate processes, best median of --processes each: `joule bench` at FP32 and at
--precision bf16 (oneDNN bfloat16 conv/matmul where a float32 algorithm is not estimated faster;
the ladder keeps layers below --bf16-min-sqnr in fp32). Then `joule run` of both on the input:
the output SQNR of BF16 against FP32 and whether the top-1 class is the same.
Prints a Markdown table: FP32 ms, BF16 ms, BF16/FP32, layers on bf16 kernels / kept fp32 by the
ladder / Conv-MatMul-Gemm left fp32 as faster, output SQNR, same top-1. --pytorch (zoo models
only: tools/zoo.py builds the same seeded network) adds PyTorch's eager FP32 and BF16
(torch.autocast("cpu", dtype=torch.bfloat16)) in the same rounds, and joule's ratios to them.

usage: /usr/bin/python3 tools/bench_bf16.py --model-dir ~/.cache/joule/zoo [--models a,b,...]
          [--threads 1] [--processes 3] [--runs 10] [--build build] [--pytorch]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_peers import OPENBLAS, run_json  # noqa: E402


def sqnr(ref, got):
    err = float(((ref - got) ** 2).sum())
    return float("inf") if err == 0 else 10 * np.log10(float((ref ** 2).sum()) / err)


def outputs(joule, model, inp, extra):
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([joule, "run", model, "-i", inp, "-o", d, "--threads", "1"] + extra, check=True,
                       capture_output=True)
        return np.load(os.path.join(d, sorted(os.listdir(d))[0])).astype(np.float64)


def gemm_like(joule, model, inp):
    """Conv/MatMul/Gemm steps of the fp32 plan (the layers bf16 could take)."""
    plan = json.loads(subprocess.run([joule, "info", model, "--plan", "--threads", "1", "--format", "json",
                                      "--input-shape", ",".join(map(str, np.load(inp).shape))],
                                     check=True, capture_output=True, text=True).stdout)["plan"]
    return sum(s["op"] in ("FusedConv", "Conv", "Gemm", "MatMul", "FusedMatMul") for s in plan["steps"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--models", default="")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--build", default="build")
    ap.add_argument("--pytorch", action="store_true", help="PyTorch eager FP32 and autocast BF16 too (zoo models)")
    args = ap.parse_args()
    joule = os.path.join(ROOT, args.build, "joule")
    names = args.models.split(",") if args.models else sorted(os.listdir(args.model_dir))
    rows = []
    for name in names:
        model = os.path.join(args.model_dir, name, "model.onnx")
        inp = os.path.join(args.model_dir, name, "input.npy")
        common = ["-i", inp, "--threads", str(args.threads), "--warmup", str(args.warmup), "--runs", str(args.runs),
                  "--format", "json"]
        best, prec = {}, None
        runs = [(tag, [joule, "bench", model] + common + extra, None)
                for tag, extra in (("fp32", []), ("bf16", ["--precision", "bf16"]))]
        if args.pytorch:
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(args.threads))  # as zoo.py times PyTorch
            if os.path.exists(OPENBLAS):
                env["LD_PRELOAD"] = OPENBLAS
            runs += [("torch_" + p, [sys.executable, os.path.join(HERE, "zoo.py"), "torch-bench", name,
                                     str(args.threads), str(args.warmup), str(args.runs), "1", p], env)
                     for p in ("fp32", "bf16")]
        for p in range(args.processes):
            for tag, cmd, env in runs:
                try:
                    j = run_json(cmd, env)
                except RuntimeError as e:
                    print(f"{name} {tag}: {e}", file=sys.stderr)
                    continue
                best[tag] = min(best.get(tag, float("inf")), j["latency_ms"]["median"])
                prec = j["precision"] if tag == "bf16" else prec
                print(f"{name:20s} process {p} {tag} median {j['latency_ms']['median']:9.2f} ms", file=sys.stderr)
        f, b = outputs(joule, model, inp, []), outputs(joule, model, inp, ["--precision", "bf16"])
        top1 = bool(np.array_equal(f.reshape(f.shape[0], -1).argmax(1), b.reshape(b.shape[0], -1).argmax(1)))
        rows.append((name, best, prec, gemm_like(joule, model, inp), sqnr(f, b), top1))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"Measured {datetime.date.today()} on {cpu}, {os.cpu_count()} vCPU ({platform.system()}), "
          f"{args.threads} thread(s), best of {args.processes} processes x {args.runs} runs:\n")
    torch_head = " PyTorch FP32 ms | PyTorch BF16 ms | joule BF16 / PyTorch BF16 |" if args.pytorch else ""
    print("| model | FP32 ms | BF16 ms | BF16/FP32 | layers on bf16 | kept fp32 by the SQNR check | "
          "left fp32 (a float32 algorithm estimated faster) | BF16 vs FP32 output SQNR | same top-1 |" + torch_head)
    print("| --- " * (12 if args.pytorch else 9) + "|")
    fmt = lambda v: f"{v:.2f}" if v else "n/a"
    for name, best, prec, layers, s, top1 in rows:
        jf, jb = best.get("fp32"), best.get("bf16")
        nb, nf = (prec["bf16_layers"], prec["fp32_layers"]) if prec else (0, 0)
        ratio = f"{jb / jf:.2f}x" if jf and jb else "n/a"
        line = (f"| {name} | {fmt(jf)} | {fmt(jb)} | {ratio} | {nb} | {nf} | {layers - nb - nf} | {s:.1f} dB | "
                f"{'yes' if top1 else 'no'} |")
        if args.pytorch:
            tf, tb = best.get("torch_fp32"), best.get("torch_bf16")
            line += f" {fmt(tf)} | {fmt(tb)} | {f'{jb / tb:.2f}x' if jb and tb else 'n/a'} |"
        print(line)


if __name__ == "__main__":
    main()
