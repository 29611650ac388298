#!/usr/bin/python3
"""torchvision detectors and segmenters on joule (issue 25): exported the usual way, joule's
detections compared with PyTorch's and ONNX Runtime's as sets, latency against ONNX Runtime.

    export DIR [--models a,b]
        each model with seeded random weights (torch.manual_seed(0); norms made non-trivial as
        in tools/export_models.py) and a box classifier with seeded, widely spread weights so
        that scores are well separated (random detectors otherwise give tied scores, and which
        tied box is kept depends on rounding); exported with torch.onnx.export (opset 13) as
        DIR/NAME/model.onnx with a seeded image (image.npy) and PyTorch's outputs (NAME.npy).

    check DIR JOULE [--models a,b] [--processes 3] [--runs 10]
        per model: joule run's outputs against PyTorch's: the detections whose score ties with
        no other matched as sets (same label, box within 1e-3 of the image size, score within
        1e-4), order-insensitive, and all the scores compared as sorted lists (tied boxes may
        be swapped by rounding in any engine);
        segmentation maps by max relative error; the same for ONNX Runtime's float outputs;
        then latency at 1 thread (best of --processes processes' medians) of joule bench and
        ONNX Runtime (tools/peers/ort_bench.js). A Markdown table on stdout.

    quant DIR JOULE [--models a,b] [--config FILE] [--processes 3] [--runs 10]
        per model: joule quantize with the config (default: W8A8 as examples/quant/w8a8.yaml
        without its Gemm rule, which a model without Gemm refuses), calibrated on four variants of the seeded
        image (itself, flipped both ways, dimmed); then how far the quantized model's detections
        move from the FP32 model's (joule run of each, --int8 real and simulated): the share of
        FP32 detections matched by a quantized one of the same label at IoU >= 0.5, their mean
        IoU and largest score change, and the detection counts (segmentation maps: SQNR); and
        latency of FP32 and W8A8 at 1 thread (best of --processes processes' medians).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_peers  # noqa: E402

SIZE = 320
# name -> (torchvision constructor, kind)
MODELS = {
    "fasterrcnn_mobilenet_v3_large_320_fpn": ("detection", "boxes"),
    "ssdlite320_mobilenet_v3_large": ("detection", "boxes"),
    "retinanet_resnet50_fpn": ("detection", "boxes"),
    "maskrcnn_resnet50_fpn": ("detection", "boxes"),
    "keypointrcnn_resnet50_fpn": ("detection", "boxes"),
    "fcn_resnet50": ("segmentation", "map"),
    "deeplabv3_mobilenet_v3_large": ("segmentation", "map"),
}
DEFAULT = "fasterrcnn_mobilenet_v3_large_320_fpn,ssdlite320_mobilenet_v3_large,deeplabv3_mobilenet_v3_large"


def make(name):
    import torch
    import torchvision
    import export_models as em
    torch.manual_seed(0)
    family, _ = MODELS[name]
    kw = {"weights": None, "weights_backbone": None}
    if family == "segmentation":
        kw["aux_loss"] = False
    net = getattr(getattr(torchvision.models, family), name)(**kw)
    em.reinit_zero_linears(net)
    em.randomize_zero_params(net)
    em.randomize_norms(net)
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():  # well-separated class scores
        head = getattr(getattr(net, "roi_heads", None), "box_predictor", None)
        if head is not None:  # R-CNNs: the box classifier
            head.cls_score.weight.copy_(torch.randn(head.cls_score.weight.shape, generator=g) * 0.5)
            head.cls_score.bias.copy_(torch.randn(head.cls_score.bias.shape, generator=g))
        cls = getattr(getattr(net, "head", None), "classification_head", None)
        if cls is not None and hasattr(cls, "cls_logits"):  # RetinaNet: a ReLU conv tower, then the logits
            for m in cls.modules():  # He-scaled tower (torchvision's std 0.01 leaves only the bias: tied scores)
                if isinstance(m, torch.nn.Conv2d):
                    m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / m.weight[0].numel()) ** 0.5)
                    m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.5)
        else:
            for m in cls.modules() if cls is not None else []:  # SSD: the class convs
                if isinstance(m, torch.nn.Conv2d):
                    m.weight.copy_(torch.randn(m.weight.shape, generator=g) * 10.0 / m.weight[0].numel() ** 0.5)
    return net.eval()


def spread_logits(net, x):
    """RetinaNet: its sigmoid scores saturate (all 1.0, every detection tied) unless the class
    logits stay within a few units: scale the last conv so that they spread with std 2."""
    import torch
    cls = getattr(getattr(net, "head", None), "classification_head", None)
    if cls is None or not hasattr(cls, "cls_logits"):
        return
    seen = []
    hook = cls.cls_logits.register_forward_hook(lambda m, i, o: seen.append(float(o.std())))
    with torch.no_grad():
        net([x])
        hook.remove()
        cls.cls_logits.weight.mul_(2.0 / max(float(np.mean(seen)), 1e-6))


def export(out, names):
    import torch
    import warnings
    warnings.filterwarnings("ignore")
    for name in names:
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        net = make(name)
        x = torch.rand(3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
        spread_logits(net, x)
        family, _ = MODELS[name]
        arg = ([x],) if family == "detection" else (x[None],)
        with torch.no_grad():
            y = net(*arg)
        outs = y[0] if family == "detection" else {"out": y["out"]}
        names_out = [k for k in outs if k in ("boxes", "labels", "scores", "out")]
        try:
            torch.onnx.export(net, arg, os.path.join(d, "model.onnx"), opset_version=13, input_names=["image"],
                              output_names=names_out)
        except Exception as e:  # noqa: BLE001 (one model the exporter cannot take must not stop the rest)
            print(f"export FAILED {name}: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
            continue
        np.save(os.path.join(d, "image.npy"), (x if family == "detection" else x[None]).numpy())
        for k in names_out:
            np.save(os.path.join(d, k + ".npy"), outs[k].numpy())
        with open(os.path.join(d, "outputs.json"), "w") as f:
            json.dump(names_out, f)
        print(f"exported {name}: " + ", ".join(f"{k} {tuple(outs[k].shape)}" for k in names_out), file=sys.stderr)


def match_sets(want, got, size):
    """(matched, total, max box diff, max score diff): each wanted detection paired with an unused
    got detection of the same label (when labels are compared) and the nearest box."""
    wb, ws, wl = want["boxes"], want["scores"], want.get("labels")
    gb, gs, gl = got["boxes"], got["scores"], got.get("labels")
    used, matched, dbox, dscore = set(), 0, 0.0, 0.0
    for i in range(len(wb)):
        best = None
        for j in range(len(gb)):
            if j in used or (wl is not None and gl is not None and gl[j] != wl[i]):
                continue
            d = float(np.abs(gb[j] - wb[i]).max())
            if best is None or d < best[0]:
                best = (d, j)
        if best is not None and best[0] <= 1e-3 * size and abs(float(gs[best[1]]) - float(ws[i])) <= 1e-4:
            used.add(best[1])
            matched += 1
            dbox, dscore = max(dbox, best[0]), max(dscore, abs(float(gs[best[1]]) - float(ws[i])))
    return matched, len(wb), len(gb), dbox, dscore


def compare(d, outdir, names):
    want = {k: np.load(os.path.join(d, k + ".npy")) for k in names}
    got = {}
    for k in names:
        p = os.path.join(outdir, k + ".npy")
        if os.path.exists(p):
            got[k] = np.load(p)
    if "out" in names:
        if "out" not in got or got["out"].shape != want["out"].shape:
            return "output map missing or of another shape"
        err = float(np.abs(got["out"] - want["out"]).max() / max(float(np.abs(want["out"]).max()), 1e-6))
        return f"max rel err {err:.2e}"
    if "boxes" not in got or "scores" not in got:
        return "boxes/scores missing"
    # Detections whose score ties with another's (random weights make many) may be swapped for
    # an equally scored box by rounding: they are matched by score only (the sorted lists).
    ws = want["scores"]
    gap = np.abs(ws[:, None] - ws[None, :]) + np.eye(len(ws)) * 1e9
    unique = gap.min(axis=1) > 1e-5 if len(ws) > 1 else np.ones(len(ws), bool)
    sub = {k: v[unique] for k, v in want.items()}
    m, n, ng, dbox, dscore = match_sets(sub, got, SIZE)
    sorted_diff = (float(np.abs(np.sort(got["scores"]) - np.sort(ws)).max())
                   if len(got["scores"]) == len(ws) and len(ws) else float("nan") if len(ws) else 0.0)
    return (f"{len(got['scores'])} of {len(ws)} given; untied {m}/{n} matched (box diff {dbox:.1e}, score diff "
            f"{dscore:.1e}); sorted scores differ by {sorted_diff:.1e}")


def parser(prog):
    """The arguments check and quant share."""
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("dir")
    ap.add_argument("joule")
    ap.add_argument("--models", default=DEFAULT)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    return ap


def check(argv):
    a = parser("detectors.py check").parse_args(argv)
    rows = []
    for name in a.models.split(","):
        d = os.path.join(a.dir, name)
        model, image = os.path.join(d, "model.onnx"), os.path.join(d, "image.npy")
        if not os.path.exists(model):
            rows.append((name, "not exported", "", "", "", ""))
            continue
        names = json.load(open(os.path.join(d, "outputs.json")))
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([a.joule, "run", model, "-i", image, "-o", os.path.join(tmp, "j"), "--threads", "1"],
                               capture_output=True, text=True)
            vs_torch = compare(d, os.path.join(tmp, "j"), names) if p.returncode == 0 else p.stderr.strip().splitlines()[-1]
            os.makedirs(os.path.join(tmp, "o"))
            p = subprocess.run(["node", os.path.join(HERE, "peers", "ort_run.js"), model, os.path.join(tmp, "o"), image],
                               capture_output=True, text=True)
            ort_vs_torch = (compare(d, os.path.join(tmp, "o"), [k for k in names if k != "labels"])
                            if p.returncode == 0 else p.stderr.strip().splitlines()[-1])
        ms = {"joule": [], "ort": []}
        for _ in range(a.processes):
            for eng, cmd in (("joule", [a.joule, "bench", model, "-i", image, "--threads", "1", "--warmup", "2", "--runs",
                                        str(a.runs), "--format", "json"]),
                             ("ort", ["node", os.path.join(HERE, "peers", "ort_bench.js"), model, image, "1", "2", str(a.runs)])):
                try:
                    ms[eng].append(bench_peers.run_json(cmd)["latency_ms"]["median"])
                except (RuntimeError, ValueError, KeyError) as e:
                    print(f"{name} {eng}: {e}", file=sys.stderr)
        j, o = min(ms["joule"], default=None), min(ms["ort"], default=None)
        rows.append((name, vs_torch, ort_vs_torch, f"{j:.1f}" if j else "n/a", f"{o:.1f}" if o else "n/a",
                     f"{j / o:.2f}x" if j and o else "n/a"))
        print(name, rows[-1][1:], file=sys.stderr, flush=True)
    print("| model | joule vs PyTorch | ORT vs PyTorch | joule 1T ms | ORT 1T ms | joule/ORT |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def iou(a, b):
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    area = lambda r: max(0.0, r[2] - r[0]) * max(0.0, r[3] - r[1])
    u = area(a) + area(b) - inter
    return inter / u if u > 0 else 0.0


def moved(ref, got):
    """How far `got`'s detections moved from `ref`'s: each ref detection greedily paired, in
    score order, with the unused got detection of its label with the largest IoU."""
    if "out" in ref:
        e = float(((got["out"] - ref["out"]) ** 2).sum())
        return "identical" if e == 0 else f"SQNR {10 * np.log10(float((ref['out'] ** 2).sum()) / e):.1f} dB"
    rb, rs, rl = ref["boxes"], ref["scores"], ref.get("labels")
    gb, gs, gl = got["boxes"], got["scores"], got.get("labels")
    used, ious, dscore = set(), [], 0.0
    for i in np.argsort(-rs):
        best = (0.0, None)
        for j in range(len(gb)):
            if j in used or (rl is not None and gl is not None and gl[j] != rl[i]):
                continue
            v = iou(rb[i], gb[j])
            if v > best[0]:
                best = (v, j)
        if best[1] is not None and best[0] >= 0.5:
            used.add(best[1])
            ious.append(best[0])
            dscore = max(dscore, abs(float(gs[best[1]]) - float(rs[i])))
    n = len(rb)
    return (f"{len(gb)} vs {n} detections; {len(ious)}/{n} matched at IoU>=0.5 (mean IoU "
            f"{np.mean(ious) if ious else 0:.3f}, score change <= {dscore:.3f})")


def quant(argv):
    ap = parser("detectors.py quant")
    ap.add_argument("--config")
    a = ap.parse_args(argv)
    rows = []
    if not a.config:
        a.config = os.path.join(tempfile.mkdtemp(), "w8a8.yaml")
        with open(a.config, "w") as f:
            f.write("default:\n"
                    "  weight: {format: int, bits: 8, symmetric: true, granularity: per_channel, calibrator: minmax}\n"
                    "  input:  {format: int, bits: 8, symmetric: false, granularity: per_tensor, calibrator: percentile, "
                    "percentile: 99.99}\n")
    for name in a.models.split(","):
        d = os.path.join(a.dir, name)
        model, image = os.path.join(d, "model.onnx"), os.path.join(d, "image.npy")
        if not os.path.exists(model):
            rows.append((name, "not exported", "", "", "", "", ""))
            continue
        names = json.load(open(os.path.join(d, "outputs.json")))
        with tempfile.TemporaryDirectory() as tmp:
            x = np.load(image)
            calib = np.stack([x, x[..., ::-1, :], x[..., :, ::-1], np.clip(x * 0.8 + 0.1, 0, 1)]).astype(np.float32)
            np.save(os.path.join(tmp, "calib.npy"), calib)
            qmodel = os.path.join(tmp, "q.onnx")
            p = subprocess.run([a.joule, "quantize", model, "--config", a.config, "--calib", os.path.join(tmp, "calib.npy"),
                                "--calib-samples", "4", "-o", qmodel, "--quiet"], capture_output=True, text=True)
            if p.returncode != 0:
                rows.append((name, "quantize failed: " + p.stderr.strip().splitlines()[-1], "", "", "", "", ""))
                continue
            outs = {}
            for tag, m, extra in (("fp32", model, []), ("real", qmodel, ["--int8", "real"]), ("sim", qmodel, ["--int8", "simulated"])):
                out = os.path.join(tmp, tag)
                subprocess.run([a.joule, "run", m, "-i", image, "-o", out, "--threads", "1"] + extra, check=True,
                               capture_output=True)
                outs[tag] = {k: np.load(os.path.join(out, k + ".npy")) for k in names}
            ms = {"fp32": [], "w8a8": []}
            for _ in range(a.processes):
                for tag, m in (("fp32", model), ("w8a8", qmodel)):
                    cmd = [a.joule, "bench", m, "-i", image, "--threads", "1", "--warmup", "2", "--runs", str(a.runs), "--format", "json"]
                    ms[tag].append(bench_peers.run_json(cmd)["latency_ms"]["median"])
        f, q = min(ms["fp32"]), min(ms["w8a8"])
        rows.append((name, moved(outs["fp32"], outs["real"]), moved(outs["fp32"], outs["sim"]), moved(outs["sim"], outs["real"]),
                     f"{f:.1f}", f"{q:.1f}", f"{q / f:.2f}x"))
        print(name, rows[-1][1:], file=sys.stderr, flush=True)
    print("| model | W8A8 real vs FP32 | W8A8 simulated vs FP32 | real vs simulated | FP32 1T ms | W8A8 1T ms | W8A8/FP32 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "export":
        ap = argparse.ArgumentParser(prog="detectors.py export")
        ap.add_argument("dir")
        ap.add_argument("--models", default=DEFAULT)
        x = ap.parse_args(sys.argv[2:])
        export(x.dir, x.models.split(","))
    elif len(sys.argv) >= 4 and sys.argv[1] == "check":
        check(sys.argv[2:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "quant":
        quant(sys.argv[2:])
    else:
        sys.exit(__doc__)
