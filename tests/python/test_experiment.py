"""Experiments from Python: the same library runner as `joule experiment run`, the store read back,
the report written."""
import json

import pytest

import joule
from conftest import SAMPLES, W8A8, joule_cli


def write_experiment(tmp_path):
    f = tmp_path / "py.yaml"
    f.write_text(f"""
name: py
models:
  - {{name: fashion_cnn, path: default, calib: {SAMPLES}, data: {SAMPLES}}}
grid:
  config: {{fp32: none, w8a8: {W8A8}}}
steps:
  - quantize: {{config: "${{config}}", calib_samples: 8}}
  - bench: {{threads: 1, runs: 3, warmup: 1}}
  - eval: {{threads: 1}}
""")
    return f


def test_experiment_run_resume_and_store(tmp_path):
    f = write_experiment(tmp_path)
    seen = []
    r = joule.experiment_run(f, dir=tmp_path / "runs", progress=lambda p: seen.append(p.stage))
    assert (r.points, r.done, r.failed) == (2, 2, 0)
    assert "experiment" in seen
    again = joule.experiment_run(f, dir=tmp_path / "runs")
    assert (again.skipped, again.done) == (2, 0)
    store = str(tmp_path / "runs" / "results.sqlite")
    runs = joule.runs(store, experiment="py")
    assert sorted(x["params"]["config"] for x in runs) == ["fp32", "w8a8"]
    for x in runs:
        assert x["status"] == "done" and x["metrics"]["bench.latency_ms"] > 0 and x["metrics"]["eval.top1"] > 0.9
    full = joule.run_record(store, runs[1]["id"])
    assert full["result"]["quantize"]["nodes_quantized"] == 6
    assert joule.run_record(store, 9999) is None
    # The CLI sees the same store.
    _, out, _ = joule_cli("experiment", "status", f, "--dir", tmp_path / "runs", "--format", "json")
    assert json.loads(out)["counts"]["done"] == 2
    assert joule.experiment_status(f, dir=str(tmp_path / "runs"))["counts"]["done"] == 2
    html = joule.report(tmp_path / "r.html", store=store, experiment="py")
    assert "joule experiment py" in open(html).read()


def test_experiment_errors_are_bad_input(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nmodels: [default]\nsteps: [nope]\n")
    with pytest.raises(joule.BadInput, match="unknown step 'nope'"):
        joule.experiment_run(bad)
    with pytest.raises(joule.BadInput, match="one of the two"):
        joule.report(tmp_path / "x.html")
    with pytest.raises(TypeError, match="jobs"):
        joule.experiment_run(write_experiment(tmp_path), jobs=2)


def test_prune_and_its_sensitivity(model):
    from conftest import SAMPLES
    p = joule.prune(model, 0.5, structured=True)
    assert p.report["params_after"] < 0.6 * p.report["params_before"]
    s = joule.Session(p, threads=1)  # the pruned model runs
    assert s.run(__import__("numpy").load(SAMPLES)[:1])["logits"].shape == (1, 10)
    u = joule.prune(model, 0.5, scope="global")
    assert u.report["nonzero_after"] < 0.6 * u.report["nonzero_before"]
    sens = joule.prune_sensitivity(model, ratios=[0.5], data=str(SAMPLES), samples=8)
    assert len(sens["layers"]) == 5 and "top1" in sens["layers"][0]["ratios"]["0.5"]  # every conv (a group pruned alike)
    with pytest.raises(joule.BadInput, match="ratio"):
        joule.prune(model, 1.5)


def test_search_resumes_and_writes_the_front(model, tmp_path):
    from conftest import SAMPLES
    space = "precision: [fp32, int8]\nconstraints: {min_accuracy: 0}\n"
    seen = []
    r = joule.search(model, space, str(SAMPLES), str(tmp_path / "s"), data=str(SAMPLES), calib_samples=8,
                     trials=4, runs=2, min_time=0.01, warmup=0, algorithm="random", progress=lambda p: seen.append(p.stage))
    assert r["metric"] == "top1" and r["trials"] == 4 and r["resumed"] == 0
    assert r["front"] and (tmp_path / "s" / "front.svg").exists() and "search" in seen
    again = joule.search(model, space, str(SAMPLES), str(tmp_path / "s"), data=str(SAMPLES), calib_samples=8,
                         trials=4, runs=2, min_time=0.01, warmup=0, algorithm="random")
    assert again["resumed"] == 4
    with pytest.raises(joule.BadInput, match="objective"):
        joule.search(model, space, str(SAMPLES), str(tmp_path / "t"), objectives=["speed"])
