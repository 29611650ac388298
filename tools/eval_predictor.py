#!/usr/bin/env python3
"""The latency regressor judged offline against the operator store's own rows.

For each model (whose layers `joule opdb add` put in the store), the prediction with every row
(each layer exact: the isolated times the store measured) is set against the prediction made
without the rows only that model's layers put there (leave-one-architecture-out: its layers come
from the regressor or from rows other architectures and the sweep share). Their ratio is the
regressor's own error on an unseen architecture, free of the machine's noise: nothing is
measured, so it can be rerun after every change to the features or the regressor in seconds.
`joule predict --validate --leave-one-out` is the end-to-end check (against measured runs).

  PYTHONPATH=build/python python3 tools/eval_predictor.py --db opdb.sqlite --model-dir ~/.cache/joule/zoo \
      [--models a,b] [--regime reused] [--threads 1] [--json out.json]
"""
import argparse
import json
import os
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--db", required=True)
    ap.add_argument("--model-dir", required=True, help="folder of NAME/model.onnx")
    ap.add_argument("--models", default="", help="comma-separated names (default: every folder)")
    ap.add_argument("--regime", default="reused")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default="", help="write the per-model and per-layer figures here")
    a = ap.parse_args()
    import joule

    names = [m for m in a.models.split(",") if m] or sorted(
        d for d in os.listdir(a.model_dir) if os.path.isfile(os.path.join(a.model_dir, d, "model.onnx")))
    print(f"{'model':<22} {'all rows ms':>12} {'held out ms':>12} {'error':>8} {'expected':>9} {'layer med|e|':>13} "
          f"{'exact':>6}")
    out, errors, layer_errors = [], [], []
    for n in names:
        m = joule.load(os.path.join(a.model_dir, n, "model.onnx"))
        full = joule.predict(m, db=a.db, threads=a.threads, regime=a.regime)
        held = joule.predict(m, db=a.db, threads=a.threads, regime=a.regime, exclude_origins=[f"model:{n}"])
        if full.coverage["exact"]["time_pct"] < 99:
            print(f"{n:<22} skipped: only {full.coverage['exact']['time_pct']:.0f}% of its time is on exact rows "
                  "(run `joule opdb add` on it first)")
            continue
        err = held.latency_ms / full.latency_ms - 1
        le = [abs(h["latency_ms"] / f["latency_ms"] - 1) for f, h in zip(full.layers, held.layers)
              if f["latency_ms"] > 0 and h["source"] != "exact"]
        med = statistics.median(le) if le else 0.0
        errors.append(err)
        layer_errors += le
        expected = held["expected_error_pct"]
        print(f"{n:<22} {full.latency_ms:12.3f} {held.latency_ms:12.3f} {100 * err:+7.1f}% "
              f"{'-' if expected is None else f'{expected:.1f}%':>9} {100 * med:12.1f}% "
              f"{held.coverage['exact']['time_pct']:5.0f}%")
        out.append({"model": n, "all_rows_ms": full.latency_ms, "held_out_ms": held.latency_ms, "error": err,
                    "expected_error_pct": expected,
                    "layers": [{"name": f["name"], "op_type": f["op_type"], "algorithm": f["algorithm"],
                                "all_rows_ms": f["latency_ms"], "held_out_ms": h["latency_ms"], "source": h["source"]}
                               for f, h in zip(full.layers, held.layers)]})
    if not errors:
        sys.exit("no model had its layers in the store")
    w5 = sum(abs(e) <= 0.05 for e in errors) / len(errors)
    w10 = sum(abs(e) <= 0.10 for e in errors) / len(errors)
    print(f"{len(errors)} models: within ±5 %: {100 * w5:.0f} %, within ±10 %: {100 * w10:.0f} %, "
          f"median |error| {100 * statistics.median(abs(e) for e in errors):.1f} %, "
          f"median |error| of the held-out layers {100 * statistics.median(layer_errors):.1f} %")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
