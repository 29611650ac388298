"""joule from Python, end to end on the bundled Fashion-MNIST CNN: run, profile, quantize, evaluate.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/quickstart.py [OUT_DIR]

The data is Debian's dataset-fashion-mnist (scripts/setup.sh installs it).
"""
import pathlib, sys, tempfile
import numpy as np
import joule

repo = pathlib.Path(__file__).resolve().parents[2]
out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
out.mkdir(parents=True, exist_ok=True)
fm = "/usr/share/datasets/fashion-mnist"

# --- the user code: 15 lines ---
m = joule.load("default")
x, y = np.load(repo / "models/fashion_cnn_sample.npy"), np.load(repo / "models/fashion_cnn_sample_labels.npy")
logits = joule.Session(m, threads=1).run({"input": x[:1]})["logits"]
print(f"first sample: predicted class {logits.argmax()}, label {y[0]}")
p = joule.profile(m, threads=1, runs=20)
print(f"latency {p.latency_ms['median']:.3f} ms; layers add up to {p.attribution['pct']:.0f}% of it; slowest:")
for layer in p.layers[:3]:
    print(f"  {layer['name']:<40} {layer['op']:<12} {layer['algorithm']:<10} {layer['latency_ms_median']:.4f} ms")
q = joule.quantize(m, repo / "examples/quant/w8a8.yaml", calib=f"{fm}:train", calib_samples=256)
q.save(out / "fashion_cnn_w8a8.onnx")
for name, model in (("fp32", m), ("w8a8", q)):
    r = joule.evaluate(model, f"{fm}:test", limit=2000)
    print(f"{name}: top-1 {100 * r.top1:.2f}% on {r.samples} test images")
print(f"wrote {out / 'fashion_cnn_w8a8.onnx'}")
