#!/usr/bin/env python3
"""INT8 against FP32, joule against ONNX Runtime, on joule's own QDQ export, side by side.

For each model (exported from PyTorch by tools/export_models.py, seeded random weights): joule
quantizes it with a config (default examples/quant/w8a8.yaml) calibrated on seeded random
inputs and writes standard ONNX QDQ. Then, interleaved in separate processes, best median of
--processes each:
  joule FP32 (model.onnx), joule INT8 (the export, --int8 real: integer kernels),
  ONNX Runtime FP32 (model.onnx) and ONNX Runtime INT8 (the same export; ORT fuses the QDQ
  patterns into its own integer kernels).
Prints a Markdown table with INT8/FP32 for both engines and joule INT8 / ORT INT8, and per model
the simulated-vs-integer agreement (`joule compare --agreement`: the lowest share of a quantized
tensor's codes within one step, and the output SQNR of one plan against the other) and the
INT8 output against FP32 on the input (SQNR, same top-1).

usage: /usr/bin/python3 tools/bench_int8.py [--models resnet50,resnet18,mobilenet_v2,transformer_encoder]
          [--model-dir DIR (NAME/model.onnx + input.npy, e.g. the zoo of tools/zoo.py)]
          [--threads 1] [--processes 3] [--runs 20] [--config examples/quant/w8a8.yaml (w7a8.yaml
          on CPUs without VNNI)] [--work DIR]
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_peers import run_json  # noqa: E402


def prepare(args, name):
    src = os.path.join(args.model_dir or args.work, name)
    model = os.path.join(src, "model.onnx")
    if not os.path.exists(model):
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "export_models.py"), "--out", args.work,
                        "--models", name], check=True, capture_output=True)
    inp = os.path.join(src, "input.npy")
    d = os.path.join(args.work, name)
    os.makedirs(d, exist_ok=True)
    calib = os.path.join(d, "calib.npy")
    x = np.load(inp)
    rng = np.random.default_rng(3)
    np.save(calib, rng.standard_normal((args.calib,) + x.shape[1:]).astype(np.float32))
    q = os.path.join(d, "model.int8.onnx")
    cmd = [os.path.join(ROOT, args.build, "joule"), "quantize", model, "--calib", calib, "--calib-samples",
           str(args.calib), "-o", q, "--quiet"]
    out = subprocess.run(cmd + ["--config", args.config], capture_output=True, text=True)
    if out.returncode != 0 and "matches no node" in out.stderr:  # e.g. no Gemm: the config's defaults only
        plain = os.path.join(d, "config_defaults.yaml")
        text = open(args.config).read()
        open(plain, "w").write(text.split("\nrules:")[0] + "\n")
        out = subprocess.run(cmd + ["--config", plain], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{name}: quantize: {out.stderr.strip()[-400:]}")
    return model, q, inp


def sqnr(ref, got):
    err = float(((ref - got) ** 2).sum())
    return float("inf") if err == 0 else 10 * np.log10(float((ref ** 2).sum()) / err)


def accuracy(args, name, model, q, inp):
    """Simulated vs integer agreement, and the integer plan's output against FP32 on the input."""
    joule = os.path.join(ROOT, args.build, "joule")
    a = run_json([joule, "compare", q, "--agreement", "-i", inp, "--format", "json"])
    d = os.path.join(args.work, name)
    outs = {}
    for tag, m, extra in (("fp32", model, []), ("int8", q, ["--int8", "real"])):
        o = os.path.join(d, "out_" + tag)
        subprocess.run([joule, "run", m, "-i", inp, "-o", o] + extra, check=True, capture_output=True)
        outs[tag] = np.load(os.path.join(o, sorted(os.listdir(o))[0])).astype(np.float64)
    f, i = outs["fp32"], outs["int8"]
    same_top1 = bool(np.array_equal(f.reshape(f.shape[0], -1).argmax(1), i.reshape(i.shape[0], -1).argmax(1)))
    return {"within_one": a["min_within_one_step"], "sim_sqnr": a["output_sqnr_db"], "fp32_sqnr": sqnr(f, i),
            "top1": same_top1, "integer_nodes": a["integer_nodes"]}


def engines(args, model, q, inp, t):
    joule = os.path.join(ROOT, args.build, "joule")
    common = ["-i", inp, "--threads", str(t), "--warmup", str(args.warmup), "--runs", str(args.runs), "--format", "json"]
    ort = lambda m: ["node", os.path.join(HERE, "peers", "ort_bench.js"), m, inp, str(t), str(args.warmup), str(args.runs)]
    return [("joule fp32", [joule, "bench", model] + common), ("joule int8", [joule, "bench", q, "--int8", "real"] + common),
            ("ort fp32", ort(model)), ("ort int8", ort(q))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="resnet50,resnet18,mobilenet_v2,transformer_encoder")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--calib", type=int, default=8)
    # Without VNNI the integer kernels are exact only for 7-bit weights (8-bit ones run emulated).
    vnni = bool({"avx512_vnni", "avx_vnni"} & set(open("/proc/cpuinfo").read().split()))
    ap.add_argument("--config", default=os.path.join(ROOT, "examples", "quant", "w8a8.yaml" if vnni else "w7a8.yaml"))
    ap.add_argument("--build", default="build")
    ap.add_argument("--model-dir", default="", help="NAME/model.onnx and NAME/input.npy (default: export to --work)")
    ap.add_argument("--work", default=os.path.expanduser("~/.cache/joule/int8_bench"))
    args = ap.parse_args()
    rows = []
    acc = {}
    for name in args.models.split(","):
        try:
            model, q, inp = prepare(args, name)
            acc[name] = accuracy(args, name, model, q, inp)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            print(f"{name}: {e}", file=sys.stderr)
            continue
        for t in [int(x) for x in args.threads.split(",")]:
            best = {}
            for p in range(args.processes):
                for eng, cmd in engines(args, model, q, inp, t):
                    try:
                        med = run_json(cmd)["latency_ms"]["median"]
                    except RuntimeError as e:
                        print(f"{name} t={t} {eng}: {e}", file=sys.stderr)
                        continue
                    best[eng] = min(best.get(eng, float("inf")), med)
                    print(f"{name:20s} threads={t} process {p} {eng:11s} median {med:9.2f} ms", file=sys.stderr)
            rows.append((name, t, best))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"Measured {datetime.date.today()} on {cpu}, {os.cpu_count()} vCPU ({platform.system()}), best of "
          f"{args.processes} processes x {args.runs} runs; config {os.path.relpath(args.config, ROOT)}:\n")
    print("| model | threads | joule FP32 ms | joule INT8 ms | joule INT8/FP32 | ORT FP32 ms | ORT INT8 ms | "
          "ORT INT8/FP32 | joule INT8 / ORT INT8 | integer nodes | sim = int8: codes within 1 step (worst tensor) | "
          "sim vs int8 output SQNR | INT8 vs FP32 output SQNR | same top-1 as FP32 |")
    print("| --- " * 14 + "|")
    f = lambda v: f"{v:.2f}" if v else "n/a"
    r = lambda a, b: f"{a / b:.2f}x" if a and b else "n/a"
    db = lambda v: "identical" if v is None or v == float("inf") else f"{v:.1f} dB"
    for name, t, b in rows:
        jf, ji, of, oi = (b.get(k) for k in ("joule fp32", "joule int8", "ort fp32", "ort int8"))
        a = acc[name]
        print(f"| {name} | {t} | {f(jf)} | {f(ji)} | {r(ji, jf)} | {f(of)} | {f(oi)} | {r(oi, of)} | {r(ji, oi)} | "
              f"{a['integer_nodes']} | {100 * a['within_one']:.2f} % | {db(a['sim_sqnr'])} | {db(a['fp32_sqnr'])} | "
              f"{'yes' if a['top1'] else 'no'} |")


if __name__ == "__main__":
    main()
