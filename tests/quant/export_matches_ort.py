#!/usr/bin/python3
"""joule's QDQ export, loaded and run in ONNX Runtime (npm onnxruntime-node), against joule.

The bundled Fashion-MNIST model is quantized W8A8 (examples/quant/w8a8.yaml) and written as
standard ONNX QDQ with `joule quantize -o`. Then, on the 16 bundled test images:
  * ORT with graph optimisations disabled runs the QDQ graph as written (float Q/DQ): it must
    agree with joule's simulation to float rounding (max |diff| <= 1e-4 * max |logit|) on at
    least 12 of 16 images; on the others a different summation order may move a value across a
    rounding boundary of the next QuantizeLinear (one code), so they must agree within 1 %;
  * ORT with every optimisation fuses the QDQ patterns into its integer kernels (QLinearConv
    ...): it must give the same top-1 on at least 15 of 16 images, and logits within 5 % of
    their range (requantization rounds differently from the simulation).
    On a CPU without VNNI, ORT's u8 x s8 kernels add products in saturating 16-bit pairs
    (vpmaddubsw): the weights are then quantized to 7 bits (examples/quant/w7a8.yaml), whose
    pairs cannot saturate, and the checks hold as they are.
  * every run of `joule run` on the exported file gives what `joule run --passes none` gives.
The same checks again on the export of `joule qat` (W8A8, learned step sizes, 3 steps).
Usage: export_matches_ort.py JOULE_BINARY
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = os.path.join(ROOT, "tools", "peers")
VNNI = bool({"avx512_vnni", "avx_vnni"} & set(open("/proc/cpuinfo").read().split()))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{r.stdout}")
    return r.stdout


def only_npy(d):
    files = [f for f in os.listdir(d) if f.endswith(".npy")]
    assert len(files) == 1, files
    return np.load(os.path.join(d, files[0]))


def check(joule, q, samples, tmp, what):
    """The checks above on one exported model; returns the failures."""
    fails = []
    top1_same = exact_sim = 0
    worst_sim = worst_int = 0.0
    for i in range(samples.shape[0]):
        x = os.path.join(tmp, f"x{i}.npy")
        np.save(x, samples[i:i + 1])
        outs = {}
        for label, cmd in [("joule", [joule, "run", q, "-i", x]),
                           ("joule_nopass", [joule, "run", q, "-i", x, "--passes", "none"]),
                           ("ort_disabled", ["node", os.path.join(PEERS, "ort_run.js"), q, None, "--opt", "disabled", x]),
                           ("ort_all", ["node", os.path.join(PEERS, "ort_run.js"), q, None, "--opt", "all", x])]:
            d = os.path.join(tmp, f"{what}_{label}_{i}")
            os.makedirs(d)
            if label.startswith("joule"):
                cmd += ["-o", d]
            else:
                cmd[3] = d
            run(cmd)
            outs[label] = only_npy(d)
        ref = outs["joule"]
        scale = float(np.abs(ref).max())
        rng = float(ref.max() - ref.min())
        d_pass = float(np.abs(outs["joule_nopass"] - ref).max())
        d_sim = float(np.abs(outs["ort_disabled"] - ref).max())
        d_int = float(np.abs(outs["ort_all"] - ref).max())
        worst_sim = max(worst_sim, d_sim / scale)
        worst_int = max(worst_int, d_int / rng)
        if d_pass > 1e-4 * scale:
            fails.append(f"{what} sample {i}: joule with and without passes differ by {d_pass:.3g}")
        exact_sim += int(d_sim <= 1e-4 * scale)
        if d_sim > 1e-2 * scale:
            fails.append(f"{what} sample {i}: ORT (no optimisation) differs from joule by {d_sim:.3g} (max |logit| {scale:.3g})")
        if d_int > 0.05 * rng:
            fails.append(f"{what} sample {i}: ORT (integer kernels) differs from joule by {d_int:.3g} (logit range {rng:.3g})")
        top1_same += int(np.argmax(outs["ort_all"]) == np.argmax(ref))
    print(f"{what}: ORT float QDQ vs joule: worst max|diff|/max|logit| {worst_sim:.2e}, within 1e-4 on {exact_sim}/16")
    if exact_sim < 12:
        fails.append(f"{what}: ORT's float QDQ and joule agree to float rounding on only {exact_sim} of 16 images")
    print(f"{what}: ORT integer kernels vs joule simulation: worst max|diff|/range {worst_int:.3f}, same top-1 on {top1_same}/16")
    if top1_same < 15:
        fails.append(f"{what}: ORT's integer kernels and joule agree on top-1 for only {top1_same} of 16 images")
    return fails


def main():
    joule = sys.argv[1]
    if not os.path.isfile(os.path.join(PEERS, "node_modules", "onnxruntime-node", "package.json")):
        sys.exit("FAILED: onnxruntime-node is not installed in tools/peers (scripts/setup.sh installs it)")
    sample_file = os.path.join(ROOT, "models", "fashion_cnn_sample.npy")
    samples = np.load(sample_file)
    # Without VNNI: 7-bit weights, which the integer kernels (ORT's and joule's) add exactly.
    w8a8 = os.path.join(ROOT, "examples", "quant", "w8a8.yaml" if VNNI else "w7a8.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        q = os.path.join(tmp, "q.onnx")
        run([joule, "quantize", "default", "--config", w8a8, "--calib", sample_file, "-o", q, "--quiet"])
        # The same export after quantization-aware training (learned step sizes, a few steps).
        qat = os.path.join(tmp, "qat.onnx")
        run([joule, "qat", "default", "--config", w8a8, "--data", sample_file, "--batch", "8", "--steps", "3",
             "--optimizer", "adamw", "--lr", "1e-3", "--threads", "1", "-o", qat, "--quiet"])
        fails = check(joule, q, samples, tmp, "quantize") + check(joule, qat, samples, tmp, "qat")
        for f in fails:
            print("FAIL:", f)
        n = 2 * (samples.shape[0] * 3 + 2)
        print(f"{n - len(fails)} passed, {len(fails)} failed")
        return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
