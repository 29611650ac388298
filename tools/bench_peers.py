#!/usr/bin/env python3
"""Side-by-side latency of joule, ONNX Runtime (npm onnxruntime-node) and PyTorch (Debian).

Every engine runs the same model on the same input, in separate processes, interleaved
round by round; per engine and thread count the best (lowest) median over the processes is
kept, because 2-thread timings on these VMs are bimodal from process to process. Prints a
Markdown table of medians and joule's ratio to each peer.

usage: /usr/bin/python3 tools/bench_peers.py --model-dir ~/.cache/joule/models \
          [--models resnet18,mobilenet_v2] [--threads 1,2] [--processes 3] [--runs 20] [--warmup 3]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"

TORCH_SNIPPET = r"""
import json, sys, time, torch
sys.path.insert(0, {tools!r})
import export_models as em
name, threads, warmup, runs = {name!r}, {threads}, {warmup}, {runs}
torch.set_num_threads(threads)
make, shape, _ = em.MODELS[name]
torch.manual_seed(em.SEED)
m = make(); em.reinit_zero_linears(m); em.randomize_zero_params(m); em.randomize_norms(m); m.eval()
x = torch.randn(*shape, generator=torch.Generator().manual_seed(em.INPUT_SEED))
ms = []
with torch.no_grad():
    for _ in range(warmup): m(x)
    for _ in range(runs):
        t0 = time.perf_counter(); m(x); ms.append((time.perf_counter() - t0) * 1e3)
s = sorted(ms)
print(json.dumps({{"engine": "pytorch " + torch.__version__, "samples_ms": ms,
                  "latency_ms": {{"median": s[len(s) // 2], "min": s[0]}}}}))
"""


def run_json(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}...: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout)


def engines(args, model_dir, name, threads):
    model = os.path.join(model_dir, name, "model.onnx")
    inp = os.path.join(model_dir, name, "input.npy")
    joule = [os.path.join(ROOT, args.build, "joule"), "bench", model, "-i", inp, "--threads", str(threads),
             "--warmup", str(args.warmup), "--runs", str(args.runs), "--format", "json"]
    ort = ["node", os.path.join(HERE, "peers", "ort_bench.js"), model, inp, str(threads), str(args.warmup),
           str(args.runs)]
    torch_env = dict(os.environ)
    if os.path.exists(OPENBLAS):
        torch_env["LD_PRELOAD"] = OPENBLAS
    # OpenBLAS's pthread build ignores torch.set_num_threads: without this it multiplies with
    # every core (ViT-B/16's MLP products: 1.6x faster at "1 thread" on a 2-core machine).
    torch_env["OPENBLAS_NUM_THREADS"] = str(threads)
    torch_cmd = ["/usr/bin/python3", "-c", TORCH_SNIPPET.format(tools=HERE, name=name, threads=threads,
                                                                  warmup=args.warmup, runs=args.runs)]
    return [("joule", joule, None), ("onnxruntime", ort, None), ("pytorch", torch_cmd, torch_env)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-dir", default=os.path.expanduser("~/.cache/joule/models"))
    ap.add_argument("--models", default="resnet18,mobilenet_v2,mobilenet_v3_small,vit_small,transformer_encoder")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--build", default="build")
    ap.add_argument("--json", help="also write all samples here")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(HERE, "peers", "node_modules", "onnxruntime-node")):
        # The package's install script fetches optional GPU parts; the CPU library ships in the package.
        subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--silent"],
                       cwd=os.path.join(HERE, "peers"), check=True)
    results = {}
    for name in args.models.split(","):
        for t in [int(x) for x in args.threads.split(",")]:
            best = {}
            for p in range(args.processes):
                for eng, cmd, env in engines(args, args.model_dir, name, t):
                    try:
                        r = run_json(cmd, env)
                    except RuntimeError as e:
                        print(f"{name} t={t} {eng}: {e}", file=sys.stderr)
                        continue
                    med = r["latency_ms"]["median"]
                    best[eng] = min(best.get(eng, float("inf")), med)
                    print(f"{name:20s} threads={t} process {p} {eng:12s} median {med:9.2f} ms", file=sys.stderr)
            results[(name, t)] = best
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"Measured {datetime.date.today()} on {cpu}, {os.cpu_count()} vCPU ({platform.system()}), "
          f"best of {args.processes} processes x {args.runs} runs (median per process):\n")
    print("| model | threads | joule ms | ONNX Runtime ms | PyTorch ms | joule / ORT | joule / PyTorch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for (name, t), b in results.items():
        j, o, p = b.get("joule"), b.get("onnxruntime"), b.get("pytorch")
        f = lambda v: f"{v:.2f}" if v else "n/a"
        r = lambda a, c: f"{a / c:.2f}x" if a and c else "n/a"
        print(f"| {name} | {t} | {f(j)} | {f(o)} | {f(p)} | {r(j, o)} | {r(j, p)} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({f"{k[0]}@{k[1]}": v for k, v in results.items()}, fh, indent=1)


if __name__ == "__main__":
    main()
