"""The Python module against the command line, and its promises: errors as exceptions, the GIL
released while the engine runs, Ctrl-C, arrays in and out without copies, typed stubs."""
import ast
import json
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import joule
from conftest import JOULE_BIN, MODELS, ROOT, SAMPLES, VNNI, W4A4, W4A8, W7A8, W8A8, joule_cli, onnx_model


# ---- outputs and results are the CLI's --------------------------------------------------------

def test_session_outputs_equal_joule_run(model, tmp_path):
    x = np.load(MODELS / "fashion_cnn_input.npy")
    joule_cli("run", "default", "-i", MODELS / "fashion_cnn_input.npy", "-o", tmp_path, "--threads", "1")
    cli = np.load(tmp_path / "logits.npy")
    s = joule.Session(model, threads=1)
    out = s.run({"input": x})
    assert list(out) == ["logits"]
    np.testing.assert_array_equal(out["logits"], cli)
    # The same through the other input forms, and PyTorch's own logits for the bundled samples.
    np.testing.assert_array_equal(s.run(x)["logits"], cli)
    np.testing.assert_array_equal(s.run([x])["logits"], cli)
    images = np.load(SAMPLES)
    torch_logits = np.load(MODELS / "fashion_cnn_sample_logits.npy")
    got = np.concatenate([s.run(images[i:i + 1])["logits"] for i in range(len(images))])
    np.testing.assert_allclose(got, torch_logits, rtol=1e-4, atol=1e-4)


def test_evaluate_json_is_the_cli_json(model, samples):
    _, out, _ = joule_cli("eval", "default", "--data", SAMPLES, "--format", "json")
    cli = json.loads(out)
    r = joule.evaluate(model, str(SAMPLES))
    py = r.to_dict()
    for d in (cli, py):
        d.pop("seconds")
    assert py == cli
    assert r.top1 == 1.0 and r.samples == 16  # models/fashion_cnn.json: 16 of 16 in PyTorch
    # Arrays in memory give the same accuracy as the file.
    a = joule.evaluate(model, samples)
    assert (a.top1, a.top1_correct, a.samples) == (r.top1, r.top1_correct, r.samples)


def test_bench_and_profile_json_have_the_cli_keys(model):
    _, out, _ = joule_cli("bench", "default", "--threads", "1", "--runs", "3", "--format", "json")
    b = joule.bench(model, threads=1, runs=3)
    assert set(b) == set(json.loads(out))
    assert b.runs == 3 and len(b.samples_ms) == 3 and b.threads == 1
    assert b.latency_ms["min"] <= b.latency_ms["median"] <= b.latency_ms["max"]
    _, out, _ = joule_cli("profile", "default", "--threads", "1", "--runs", "3", "--format", "json")
    cli = json.loads(out)
    p = joule.profile(model, threads=1, runs=3)
    assert set(p) == set(cli)
    assert set(p.points[0]) == set(cli["points"][0])
    assert [l["name"] for l in p.points[0]["layers"]] and len(p.layers) == len(cli["points"][0]["layers"])
    # Layers add up: the attribution is computed from the rows.
    assert p.attribution["layer_sum_ms"] == pytest.approx(sum(l["latency_ms_median"] for l in p.layers), rel=1e-6)


def test_quantize_matches_cli_and_round_trips(model, samples, tmp_path):
    out = tmp_path / "cli.onnx"
    _, text, _ = joule_cli("quantize", "default", "--config", W8A8, "--calib", SAMPLES, "--eval", SAMPLES,
                           "-o", out, "--format", "json")
    cli = json.loads(text)
    q = joule.quantize(model, W8A8, calib=str(SAMPLES), eval=str(SAMPLES))
    assert isinstance(q, joule.Model) and isinstance(q, joule.DerivedModel)
    rep = q.report.to_dict()
    cli.pop("output")
    for d in (cli, rep):
        for k in ("fp32", "quantized"):
            d["eval"][k].pop("seconds")
    assert rep == cli
    # Calibrating on the arrays gives the same plan (scales) as on the file.
    qa = joule.quantize(model, W8A8, calib=samples[0])
    assert qa.report.plan == q.report.plan
    # save -> load -> evaluate: the same accuracy as the quantized model in memory.
    q.save(tmp_path / "q.onnx")
    again = joule.load(tmp_path / "q.onnx")
    assert joule.evaluate(again, samples).top1 == joule.evaluate(q, samples).top1 == rep["eval"]["quantized"]["top1"]
    # A config as a dict (JSON is YAML) gives the same model as examples/quant/w8a8.yaml.
    config = {"default": {"weight": {"format": "int", "bits": 8, "symmetric": True, "granularity": "per_channel",
                                     "calibrator": "minmax"},
                          "input": {"format": "int", "bits": 8, "symmetric": False, "granularity": "per_tensor",
                                    "calibrator": "percentile", "percentile": 99.99}},
              "rules": [{"match": {"type": "Gemm"}, "input": {"format": "int", "bits": 8, "calibrator": "entropy"}}]}
    qd = joule.quantize(model, config, calib=samples[0])
    assert qd.report.plan == qa.report.plan and qd.report.config == "inline config"


def test_formats_onnx_cannot_express_need_allow_joule_ops(model, samples, tmp_path):
    q = joule.quantize(model, W4A4, calib=samples[0])  # 4-bit activations: no QuantizeLinear clamps to them
    assert q.report.fake_quant_nodes > 0
    with pytest.raises(joule.BadInput, match="FakeQuant"):
        q.save(tmp_path / "w4.onnx")
    assert not (tmp_path / "w4.onnx").exists()
    q.save(tmp_path / "w4.onnx", allow_joule_ops=True)
    assert joule.load(tmp_path / "w4.onnx").num_nodes == q.num_nodes


def test_agreement_simulation_is_the_integer_plan(model, samples):
    q = joule.quantize(model, W8A8, calib=samples[0])
    a = joule.agreement(q, samples[0][:4])
    # integer kernels where the CPU has VNNI; without, both plans run the exact emulated kernels
    assert (a.integer_nodes >= 3 if VNNI else a.integer_nodes == 0 and "no VNNI" in a.note)
    assert a.first_difference == "" and a.min_within_one_step == 1.0
    assert any(t["dtype"] == "uint8" for t in a.tensors) and a.outputs[0]["identical"]
    assert joule.agreement(q).min_within_one_step == 1.0  # seeded random inputs
    with pytest.raises(joule.BadInput, match="not a quantized"):
        joule.agreement(model)


def test_seven_bit_weights_run_on_integer_kernels_on_every_cpu(model, samples):
    # 7-bit weights: oneDNN's int8 kernels are exact with and without VNNI, so the integer plan
    # runs them everywhere and its codes equal the simulation's.
    q = joule.quantize(model, W7A8, calib=samples[0])
    a = joule.agreement(q, samples[0][:4])
    assert a.integer_nodes >= 3 and a.first_difference == "" and a.min_within_one_step == 1.0
    assert a.outputs[0]["identical"]


def test_bf16_session_is_checked_against_float32(model):
    x = np.load(MODELS / "fashion_cnn_input.npy")
    fp32 = joule.Session(model, threads=1).run(x)["logits"]
    cpu_has_bf16 = "avx512_bf16" in open("/proc/cpuinfo").read() or "amx_bf16" in open("/proc/cpuinfo").read()
    if not cpu_has_bf16:
        with pytest.raises(joule.BadInput, match="AVX512-BF16"):
            joule.Session(model, threads=1, precision="bf16")
        return
    s = joule.Session(model, threads=1, precision="bf16")
    p = s.precision
    assert p.precision == "bf16" and p.bf16_layers >= 2 and p.fp32_layers == 0
    assert all(30 < layer["sqnr_db"] < 90 for layer in p.layers)
    got = s.run(x)["logits"]
    assert not np.array_equal(got, fp32)  # computed in bfloat16 ...
    np.testing.assert_allclose(got, fp32, rtol=0.05, atol=0.05 * np.abs(fp32).max())  # ... close to float32
    kept = joule.Session(model, threads=1, precision="bf16", bf16_min_sqnr=1000).precision
    assert kept.bf16_layers == 0 and kept.fp32_layers == p.bf16_layers
    with pytest.raises(joule.BadInput, match="neither fp32 nor bf16"):
        joule.Session(model, precision="fp16")


def test_gpu_precision_options_reach_the_session(model):
    # gpu_fp32 names GPU nodes: refused for a CPU session; a list or one name is taken.
    for keep in (["conv1"], "conv1"):
        with pytest.raises(joule.BadInput, match="needs --device cuda"):
            joule.Session(model, threads=1, gpu_fp32=keep)
    with pytest.raises(TypeError, match="gpu_fp32"):
        joule.Session(model, threads=1, gpu_fp32=3)


def test_sensitivity_automp_compare_info(model, samples, tmp_path):
    s = joule.sensitivity(model, W8A8, calib=samples[0], eval=samples, mode="isolated", samples=8,
                          out_dir=tmp_path / "sens")
    assert len(s.layers) == 6 and "metrics_all_sqnr_db" in s.layers[0]
    assert (tmp_path / "sens" / "sensitivity.svg").exists()
    a = joule.automp(model, W4A8, calib=samples[0], eval=samples, max_drop=0.0, samples=8)
    assert a.met and isinstance(a.model, joule.DerivedModel)
    assert "AutoMP result" in a.yaml and [r["model"] for r in a.summary] == ["fp32", "all w4a8", "automp"]
    c = joule.compare(model, [W8A8], calib=samples[0], eval=samples, runs=3, warmup=1, energy="estimate")
    assert [r["model"] for r in c.rows] == ["fp32", "w8a8"]
    assert (c.rows[1]["integer_nodes"] > 0) == VNNI and c.rows[0]["energy_source"].startswith("estimate:")
    assert joule.info(model).num_nodes == 21
    i = joule.info(model, plan=True, threads=1)  # after the default passes
    assert i.passes["nodes_before"] == 21 and i.num_nodes == i.passes["nodes_after"] < 21
    assert i.plan["threads"] == 1 and len(i.plan["steps"]) == i.num_nodes


def test_results_are_pandas_friendly(model):
    pd = pytest.importorskip("pandas")
    p = joule.profile(model, threads=1, runs=3)
    df = pd.DataFrame(p.layers)
    assert len(df) == len(p.points[0]["layers"])
    assert {"name", "op", "algorithm", "latency_ms_median", "pct"} <= set(df.columns)
    assert df["latency_ms_median"].dtype.kind == "f"


# ---- errors -----------------------------------------------------------------------------------

def test_errors_are_exceptions_with_one_line(model, tmp_path):
    with pytest.raises(joule.BadInput, match="no such file") as e:
        joule.load(tmp_path / "missing.onnx")
    assert "\n" not in str(e.value) and isinstance(e.value, ValueError) and isinstance(e.value, joule.Error)
    (tmp_path / "bad.onnx").write_bytes(b"\x08\x07garbage")
    with pytest.raises(joule.BadInput):
        joule.load(tmp_path / "bad.onnx")
    with pytest.raises(joule.BadInput):
        joule.load(b"not a model")
    s = joule.Session(model, threads=1)
    with pytest.raises(joule.BadInput, match="expected shape"):
        s.run(np.zeros((1, 3, 28, 28), np.float32))
    with pytest.raises(joule.BadInput, match="expected float32, got float64"):
        s.run(np.zeros((1, 1, 28, 28)))
    with pytest.raises(joule.BadInput, match="not an input"):
        s.run({"nope": np.zeros((1, 1, 28, 28), np.float32)})
    with pytest.raises(joule.BadInput, match="not supported"):
        s.run(np.zeros((1, 1, 28, 28), np.complex64))
    with pytest.raises(joule.BadInput, match="unknown algorithm"):
        joule.Session(model, algo="conv=nosuch")
    with pytest.raises(joule.BadInput, match="int8"):
        joule.bench(model, int8="sometimes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'thread'"):
        joule._joule.bench(model, thread=1)
    with pytest.raises(TypeError):
        joule.bench(model, runs="many")
    with pytest.raises(joule.BadInput, match="no such file"):
        joule.quantize(model, tmp_path / "none.yaml", calib=str(SAMPLES))


def test_unsupported_ops_are_listed_at_once(tmp_path):
    from onnx import helper
    path = onnx_model(tmp_path / "u.onnx",
                      [helper.make_node("Relu", ["x"], ["a"], name="r"),
                       helper.make_node("NoSuchOpA", ["a"], ["b"], name="n1"),
                       helper.make_node("NoSuchOpB", ["b"], ["y"], name="n2")],
                      [("x", "float32", [2])], [("y", "float32", [2])])
    m = joule.load(path)
    with pytest.raises(joule.Unsupported) as e:
        joule.Session(m)
    assert "n1" in str(e.value) and "n2" in str(e.value) and "\n" not in str(e.value)


# ---- arrays without copies; outputs never alias weights or inputs -----------------------------

def test_inputs_untouched_and_outputs_owned(tmp_path):
    from onnx import helper
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = onnx_model(tmp_path / "m.onnx",
                      [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Identity", ["w"], ["wout"]),
                       helper.make_node("Identity", ["x"], ["xout"])],
                      [("x", "float32", [2, 3])], [("y", "float32", [2, 3]), ("wout", "float32", [2, 3]),
                                                   ("xout", "float32", [2, 3])], [("w", w)])
    s = joule.Session(joule.load(path), threads=1)
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    keep = x.copy()
    out = s.run({"x": x})
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_array_equal(out["y"], np.maximum(x, 0))
    np.testing.assert_array_equal(out["wout"], w)
    out["wout"][:] = 42  # a copy, not the model's weight
    out["xout"][:] = 42  # a copy, not the caller's input
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_array_equal(s.run({"x": x})["wout"], w)
    # Non-contiguous, read-only and byte-swapped arrays are accepted (made contiguous first).
    xt = np.ascontiguousarray(x.T).T
    ro = x.copy()
    ro.flags.writeable = False
    for v in (xt, ro, x.astype(">f4")):
        np.testing.assert_array_equal(s.run({"x": v})["y"], np.maximum(x, 0))


def test_unaligned_inputs_give_the_aligned_results(model):
    # A C-contiguous array at an address that is not 64-byte aligned is used in place: every
    # conv algorithm must read it as it reads joule's own aligned buffers.
    x = np.load(MODELS / "fashion_cnn_input.npy")
    buf = np.zeros(x.size + 64, np.float32)
    start = next(i for i in range(1, 16) if (buf.ctypes.data + 4 * i) % 64)
    unaligned = buf[start:start + x.size].reshape(x.shape)
    unaligned[...] = x
    assert unaligned.ctypes.data % 64 != 0 and unaligned.flags.c_contiguous
    avx512 = "avx512f" in pathlib.Path("/proc/cpuinfo").read_text().split()
    for algo in ("guess", "conv=direct", "conv=im2col_gemm", "conv=onednn", "conv=fft", "reference"):
        if algo == "conv=direct" and not avx512:  # the direct kernels are AVX-512 code
            continue
        s = joule.Session(model, threads=1, algo=algo)
        np.testing.assert_array_equal(s.run(unaligned)["logits"], s.run(x.copy())["logits"], err_msg=algo)


# ---- threads, GIL, Ctrl-C, progress -----------------------------------------------------------

def test_gil_is_released_while_the_engine_runs(model):
    entered, done = threading.Event(), threading.Event()

    def work():
        entered.set()
        joule.bench(model, threads=1, warmup=0, runs=400)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    entered.wait()
    ticks = 0
    while not done.is_set():
        ticks += 1
    t.join()
    # Holding the GIL for the whole call would leave this thread a handful of iterations.
    assert ticks > 10000, ticks


def test_sessions_from_many_threads(model, samples):
    # Four threads on two sessions: calls to one session queue up, the two run side by side.
    sessions = [joule.Session(model, threads=1), joule.Session(model, threads=1, algo="conv=im2col_gemm")]
    images = samples[0]
    want = [[s.run(images[i:i + 1])["logits"] for i in range(len(images))] for s in sessions]
    errors = []

    def worker(k):
        s = sessions[k % 2]
        for r in range(20):
            i = (k + r) % len(images)
            if not np.array_equal(s.run(images[i:i + 1])["logits"], want[k % 2][i]):
                errors.append((k, i))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_ctrl_c_stops_a_long_call():
    code = ("import joule; m = joule.load('default'); print('ready', flush=True); "
            "joule.bench(m, threads=1, warmup=0, runs=10**8)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    time.sleep(0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0 and "KeyboardInterrupt" in err, err
    assert time.monotonic() - t0 < 10


def test_progress_is_reported_and_its_exceptions_propagate(model, samples):
    seen = []
    joule.evaluate(model, samples, progress=seen.append)
    assert seen and all(isinstance(p, joule.Progress) for p in seen)
    assert seen[-1].done == seen[-1].total == 16 and seen[-1].stage == "evaluating"

    def stop(p):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        joule.bench(model, threads=1, runs=1000, progress=stop)


# ---- the model is shared read-only ------------------------------------------------------------

def test_workflows_never_change_their_model(model, samples):
    before = model.to_bytes()
    joule.Session(model, threads=1).run(samples[0][:1])
    joule.quantize(model, W8A8, calib=samples[0])
    assert model.to_bytes() == before
    shaped = model.with_input_shapes({"input": [1, 1, 28, 28]})
    assert shaped.inputs[0]["shape"] == [1, 1, 28, 28] and model.to_bytes() == before


# ---- typing -------------------------------------------------------------------------------------

def test_stub_matches_the_compiled_module():
    stub = ast.parse((ROOT / "python" / "joule" / "_joule.pyi").read_text())
    declared = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {t.id for n in stub.body if isinstance(n, ast.AnnAssign) for t in [n.target]}
    public = {n for n in dir(joule._joule) if not n.startswith("_")} | {"__version__"}
    assert public - {"__version__"} == declared - {"__version__"}
    for cls in ("Model", "Session"):
        node = next(n for n in stub.body if isinstance(n, ast.ClassDef) and n.name == cls)
        methods = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
        actual = {n for n in dir(getattr(joule._joule, cls)) if not n.startswith("__")}
        assert actual <= methods | {"report"}, actual - methods
    assert (pathlib.Path(joule.__file__).parent / "py.typed").exists()
    for name in joule.__all__:
        assert hasattr(joule, name), name


def test_opdb_and_predict_are_the_cli_s(model, tmp_path):
    import joule
    db = tmp_path / "ops.sqlite"
    added = joule.opdb_add(model, db=db, threads=1, runs=2, sample_ms=0, min_time=0)
    assert added.models[0]["measured"] == added.models[0]["distinct"] > 0
    # reused and fresh for every layer, cold for the layers with weights
    assert 2 * added.models[0]["distinct"] < added.rows < 3 * added.models[0]["distinct"]
    again = joule.opdb_add([model], db=db, threads=1, runs=2, sample_ms=0, min_time=0)
    assert again.models[0]["measured"] == 0
    p = joule.predict(model, db=db)
    assert p.coverage["exact"]["time_pct"] == pytest.approx(100.0)
    assert abs(sum(l["latency_ms"] for l in p.layers) - p.latency_ms) < 1e-9
    _, out, _ = joule_cli("predict", "default", "--db", db, "--format", "json")
    assert json.loads(out) == json.loads(p.to_json())
    # Without the model's own rows nothing is exact.
    loo = joule.predict(model, db=db, exclude_origins=["model:fashion_cnn"])
    assert loo.coverage["exact"]["layers"] == 0
    # A last-level cache a tenth of the weights: every layer with weights takes the cold regime's extra.
    tiny = joule.predict(model, db=db, llc_bytes=p.to_dict()["weight_bytes"] / 10)
    assert (p.to_dict()["cold_share"], tiny.to_dict()["cold_share"]) == (0, 1)
    assert tiny.latency_ms >= p.latency_ms
    with pytest.raises(joule.BadInput, match="no operator database"):
        joule.predict(model, db=tmp_path / "missing.sqlite")
    with pytest.raises(TypeError, match="wrong type|unexpected"):
        joule.predict(model, db=db, threads="many")


# ---- values other than tensors ---------------------------------------------------------------

def test_sequence_optional_and_string_outputs(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("SplitToSequence", ["x", "two"], ["pieces"]),
             helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2])),
             helper.make_node("StringNormalizer", ["words"], ["upper"], case_change_action="UPPER")]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_sequence_value_info("pieces", TensorProto.FLOAT, None),
         helper.make_value_info("none", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))),
         helper.make_tensor_value_info("upper", TensorProto.STRING, [2])],
        [numpy_helper.from_array(np.array(2, np.int64), "two"),
         numpy_helper.from_array(np.array(["monday", "größe"], dtype=object), "words")])
    path = str(tmp_path / "seq.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = joule.Session(joule.load(path), threads=1).run({"x": x})
    assert isinstance(out["pieces"], list) and len(out["pieces"]) == 2
    np.testing.assert_array_equal(out["pieces"][1], x[2:])
    assert out["none"] is None
    assert out["upper"].dtype == object and out["upper"].shape == (2,)
    assert out["upper"][0] == "MONDAY" and out["upper"][1].startswith("GRÖ")  # ß has no one-letter capital
