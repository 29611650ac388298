#!/usr/bin/python3
"""The zoo benchmark (issues 23, 25): 22 torchvision architectures, a BERT-style encoder and LSTM, GRU
and RNN sequence classifiers, joule
checked against PyTorch and timed against ONNX Runtime and PyTorch.

    export DIR [--models a,b]
        each architecture with seeded random weights (torch.manual_seed(0); no all-zero layer,
        norms made non-trivial), exported the usual way (torch.onnx.export, opset 13) with a
        dynamic batch axis, as DIR/NAME/model.onnx with a seeded input and PyTorch's output at
        batch 1 (input.npy, output.npy) and at batch 8 (input8.npy, output8.npy). DIR/NAME/zoo.json
        marks a finished export of this format; a model without it (or with an older one) is
        exported again. A model that fails to export gets DIR/NAME/export_error.txt, a line on
        stderr and a row in check's table.

    check DIR JOULE [--models a,b] [--threads 1,2] [--batch8] [--processes 3] [--budget 1.5]
                    [--other OTHER_JOULE] [--json FILE] [--no-bench] [--dynamic]
        per model:
        - joule's output against PyTorch's: max |diff| / max |torch| and the same top-1, at batch 1
          (and batch 8 with --batch8); ONNX Runtime's error goes to stderr and the JSON;
        - latency (median per process; the best of --processes processes, engines interleaved
          round by round) of joule bench, ONNX Runtime (tools/peers/ort_bench.js) and PyTorch (the
          same seeded network rebuilt in a subprocess, 1 thread, batch 1), at each thread count
          and at batch 8 with 1 thread; runs per process fill about --budget seconds (3 to 30);
        - the share of per-layer time on `reference` kernels (joule profile, 1 thread; the nodes
          no algorithm was chosen for) and the three op types with the most of it;
        - peak RSS (ru_maxrss) of `joule run` at 1 thread and of ORT running the model once
          (tools/peers/ort_run.js; node with onnxruntime-node loaded is ~50 MB of that);
        - with --other, a second joule binary timed alternately with the first (other / joule).
        Progress and every engine's errors on stderr, a Markdown table and a summary on stdout.
        Every engine runs model.onnx as exported (batch dim symbolic; joule resolves it from the
        input it is given). --no-bench: only the outputs, the ORT run and RSS (does every model
        load everywhere?).

    /usr/bin/python3 tools/zoo.py export ~/.cache/joule/zoo
    /usr/bin/python3 tools/zoo.py check ~/.cache/joule/zoo build/joule --threads 1,2 --batch8
    make zoo [ZOO_MODELS=resnet18,vit_b_16] [ZOO_OTHER=/tmp/old/build/joule]
"""
import argparse
import collections
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_peers  # noqa: E402  (run_json, OPENBLAS)

FORMAT = {"opset": 13, "version": 2}  # in DIR/NAME/zoo.json; change it to redo every export
BERT = "bert_encoder"
# name -> input size (H = W); BERT: [batch, 128, 768] hidden states; RECURRENT: [batch, 64, 64].
ZOO = {
    "resnet18": 224, "resnet50": 224, "resnext50_32x4d": 224, "wide_resnet50_2": 224, "mobilenet_v2": 224,
    "mobilenet_v3_small": 224, "mobilenet_v3_large": 224, "efficientnet_b0": 224, "regnet_x_400mf": 224,
    "regnet_y_400mf": 224, "mnasnet0_5": 224, "shufflenet_v2_x0_5": 224, "squeezenet1_0": 224,
    "densenet121": 224, "googlenet": 224, "inception_v3": 299, "alexnet": 224, "vgg11": 224, "vgg16": 224,
    "convnext_tiny": 224, "swin_t": 224, "vit_b_16": 224, BERT: 128,
    "lstm_bi2": 64, "gru2": 64, "rnn2": 64,
}
# Sequence classifiers (input [batch, 64 steps, 64 features]): torch.nn.LSTM/GRU/RNN, hidden 128,
# batch_first, the last step's output through a Linear head.
RECURRENT = {"lstm_bi2": ("LSTM", 2, True), "gru2": ("GRU", 2, False), "rnn2": ("RNN", 2, False)}


def make_net(name):
    """The seeded network in eval mode, the same in the export and the PyTorch timing."""
    import torch
    import torchvision
    import export_models as em
    torch.manual_seed(0)
    if name == BERT:
        class Bert(em.TransformerEncoderClassifier):
            """BERT-base width: LayerNorm (the embeddings'), 4 post-LN layers (768 wide, 12 heads,
            FFN 3072, GELU), pooler (Linear + tanh of the first token), 2-way classifier."""

            def __init__(self):
                super().__init__(d_model=768, nhead=12, dim_feedforward=3072, num_layers=4, num_classes=2)
                self.pooler = torch.nn.Linear(768, 768)

            def forward(self, x):
                h = self.encoder(self.norm(x))
                return self.head(torch.tanh(self.pooler(h[:, 0])))
        net = Bert()
    elif name in RECURRENT:
        net = em.RecurrentClassifier(*RECURRENT[name], features=64, hidden=128)
    else:
        kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
        net = getattr(torchvision.models, name)(weights=None, **kw)
    # No all-zero head (ViT's would make every logit 0), biases or norms that hide a bug.
    em.reinit_zero_linears(net)
    em.randomize_zero_params(net)
    em.randomize_norms(net)
    return net.eval()


def make_input(name, batch):
    import torch
    shape = (batch, 128, 768) if name == BERT else (batch, 64, 64) if name in RECURRENT else (batch, 3, ZOO[name], ZOO[name])
    return torch.randn(*shape, generator=torch.Generator().manual_seed(1))


def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def read_json(path):
    try:
        return json.loads(read_text(path) or "null")
    except ValueError:
        return None


def export_one(name, d):
    import torch
    net = make_net(name)
    x, x8 = make_input(name, 1), make_input(name, 8)
    # With autograd on, as the exporter traces: nn.TransformerEncoderLayer's fused fast path
    # (taken under no_grad) stays off, so the reference is the graph that gets exported.
    y, y8 = net(x).detach(), net(x8).detach()
    tmp = os.path.join(d, "model.onnx.tmp")
    torch.onnx.export(net, x, tmp, opset_version=FORMAT["opset"], input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    os.replace(tmp, os.path.join(d, "model.onnx"))
    for f, t in (("input", x), ("output", y), ("input8", x8), ("output8", y8)):
        np.save(os.path.join(d, f + ".npy"), t.numpy())
    with open(os.path.join(d, "zoo.json"), "w") as f:
        json.dump(dict(FORMAT, input_shape=list(x.shape), torch=torch.__version__), f)


def export(out, names):
    import warnings
    import torch
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    warnings.filterwarnings("ignore", message="It is recommended that constant folding")
    warnings.filterwarnings("ignore", message="The shape inference of prim::Constant type is missing")
    torch.set_num_threads(2)
    failed = []
    for name in names:
        d = os.path.join(out, name)
        marker = read_json(os.path.join(d, "zoo.json")) or {}
        if all(marker.get(k) == v for k, v in FORMAT.items()) and os.path.exists(os.path.join(d, "output8.npy")):
            continue
        shutil.rmtree(d, ignore_errors=True)  # an older format's files go with it
        os.makedirs(d)
        t0 = time.time()
        try:
            export_one(name, d)
            print(f"exported {name} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
        except Exception as e:  # one architecture the exporter cannot take must not stop the rest
            msg = f"{type(e).__name__}: {e}".strip()
            with open(os.path.join(d, "export_error.txt"), "w") as f:
                f.write(msg + "\n")
            failed.append(name)
            print(f"export FAILED {name}: {msg.splitlines()[0]}", file=sys.stderr, flush=True)
    if failed:
        print(f"{len(failed)} of {len(names)} failed to export: {', '.join(failed)}", file=sys.stderr)


def torch_bench(name, threads, warmup, runs, batch, precision="fp32"):
    """PyTorch's latency as bench_peers.TORCH_SNIPPET times it, on the zoo's network; precision
    bf16: under torch.autocast("cpu", dtype=torch.bfloat16) (its oneDNN bf16 conv/linear/matmul)."""
    import contextlib
    import torch
    torch.set_num_threads(threads)
    net, x = make_net(name), make_input(name, batch)
    ms = []
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
    with torch.no_grad(), amp:
        for _ in range(warmup):
            net(x)
        for _ in range(runs):
            t0 = time.perf_counter()
            net(x)
            ms.append((time.perf_counter() - t0) * 1e3)
    s = sorted(ms)
    print(json.dumps({"engine": "pytorch " + torch.__version__, "samples_ms": ms,
                      "latency_ms": {"median": s[len(s) // 2], "min": s[0]}}))


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "(no message)"


# Forks and waits for argv[1:] and prints its ru_maxrss (KB). Linux keeps the high-water RSS of
# the process an exec replaced, so a child spawned from this script would report at least this
# script's own RSS (hundreds of MB once onnx has loaded a model); from a bare interpreter the
# floor is ~8 MB.
RSS_HELPER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
print(ru.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_rss(cmd):
    """Runs cmd; returns (its peak RSS in MB, None) or (None, its last stderr line)."""
    p = subprocess.run([sys.executable, "-S", "-c", RSS_HELPER] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"exit {p.returncode}: {last_line(p.stderr)}"
    return int(p.stdout) / 1024, None


def compare(out_dir, want):
    """(max rel err, same top-1 for every row) of the one .npy in out_dir against want."""
    got = np.load(os.path.join(out_dir, sorted(os.listdir(out_dir))[0]))
    if got.shape != want.shape:
        raise ValueError(f"output shape {got.shape}, PyTorch's {want.shape}")
    err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-6))
    n = want.shape[0]
    return err, bool((got.reshape(n, -1).argmax(1) == want.reshape(n, -1).argmax(1)).all())


def reference_share(prof):
    """(share of per-layer time on reference kernels, [(op, share)] top 3, plain median ms)."""
    p = prof["points"][0]
    total, ref = 0.0, collections.Counter()
    for layer in p["layers"]:
        ms = layer["latency_ms"]["median"]
        total += ms
        if layer["algorithm"] == "reference":
            ref[layer["op"]] += ms
    return sum(ref.values()) / total, [(op, ms / total) for op, ms in ref.most_common(3)], p["latency_ms"]["median"]


def engines(args, name, d, model, threads, batch, warmup, runs):
    inp = os.path.join(d, "input8.npy" if batch == 8 else "input.npy")
    jb = lambda joule: ([joule, "bench", model, "-i", inp, "--threads", str(threads), "--warmup", str(warmup),
                         "--runs", str(runs), "--format", "json"], None)
    e = {"joule": jb(args.joule),
         "ort": (["node", os.path.join(HERE, "peers", "ort_bench.js"), model, inp, str(threads), str(warmup),
                  str(runs)], None)}
    if threads == 1 and batch == 1:
        env = dict(os.environ)
        if os.path.exists(bench_peers.OPENBLAS):
            env["LD_PRELOAD"] = bench_peers.OPENBLAS
        env["OPENBLAS_NUM_THREADS"] = str(threads)  # its pthread build ignores torch.set_num_threads
        e["pytorch"] = ([sys.executable, os.path.abspath(__file__), "torch-bench", name, str(threads), str(warmup),
                         str(runs), str(batch)], env)
    if args.other:
        e["other"] = jb(args.other)
    return e


def check_model(args, name, tmp):
    d, tmp = os.path.join(args.dir, name), os.path.join(tmp, name)
    os.makedirs(tmp)
    r = {"errors": {}}
    log = lambda msg: print(f"{name}: {msg}", file=sys.stderr, flush=True)

    def fail(what, msg):
        r["errors"][what] = msg
        log(f"{what} FAILED: {msg}")

    model = os.path.join(d, "model.onnx")
    if not os.path.exists(model):
        fail("export", last_line((read_text(os.path.join(d, "export_error.txt")) or "not exported")))
        return r
    batches = (1, 8) if args.batch8 else (1,)
    models = {b: model for b in batches}
    # Outputs (and peak RSS) of joule and ORT, each run once.
    wall_ms = None
    for b in batches:
        sfx = "8" if b == 8 else ""
        o = os.path.join(tmp, f"joule{sfx}")
        os.makedirs(o)
        t0 = time.time()
        rss, e = run_rss([args.joule, "run", models[b], "-i", os.path.join(d, f"input{sfx}.npy"), "-o", o,
                          "--threads", "1"])
        if b == 1:
            wall_ms = (time.time() - t0) * 1e3
        if e:
            fail(f"joule run b{b}", e)
            continue
        if b == 1:
            r["rss_joule_mb"] = rss
        try:
            r[f"err_b{b}"], r[f"top1_b{b}"] = compare(o, np.load(os.path.join(d, f"output{sfx}.npy")))
        except ValueError as ex:
            fail(f"joule output b{b}", str(ex))
    o = os.path.join(tmp, "ort")
    os.makedirs(o)
    rss, e = run_rss(["node", os.path.join(HERE, "peers", "ort_run.js"), models[1], o, os.path.join(d, "input.npy")])
    if e:
        fail("ort run", e)
    else:
        r["rss_ort_mb"] = rss
        try:
            r["ort_err_b1"], r["ort_top1_b1"] = compare(o, np.load(os.path.join(d, "output.npy")))
        except ValueError as ex:
            fail("ort output", str(ex))
    log(" ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items() if k != "errors"))
    if args.no_bench:
        return r
    # Reference share from a short 1-thread profile; its median sizes the timed runs.
    est = wall_ms  # without a profile: joule run's wall time, loading included
    try:
        prof = bench_peers.run_json([args.joule, "profile", models[1], "-i", os.path.join(d, "input.npy"), "--threads",
                                     "1", "--runs", "3", "--warmup", "1", "--format", "json", "--energy", "none",
                                     "--no-layer-energy", "-q"])
        r["reference_share"], r["reference_top"], est = reference_share(prof)
    except (RuntimeError, ValueError, KeyError, IndexError) as ex:
        fail("joule profile", last_line(str(ex)))
    est = est or 1e3
    configs = [(f"{t}T", t, 1) for t in args.threads] + ([("b8", 1, 8)] if args.batch8 else [])
    for key, threads, batch in configs:
        runs = max(3, min(30, int(args.budget * 1e3 / (est * batch))))
        warmup = max(1, min(3, runs // 5))
        cmds, meds = engines(args, name, d, models[batch], threads, batch, warmup, runs), collections.defaultdict(list)
        for p in range(args.processes):
            for eng, (cmd, env) in cmds.items():
                if f"{eng} {key}" in r["errors"]:
                    continue
                try:
                    meds[eng].append(bench_peers.run_json(cmd, env)["latency_ms"]["median"])
                    log(f"{key} process {p} {eng:8s} median {meds[eng][-1]:9.2f} ms ({runs} runs)")
                except (RuntimeError, ValueError, KeyError) as ex:
                    fail(f"{eng} {key}", last_line(str(ex)))
        r[key] = {eng: {"best_ms": min(m), "medians_ms": m, "runs": runs} for eng, m in meds.items() if m}
    return r


def ms_of(r, key, eng):
    return r.get(key, {}).get(eng, {}).get("best_ms")


def table(results, other):
    f = lambda v, fmt="{:.2f}": fmt.format(v) if v is not None else "n/a"
    ratio = lambda a, b: f"{a / b:.2f}x" if a is not None and b is not None else "n/a"
    cols = ["model", "max rel err", "top-1", "joule 1T ms", "ORT 1T ms", "PyTorch 1T ms", "joule/ORT 1T",
            "joule 2T ms", "ORT 2T ms", "joule/ORT 2T", "joule b8 ms", "ORT b8 ms", "joule/ORT b8",
            "on reference % (top ops)", "RSS joule MB", "RSS ORT MB"]
    if other:
        cols += ["other 1T ms", "other/joule 1T", "other/joule 2T", "other/joule b8"]
    print("| " + " | ".join(cols) + " |\n|" + " --- |" * len(cols))
    for name, r in results.items():
        errs = [r[k] for k in ("err_b1", "err_b8") if k in r]
        tops = [r[k] for k in ("top1_b1", "top1_b8") if k in r]
        top = "n/a" if not tops else "ok" if all(tops) else "DIFF"
        if len(tops) == 2 and top == "DIFF":
            top = f"b1 {'ok' if tops[0] else 'DIFF'}, b8 {'ok' if tops[1] else 'DIFF'}"
        ref = "n/a"
        if "reference_share" in r:
            ref = f"{100 * r['reference_share']:.1f}" + (" (" + ", ".join(
                f"{op} {100 * s:.1f}" for op, s in r["reference_top"]) + ")" if r["reference_top"] else "")
        row = [name, f(max(errs) if errs else None, "{:.2e}"), top]
        row += [f(ms_of(r, "1T", "joule")), f(ms_of(r, "1T", "ort")), f(ms_of(r, "1T", "pytorch")),
                ratio(ms_of(r, "1T", "joule"), ms_of(r, "1T", "ort"))]
        for key in ("2T", "b8"):
            j, o = ms_of(r, key, "joule"), ms_of(r, key, "ort")
            row += [f(j), f(o), ratio(j, o)]
        row += [ref, f(r.get("rss_joule_mb"), "{:.0f}"), f(r.get("rss_ort_mb"), "{:.0f}")]
        if other:
            row += [f(ms_of(r, "1T", "other"))]
            row += [ratio(ms_of(r, k, "other"), ms_of(r, k, "joule")) for k in ("1T", "2T", "b8")]
        print("| " + " | ".join(row) + " |")
    ratios = {k: {n: ms_of(r, k, "joule") / ms_of(r, k, "ort") for n, r in results.items()
                  if ms_of(r, k, "joule") and ms_of(r, k, "ort")} for k in ("1T", "2T", "b8")}
    parts = []
    if ratios["1T"]:
        gm = math.exp(sum(math.log(v) for v in ratios["1T"].values()) / len(ratios["1T"]))
        parts.append(f"geometric mean joule/ORT 1T {gm:.2f}x over {len(ratios['1T'])} models")
    for k, rs in ratios.items():
        if rs:
            w = max(rs, key=rs.get)
            parts.append(f"worst {k} {w} {rs[w]:.2f}x")
    errs = {n: max(r[k] for k in ("err_b1", "err_b8") if k in r) for n, r in results.items()
            if "err_b1" in r or "err_b8" in r}
    if errs:
        w = max(errs, key=errs.get)
        parts.append(f"worst error {w} {errs[w]:.2e}")
    failed = [f"{n} ({', '.join(r['errors'])})" for n, r in results.items() if r["errors"]]
    if failed:
        parts.append(f"failures: {'; '.join(failed)}")
    print("\n" + "; ".join(parts))


def check(argv):
    ap = argparse.ArgumentParser(prog="zoo.py check")
    ap.add_argument("dir")
    ap.add_argument("joule")
    ap.add_argument("--models", default=",".join(ZOO))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch8", action="store_true")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--budget", type=float, default=1.5, help="seconds of timed runs per process (default 1.5)")
    ap.add_argument("--other", help="a second joule binary, timed alternately with JOULE")
    ap.add_argument("--json", help="write every result here")
    ap.add_argument("--no-bench", action="store_true", help="outputs, ORT run and RSS only")
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",")]
    args.joule = os.path.abspath(args.joule)
    args.other = args.other and os.path.abspath(args.other)
    if not os.path.isdir(os.path.join(HERE, "peers", "node_modules", "onnxruntime-node")):
        subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", "--silent"],
                       cwd=os.path.join(HERE, "peers"), check=True)  # as bench_peers.py does
    tmp = tempfile.mkdtemp(prefix="zoo_")
    results = {}
    try:
        for name in model_list(args.models):
            results[name] = check_model(args, name, tmp)
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)  # the pinned copies
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    table(results, args.other)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


def model_list(s):
    names = s.split(",")
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        sys.exit(f"unknown model(s) {', '.join(unknown)}; the zoo: {', '.join(ZOO)}")
    return names


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "export":
        ap = argparse.ArgumentParser(prog="zoo.py export")
        ap.add_argument("dir")
        ap.add_argument("--models", default=",".join(ZOO))
        a = ap.parse_args(sys.argv[2:])
        export(a.dir, model_list(a.models))
    elif len(sys.argv) >= 4 and sys.argv[1] == "check":
        check(sys.argv[2:])
    elif len(sys.argv) in (7, 8) and sys.argv[1] == "torch-bench":  # the PyTorch column's subprocess
        torch_bench(sys.argv[2], *map(int, sys.argv[3:7]), *sys.argv[7:])
    else:
        sys.exit(__doc__)
