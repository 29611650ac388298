#!/usr/bin/python3
"""What calling Session.run from Python costs over the C++ call, measured side by side.

For each model: the C++ time per run is joule.bench's (Session::run timed in C++, no Python in
the loop); the Python time per run is s.run(inputs) timed around the call from Python (inputs
wrapped without a copy, GIL released and taken back, outputs returned as numpy arrays). Rounds
alternate the two; the overhead is the median over rounds of (Python median - C++ median).

    PYTHONPATH=build/python /usr/bin/python3 tools/bench_python_overhead.py [--runs 2000] [--rounds 7]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import joule


def tiny_model(path):
    """One Relu over 256 floats: the engine's own time is almost nothing."""
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])])
    import onnx
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def python_median_us(session, inputs, runs):
    for _ in range(50):
        session.run(inputs)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        session.run(inputs)
        ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ts) / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = [("tiny (1 Relu, 256 floats)", joule.load(tiny_model(os.path.join(tmp, "tiny.onnx"))),
              {"x": np.random.default_rng(0).standard_normal((1, 256), dtype=np.float32)}),
             ("fashion_cnn (bundled)", joule.load("default"),
              {"input": np.load(os.path.join(root, "models", "fashion_cnn_input.npy"))})]
    print(f"joule {joule.__version__}, Python {sys.version.split()[0]}, numpy {np.__version__}; 1 thread, "
          f"{a.runs} runs x {a.rounds} rounds")
    print(f"{'model':<28} {'C++ us':>9} {'Python us':>10} {'overhead us':>12} {'(min..max over rounds)':>24}")
    for name, model, inputs in cases:
        s = joule.Session(model, threads=1)
        cpp, py = [], []
        for _ in range(a.rounds):
            cpp.append(joule.bench(model, inputs, threads=1, warmup=50, runs=a.runs).latency_ms["median"] * 1e3)
            py.append(python_median_us(s, inputs, a.runs))
        diffs = [p - c for p, c in zip(py, cpp)]
        print(f"{name:<28} {statistics.median(cpp):>9.2f} {statistics.median(py):>10.2f} "
              f"{statistics.median(diffs):>12.2f} {f'({min(diffs):.2f}..{max(diffs):.2f})':>24}")


if __name__ == "__main__":
    main()
