#!/usr/bin/python3
"""Data-parallel training: `mpirun -np 2 joule train --batch B` steps as `joule train --batch 2B`
(the step losses within 1e-4 relative; BatchNorm frozen, whose batch statistics would otherwise
differ by definition), and only rank 0 writes the model.
Usage: mpi_matches_one_process.py JOULE_BINARY MPIRUN"""
import json
import os
import subprocess
import sys
import tempfile

joule, mpirun = sys.argv[1], sys.argv[2]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
samples = os.path.join(root, "models", "fashion_cnn_sample.npy")
tmp = tempfile.mkdtemp()
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
common = ["train", "default", "--data", samples, "--steps", "6", "--no-shuffle", "--bn", "frozen", "--threads", "1",
          "--lr", "0.01", "--format", "json"]


def losses(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    recs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    return [x["loss"] for x in recs if x.get("event") == "step"], recs[-1]


two, done2 = losses([mpirun, "-np", "2", joule] + common + ["--batch", "4", "-o", os.path.join(tmp, "two.onnx")])
one, done1 = losses([joule] + common + ["--batch", "8", "-o", os.path.join(tmp, "one.onnx")])
assert len(one) == len(two) == 6, (one, two)
assert done2["summary"]["settings"]["ranks"] == 2 and done2["summary"]["settings"]["global_batch"] == 8
for a, b in zip(one, two):
    assert abs(a - b) <= 1e-4 * abs(a), (one, two)
assert os.path.exists(os.path.join(tmp, "two.onnx"))
print(f"2 ranks x batch 4 vs 1 process x batch 8: step losses agree (max rel diff "
      f"{max(abs(a - b) / abs(a) for a, b in zip(one, two)):.2e})")
print("1 passed, 0 failed")
