"""joule: measure, analyze and optimize neural networks (ONNX) on joule's own engine.

    import joule, numpy as np
    m = joule.load("model.onnx")                    # or joule.load("default"), or ONNX bytes
    s = joule.Session(m, threads=1, algo="guess")   # passes + algorithm choice as the CLI does
    out = s.run({"input": x})                       # dict name -> np.ndarray
    p = joule.profile(m, threads=1, runs=20)        # p.layers (list of dicts), p.attribution, p.to_json()
    q = joule.quantize(m, "w8a8.yaml", calib=x)     # a model; q.save("q.onnx"), q.report
    r = joule.evaluate(q, (images, labels))         # r.top1, r.to_json()

Every workflow is the library's (the same code as `joule <verb>`); its result's to_json() is
what the command prints with --format json. Options left at None take the command's defaults.
Errors raise joule.BadInput (also a ValueError), joule.Unsupported or joule.Error with joule's
one-line message. The GIL is released while the engine runs, and Ctrl-C stops a long call
between runs.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _joule
from ._joule import BadInput, Error, Model, DerivedModel, Unsupported, __version__

__all__ = [
    "AutoMpResult", "BadInput", "BenchResult", "CompareResult", "Error", "EvalResult", "Model", "Progress",
    "ProfileResult", "QuantizeResult", "DerivedModel", "Result", "SensitivityResult", "Session", "TrainResult",
    "Unsupported", "agreement", "automp", "bench", "compare", "draw_graph", "energy_probe", "evaluate", "finetune", "gradients",
    "info", "load", "OpdbResult", "ExperimentResult", "experiment_run", "experiment_status", "runs", "run_record",
    "report", "prune", "prune_sensitivity", "search", "opdb_add", "opdb_sweep", "predict", "PredictResult", "profile", "qat", "quant_plan", "quantize", "sensitivity", "train", "training_graph",
    "__version__",
]

ArrayLike = Any  # anything numpy.asarray accepts
Inputs = Union[Mapping[str, ArrayLike], Sequence[ArrayLike], ArrayLike]
# A dataset SPEC (.npy, IDX file or folder, JPEG class folder, LMDB), images (sample axis
# first), or (images, labels).
Data = Union[str, "os.PathLike[str]", ArrayLike, Tuple[ArrayLike, ArrayLike]]
Algo = Union[str, Sequence[str]]  # "guess", "auto", "reference", "conv=winograd", "NODE=onednn", ...
# A quantization config: a YAML file, YAML text, or the same as a dict.
Config = Union[str, "os.PathLike[str]", Mapping[str, Any]]
Shapes = Union[Mapping[str, Sequence[int]], Sequence[int]]


class Progress(NamedTuple):
    """What a workflow reports to `progress=`: its stage, units done of total (0: unknown), a line."""

    stage: str
    done: int
    total: int
    message: str


ProgressFn = Callable[[Progress], None]


def load(source: Union[str, "os.PathLike[str]", bytes], name: str = "") -> Model:
    """Loads an ONNX model: a file, "default" (the bundled Fashion-MNIST CNN), or serialized bytes."""
    return _joule.load(source, name)


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict:
    """Nested dicts flattened to one level ("latency_ms": {"median": ..} -> "latency_ms_median")."""
    out: dict = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flat(v, key + "_"))
        else:
            out[key] = v
    return out


class Result(Mapping[str, Any]):
    """A workflow's result: a read-only mapping of its JSON, with attribute access to the keys.

    to_json() is the text `joule <verb> --format json` prints; to_dict() a fresh dict of it.
    """

    def __init__(self, text: str):
        self._text = text
        self._data = json.loads(text)

    def to_json(self) -> str:
        return self._text

    def to_dict(self) -> dict:
        return json.loads(self._text)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no '{name}' (keys: {', '.join(self._data)})") from None

    def __dir__(self) -> list:
        return sorted(set(super().__dir__()) | set(self._data))

    def __repr__(self) -> str:
        return f"<joule.{type(self).__name__} {', '.join(self._data)}>"


class BenchResult(Result):
    """Whole-model latency: latency_ms (median, mean, std, min, max, p90, p99, cv, ...), samples_ms."""

    latency_ms: dict
    samples_ms: list
    threads: int
    peak_activation_bytes: int


class ProfileResult(Result):
    """Per-layer profile. `points` has one entry per measured configuration (sweeps); the
    properties read the first: `layers` as flat dicts (pandas.DataFrame(p.layers) works)."""

    points: list
    skipped_finished_points: list

    def _first(self) -> dict:
        if not self.points:
            raise AttributeError("no point was measured (all were already in out_dir)")
        return self.points[0]

    @property
    def layers(self) -> list:
        """One dict per layer, slowest first: name, op, algorithm, latency_ms_median, ..., pct, gflops."""
        return [_flat(layer) for layer in self._first()["layers"]]

    @property
    def attribution(self) -> dict:
        """layer_sum_ms (sum of per-layer medians), plain_median_ms (whole model), pct."""
        return self._first()["attribution"]

    @property
    def latency_ms(self) -> dict:
        return self._first()["latency_ms"]

    @property
    def op_types(self) -> list:
        return [_flat(o) for o in self._first()["op_types"]]

    @property
    def energy(self) -> Optional[dict]:
        """Energy per inference with its source (a named sensor or the named estimator), or None."""
        return self._first()["energy"]


class EvalResult(Result):
    """Accuracy: top1 (and top5 for 5+ classes) as fractions, top1_correct, samples, seconds."""

    top1: float
    samples: int


class QuantizeResult(Result):
    """How a model was quantized: the per-node plan, calibration, and FP32-vs-quantized accuracy."""

    plan: dict
    calibration_samples: int


class SensitivityResult(Result):
    """Per-layer quantization damage; `layers` as flat dicts (SQNR, cosine, MSE per variant)."""

    @property
    def layers(self) -> list:
        return [_flat(layer) for layer in self._data["layers"]]


class AutoMpResult(Result):
    """Mixed precision: per-layer precision, the steps, FP32 / all-quantized / AutoMP side by
    side; `model` is the mixed-precision model and `yaml` the config that reproduces it."""

    layers: list
    summary: list

    def __init__(self, text: str, yaml: str, model: DerivedModel):
        super().__init__(text)
        self.model = model
        self.yaml = yaml


class CompareResult(Result):
    """FP32 and each config: accuracy, latency, energy (with its source), size; `rows` flat."""

    @property
    def rows(self) -> list:
        return [_flat(r) for r in self._data["rows"]]


class TrainResult(Result):
    """How a model was trained: settings, one record per epoch (loss, train and val top-1,
    seconds, samples/s), the last step's record."""

    epochs: list
    settings: dict


def _options(**kw: Any) -> dict:
    """The keyword options given (None: the default), with `progress` adapted to Progress."""
    opts = {k: v for k, v in kw.items() if v is not None}
    fn = opts.get("progress")
    if fn is not None:
        opts["progress"] = lambda stage, done, total, message: fn(Progress(stage, done, total, message))
    for k in ("out_dir", "calib_cache", "algo_file", "tuning_cache", "energy_profile", "db", "store", "dir"):
        if k in opts:
            opts[k] = os.fspath(opts[k])
    return opts


def _config(config: Config) -> str:
    return json.dumps(config) if isinstance(config, Mapping) else os.fspath(config)


class Session(_joule.Session):
    """A model compiled to run, as the CLI does it: graph passes, int8 lowering (int8="real"),
    the kernel algorithm per node (algo="guess", "auto", "reference", "conv=winograd", ...),
    the arithmetic of Conv/MatMul/Gemm (precision="fp32" or "bf16": oneDNN's bfloat16 kernels and
    joule's bf16 Winograd where the CPU has AVX512-BF16/AMX, each layer checked against float32 on
    seeded random inputs and kept fp32 below bf16_min_sqnr dB, default 30), the device (device="cpu", "cuda" or "cuda:N":
    nodes a GPU kernel runs go there; gpu_math="fp32", "tf32", "fp16" or "bf16", gpu_fp32=[node names kept
    float32 under fp16/bf16]), the activation memory plan. run() takes
    {name: array}, a list in input order or one array; C-contiguous arrays are not copied, and the
    outputs are arrays over joule's buffers."""

    def __init__(self, model: Model, *, threads: Optional[int] = None, algo: Optional[Algo] = None,
                 passes: Optional[str] = None, int8: Optional[str] = None, algo_file: Optional[str] = None,
                 tuning_cache: Optional[str] = None, precision: Optional[str] = None,
                 bf16_min_sqnr: Optional[float] = None, device: Optional[str] = None,
                 gpu_math: Optional[str] = None, gpu_fp32: Optional[Sequence[str]] = None):
        super().__init__(model, **_options(threads=threads, algo=algo, passes=passes, int8=int8,
                                           algo_file=algo_file, tuning_cache=tuning_cache, precision=precision,
                                           bf16_min_sqnr=bf16_min_sqnr, device=device, gpu_math=gpu_math,
                                           gpu_fp32=gpu_fp32))

    @property
    def precision(self) -> Result:
        """precision, min_sqnr_db, check_input, bf16_layers, fp32_layers, and per layer on a bf16
        kernel (or kept fp32 by the check): node, op, algorithm (the bf16 one), sqnr_db (bf16 against
        float32), precision."""
        return Result(self._precision())

    @property
    def plan(self) -> Result:
        """The algorithm chosen per step (and by what), oneDNN's implementation, the memory plan."""
        return Result(self._plan())

    @property
    def pipeline(self) -> Result:
        """What the graph passes did: node counts before/after, per-pass info and time."""
        return Result(self._pipeline())


def bench(model: Model, inputs: Optional[Inputs] = None, *, threads: Optional[int] = None,
          warmup: Optional[int] = None, runs: Optional[int] = None, passes: Optional[str] = None,
          int8: Optional[str] = None, algo: Optional[Algo] = None, algo_file: Optional[str] = None,
          tuning_cache: Optional[str] = None, precision: Optional[str] = None,
          bf16_min_sqnr: Optional[float] = None, device: Optional[str] = None, gpu_math: Optional[str] = None,
          gpu_fp32: Optional[Sequence[str]] = None, progress: Optional[ProgressFn] = None) -> BenchResult:
    """Whole-model latency after warm-up (defaults: all cores, 5 warm-up, 30 runs, seeded random inputs);
    precision="bf16", device="cuda" as Session."""
    return BenchResult(_joule.bench(model, **_options(
        inputs=inputs, threads=threads, warmup=warmup, runs=runs, passes=passes, int8=int8, algo=algo,
        algo_file=algo_file, tuning_cache=tuning_cache, precision=precision, bf16_min_sqnr=bf16_min_sqnr,
        device=device, gpu_math=gpu_math, gpu_fp32=gpu_fp32, progress=progress)))


class OpdbResult(Result):
    """What opdb_add / opdb_sweep measured: db, models (per model and threads: steps, distinct,
    measured, already_in_store, skipped), rows in the store afterwards, seconds."""

    db: str
    models: list
    rows: int


class PredictResult(Result):
    """A predicted model: latency_ms, energy_j and energy_source, layers (name, op_type, algorithm,
    latency_ms, source: exact | model | roofline), coverage (time_pct and layers per source)."""

    latency_ms: float
    energy_j: Optional[float]
    layers: list
    coverage: dict


def opdb_add(models: Union[Model, Sequence[Model]], *, db: Optional[str] = None,
             threads: Union[int, Sequence[int], None] = None, warmup: Optional[int] = None,
             runs: Optional[int] = None, sample_ms: Optional[float] = None, min_time: Optional[float] = None,
             regimes: Optional[Sequence[str]] = None, energy: Optional[str] = None, force: Optional[bool] = None,
             passes: Optional[str] = None, progress: Optional[ProgressFn] = None) -> OpdbResult:
    """Measures every distinct layer of the models (after the passes) in isolation into the operator
    database (default ~/.cache/joule/opdb.sqlite), in the reused, fresh and cold cache regimes."""
    ms = [models] if isinstance(models, Model) else list(models)
    return OpdbResult(_joule.opdb_add(ms, **_options(
        db=db, threads=threads, warmup=warmup, runs=runs, sample_ms=sample_ms, min_time=min_time, regimes=regimes,
        energy=energy, force=force, passes=passes, progress=progress)))


def opdb_sweep(config: Optional[str] = None, stage: str = "quick", *, db: Optional[str] = None,
               threads: Union[int, Sequence[int], None] = None, warmup: Optional[int] = None,
               runs: Optional[int] = None, sample_ms: Optional[float] = None, min_time: Optional[float] = None,
               regimes: Optional[Sequence[str]] = None, energy: Optional[str] = None, force: Optional[bool] = None,
               passes: Optional[str] = None, progress: Optional[ProgressFn] = None) -> OpdbResult:
    """Measures the points of a sweep config (None: the shipped examples/opdb/default.yaml) for a
    stage (sanity, quick, full) into the operator database."""
    return OpdbResult(_joule.opdb_sweep(os.fspath(config) if config else "", stage, **_options(
        db=db, threads=threads, warmup=warmup, runs=runs, sample_ms=sample_ms, min_time=min_time, regimes=regimes,
        energy=energy, force=force, passes=passes, progress=progress)))


def predict(model: Model, *, db: Optional[str] = None, threads: Optional[int] = None, batch: Optional[int] = None,
            regime: Optional[str] = None, passes: Optional[str] = None, int8: Optional[str] = None,
            exclude_origins: Optional[Sequence[str]] = None, llc_bytes: Optional[float] = None) -> PredictResult:
    """Latency and energy predicted from the operator database, layer by layer over the plan
    `joule run` would compile (threads default 1); exclude_origins=["model:NAME"] leaves rows only
    that model's layers made out; llc_bytes: the cache regime auto's last-level cache (default: the
    one this machine reports)."""
    return PredictResult(_joule.predict(model, **_options(
        db=db, threads=threads, batch=batch, regime=regime, passes=passes, int8=int8,
        exclude_origins=exclude_origins, llc_bytes=llc_bytes)))


def profile(model: Model, inputs: Optional[Inputs] = None, *, threads: Union[int, Sequence[int], None] = None,
            warmup: Optional[int] = None, runs: Optional[int] = None, warmup_time: Optional[float] = None,
            min_time: Optional[float] = None, coverage: Optional[float] = None, energy: Optional[str] = None,
            energy_profile: Optional[str] = None, energy_window: Optional[float] = None,
            powercap_root: Optional[str] = None, layer_energy: Optional[bool] = None,
            batches: Optional[Sequence[int]] = None, input_sizes: Optional[Sequence[int]] = None,
            stage: Optional[str] = None, passes: Optional[str] = None, int8: Optional[str] = None,
            algo: Optional[Algo] = None, algo_file: Optional[str] = None, tuning_cache: Optional[str] = None,
            algo_sweep: Optional[Sequence[str]] = None, out_dir: Optional[str] = None,
            progress: Optional[ProgressFn] = None) -> ProfileResult:
    """Per-layer latency (plain and instrumented runs, attribution, % of peak), energy when asked
    (energy="auto", "rapl", "perf", "nvml" or "estimate"); a list of threads, batches, input_sizes
    or algo_sweep profiles one point each; out_dir writes the CSVs, profile.json and trace.json."""
    return ProfileResult(_joule.profile(model, **_options(
        inputs=inputs, threads=threads, warmup=warmup, runs=runs, warmup_time=warmup_time, min_time=min_time,
        coverage=coverage, energy=energy, energy_profile=energy_profile, energy_window=energy_window,
        powercap_root=powercap_root, layer_energy=layer_energy, batches=batches, input_sizes=input_sizes,
        stage=stage, passes=passes, int8=int8, algo=algo, algo_file=algo_file, tuning_cache=tuning_cache,
        algo_sweep=algo_sweep, out_dir=out_dir, progress=progress)))


def evaluate(model: Model, data: Data, *, limit: Optional[int] = None, threads: Optional[int] = None,
             passes: Optional[str] = None, int8: Optional[str] = None, algo: Optional[Algo] = None,
             mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
             scale: Optional[float] = None, resize: Optional[int] = None, input_shapes: Optional[Shapes] = None,
             progress: Optional[ProgressFn] = None) -> EvalResult:
    """Top-1/top-5 of a classifier on labelled data (default 1 thread; uint8 images are scaled by
    `scale` then normalised by mean/std, float images used as they are)."""
    return EvalResult(_joule.evaluate(model, data, **_options(
        limit=limit, threads=threads, passes=passes, int8=int8, algo=algo, mean=mean, std=std, scale=scale,
        resize=resize, input_shapes=input_shapes, progress=progress)))


def _quant(config: Optional[Config], calib: Optional[Data], calib_samples: Optional[int],
           calib_cache: Optional[str], eval: Optional[Data], eval_samples: Optional[int], threads: Optional[int],
           int8: Optional[str], mean: Optional[Sequence[float]], std: Optional[Sequence[float]],
           scale: Optional[float], resize: Optional[int], input_shapes: Optional[Shapes]) -> dict:
    return _options(config=None if config is None else _config(config), calib=calib, calib_samples=calib_samples,
                    calib_cache=calib_cache, eval=eval, eval_samples=eval_samples, threads=threads, int8=int8,
                    mean=mean, std=std, scale=scale, resize=resize, input_shapes=input_shapes)


def quantize(model: Model, config: Config, *, calib: Optional[Data] = None, calib_samples: Optional[int] = None,
             calib_cache: Optional[str] = None, eval: Optional[Data] = None, eval_samples: Optional[int] = None,
             threads: Optional[int] = None, int8: Optional[str] = None, mean: Optional[Sequence[float]] = None,
             std: Optional[Sequence[float]] = None, scale: Optional[float] = None, resize: Optional[int] = None,
             input_shapes: Optional[Shapes] = None, progress: Optional[ProgressFn] = None) -> DerivedModel:
    """The QDQ model of a config, calibrated on `calib` (default its first 128 samples); with
    `eval`, FP32 and quantized accuracy in .report. save() writes ONNX (formats ONNX cannot
    express need save(path, allow_joule_ops=True), a file only joule loads)."""
    return _joule.quantize(model, **_quant(config, calib, calib_samples, calib_cache, eval, eval_samples, threads,
                                           int8, mean, std, scale, resize, input_shapes), **_options(progress=progress))


def quant_plan(model: Model, config: Config, *, input_shapes: Optional[Shapes] = None) -> Result:
    """The per-node formats a config resolves to on this model (no calibration)."""
    return Result(_joule.quant_plan(model, config=_config(config), **_options(input_shapes=input_shapes)))


def sensitivity(model: Model, config: Config, *, calib: Optional[Data] = None, eval: Optional[Data] = None,
                mode: Optional[str] = None, variants: Optional[Sequence[str]] = None, samples: Optional[int] = None,
                out_dir: Optional[str] = None, calib_samples: Optional[int] = None, calib_cache: Optional[str] = None,
                eval_samples: Optional[int] = None, threads: Optional[int] = None, int8: Optional[str] = None,
                mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
                scale: Optional[float] = None, resize: Optional[int] = None, input_shapes: Optional[Shapes] = None,
                progress: Optional[ProgressFn] = None) -> SensitivityResult:
    """Per-layer quantization damage (SQNR, cosine, MSE, max error), mode "cumulative" (default)
    or "isolated", variants all/weights/activations; out_dir writes JSON, CSV and SVG."""
    return SensitivityResult(_joule.sensitivity(
        model, **_quant(config, calib, calib_samples, calib_cache, eval, eval_samples, threads, int8, mean, std,
                        scale, resize, input_shapes),
        **_options(mode=mode, variants=variants, samples=samples, out_dir=out_dir, progress=progress)))


def automp(model: Model, config: Config, *, calib: Data, eval: Optional[Data] = None,
           max_drop: Optional[float] = None, sqnr_target: Optional[float] = None,
           ladder: Optional[Sequence[str]] = None, strategy: Optional[str] = None, samples: Optional[int] = None,
           out_dir: Optional[str] = None, calib_samples: Optional[int] = None, calib_cache: Optional[str] = None,
           eval_samples: Optional[int] = None, threads: Optional[int] = None, int8: Optional[str] = None,
           mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
           scale: Optional[float] = None, resize: Optional[int] = None, input_shapes: Optional[Shapes] = None,
           progress: Optional[ProgressFn] = None) -> AutoMpResult:
    """Mixed precision: the most sensitive layers climb `ladder` (default int16, bf16, fp32) until
    top-1 on `eval` is within max_drop points of FP32 (default 0.1), or the final-output SQNR
    reaches sqnr_target without labels."""
    text, yaml, mp = _joule.automp(
        model, **_quant(config, calib, calib_samples, calib_cache, eval, eval_samples, threads, int8, mean, std,
                        scale, resize, input_shapes),
        **_options(max_drop=max_drop, sqnr_target=sqnr_target, ladder=ladder, strategy=strategy, samples=samples,
                   out_dir=out_dir, progress=progress))
    return AutoMpResult(text, yaml, mp)


def compare(model: Model, configs: Sequence[Config], *, calib: Data, eval: Optional[Data] = None,
            energy: Optional[str] = None, energy_profile: Optional[str] = None, runs: Optional[int] = None,
            warmup: Optional[int] = None, out_dir: Optional[str] = None, calib_samples: Optional[int] = None,
            calib_cache: Optional[str] = None, eval_samples: Optional[int] = None, threads: Optional[int] = None,
            int8: Optional[str] = None, mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
            scale: Optional[float] = None, resize: Optional[int] = None, input_shapes: Optional[Shapes] = None,
            progress: Optional[ProgressFn] = None) -> CompareResult:
    """FP32 against each config: accuracy, latency, energy per inference with its source, size."""
    return CompareResult(_joule.compare(
        model, configs=[_config(c) for c in configs],
        **_quant(None, calib, calib_samples, calib_cache, eval, eval_samples, threads, int8, mean, std, scale,
                 resize, input_shapes),
        **_options(energy=energy, energy_profile=energy_profile, runs=runs, warmup=warmup, out_dir=out_dir,
                   progress=progress)))


_TRAIN_DOC = """The training options, as joule train's flags: val, val_samples, loss (cross_entropy, mse,
    l1), optimizer (sgd, adam, adamw), lr, momentum, nesterov, weight_decay, beta1, beta2, eps,
    clip_grad_norm, schedule (constant, step, cosine), warmup_steps, step_size, gamma, min_lr,
    batch, epochs, steps, bn (train, frozen), init (keep, random), shuffle, seed, hflip,
    crop_padding, threads, algo, checkpoint, checkpoint_every, resume, trainable, frozen, keep_zeros
    (zero layer weights stay zero), mean, std, scale, resize; progress(Progress) and on_record(dict) as they happen."""


def _train_like(fn: Callable, model: Model, data: Data, options: dict,
                on_record: Optional[Callable[[dict], None]]) -> DerivedModel:
    opts = _options(**options)
    if on_record is not None:
        opts["on_record"] = lambda text: on_record(json.loads(text))
    return fn(model, data, **opts)


def finetune(model: Model, data: Data, *, rank: int = 4, target: Optional[str] = None,
             types: Optional[Sequence[str]] = None, alpha: Optional[float] = None,
             on_record: Optional[Callable[[dict], None]] = None, **training: Any) -> DerivedModel:
    """LoRA: rank-`rank` adapters on the MatMul/Gemm/Conv layers whose names match the regex
    `target` (types: which op types), only they trained, then merged into the weights. The
    report's "lora" names the adapted layers. """ + _TRAIN_DOC
    return _train_like(_joule.finetune, model, data, dict(training, rank=rank, target=target, types=types,
                                                          alpha=alpha), on_record)


def qat(model: Model, data: Data, config: Config, *, method: Optional[str] = None,
        calib: Optional[Data] = None, calib_samples: Optional[int] = None, eval: Optional[Data] = None,
        eval_samples: Optional[int] = None, int8: Optional[str] = None,
        on_record: Optional[Callable[[dict], None]] = None, **training: Any) -> DerivedModel:
    """Quantization-aware training from a quantization config: method ste (scales fixed), lsq
    (learned step size, the default), pact (learned clipping) or tqt (trained power-of-two
    thresholds); calibration on `calib` (default
    the training data); the result exported as quantize exports (ONNX QDQ for 8-bit integers).
    With `eval`, the report's "qat" has FP32, post-training and QAT top-1. """ + _TRAIN_DOC
    return _train_like(_joule.qat, model, data, dict(training, config=_config(config), method=method, calib=calib,
                                                     calib_samples=calib_samples, eval=eval,
                                                     eval_samples=eval_samples, int8=int8), on_record)


def train(model: Model, data: Data, *, val: Optional[Data] = None, val_samples: Optional[int] = None,
          loss: Optional[str] = None, teacher: Optional[Model] = None, temperature: Optional[float] = None,
          kd_alpha: Optional[float] = None, optimizer: Optional[str] = None, lr: Optional[float] = None,
          momentum: Optional[float] = None, nesterov: Optional[bool] = None, weight_decay: Optional[float] = None,
          beta1: Optional[float] = None, beta2: Optional[float] = None, eps: Optional[float] = None,
          clip_grad_norm: Optional[float] = None, schedule: Optional[str] = None, warmup_steps: Optional[int] = None,
          step_size: Optional[int] = None, gamma: Optional[float] = None, min_lr: Optional[float] = None,
          batch: Optional[int] = None, epochs: Optional[int] = None, steps: Optional[int] = None,
          bn: Optional[str] = None, init: Optional[str] = None, shuffle: Optional[bool] = None,
          seed: Optional[int] = None, hflip: Optional[bool] = None, crop_padding: Optional[int] = None,
          threads: Optional[int] = None, algo: Optional[Algo] = None, checkpoint: Optional[str] = None,
          checkpoint_every: Optional[int] = None, resume: Optional[str] = None,
          trainable: Optional[Sequence[str]] = None, frozen: Optional[Sequence[str]] = None,
          keep_zeros: Optional[bool] = None,
          mean: Optional[Sequence[float]] = None, std: Optional[Sequence[float]] = None,
          scale: Optional[float] = None, resize: Optional[int] = None, progress: Optional[ProgressFn] = None,
          on_record: Optional[Callable[[dict], None]] = None) -> DerivedModel:
    """Trains the model on joule's engine (defaults as `joule train`: cross_entropy -- or kd, the
    distillation from `teacher` at `temperature` with weight kd_alpha on the labels --, sgd lr 0.01
    momentum 0.9, batch 32, 1 epoch, BatchNorm in training mode, the model's own weights) and
    returns the trained model; its .report is a TrainResult. on_record(dict) receives one
    record per step and per epoch as they happen."""
    opts = _options(val=val, val_samples=val_samples, loss=loss, teacher=teacher, temperature=temperature,
                    kd_alpha=kd_alpha, optimizer=optimizer, lr=lr, momentum=momentum,
                    nesterov=nesterov, weight_decay=weight_decay, beta1=beta1, beta2=beta2, eps=eps,
                    clip_grad_norm=clip_grad_norm, schedule=schedule, warmup_steps=warmup_steps,
                    step_size=step_size, gamma=gamma, min_lr=min_lr, batch=batch, epochs=epochs, steps=steps, bn=bn,
                    init=init, shuffle=shuffle, seed=seed, hflip=hflip, crop_padding=crop_padding, threads=threads,
                    algo=algo, checkpoint=checkpoint, checkpoint_every=checkpoint_every, resume=resume,
                    trainable=trainable, frozen=frozen, keep_zeros=keep_zeros, mean=mean, std=std, scale=scale,
                    resize=resize, progress=progress)
    if on_record is not None:
        opts["on_record"] = lambda text: on_record(json.loads(text))
    return _joule.train(model, data, **opts)


def training_graph(model: Model, data: Data, **training: Any) -> Model:
    """The graph train() would run at every step with these options (the batch from `batch` and
    the data): inputs the data, labels and weights, outputs the loss and the gradients. Profile a
    training step with joule.profile(g, passes="none")."""
    return _joule.training_graph(model, data, **_options(**training))


def gradients(model: Model, inputs: Inputs, target: ArrayLike, *, loss: Optional[str] = None,
              bn: Optional[str] = None, trainable: Optional[Sequence[str]] = None,
              frozen: Optional[Sequence[str]] = None, threads: Optional[int] = None,
              seed: Optional[int] = None) -> dict:
    """One forward and backward pass, nothing updated: {"loss", "output", "grads": {initializer:
    array}, "running_stats"} (target: int64 labels for cross_entropy, floats for mse/l1)."""
    return _joule.gradients(model, inputs, target, **_options(loss=loss, bn=bn, trainable=trainable, frozen=frozen,
                                                              threads=threads, seed=seed))


def info(model: Model, *, input_shapes: Optional[Shapes] = None, after_passes: Optional[str] = None,
         plan: Optional[bool] = None, threads: Optional[int] = None, algo: Optional[Algo] = None,
         algo_file: Optional[str] = None, tuning_cache: Optional[str] = None) -> Result:
    """Inputs/outputs, op histogram, parameters, MACs/FLOPs per node, unsupported nodes; the
    passes' effect (after_passes="default") and the session plan (plan=True)."""
    return Result(_joule.info(model, **_options(
        input_shapes=input_shapes, after_passes=after_passes, plan=plan, threads=threads, algo=algo,
        algo_file=algo_file, tuning_cache=tuning_cache)))


def agreement(model: Model, inputs: Optional[Inputs] = None, *, threads: int = 1) -> Result:
    """A quantized (QDQ) model's simulated plan (int8="simulated") against its integer plan
    (int8="real") on one input (default: seeded random): per quantized tensor the codes that
    differ and by how many steps, the first tensor where they part, the outputs' SQNR."""
    return Result(_joule.agreement(model, inputs, threads))


def draw_graph(model: Model, out: Union[str, "os.PathLike[str]"]) -> int:
    """Writes the graph as .svg/.png/.pdf (Graphviz), .dot or .txt; returns the node count."""
    return _joule.draw_graph(model, os.fspath(out))


def energy_probe(powercap_root: str = "") -> Result:
    """Which energy source `energy="auto"` uses on this machine, and why not the others."""
    return Result(_joule.energy_probe(powercap_root))


def _report(self: DerivedModel) -> Result:
    r = Result(self._report)
    if "settings" in r and "last_step" in r:
        return TrainResult(self._report)
    return QuantizeResult(self._report) if "plan" in r else r


DerivedModel.report = property(  # type: ignore[attr-defined]
    _report, doc="How the model was made: the workflow's result (QuantizeResult, TrainResult, ...).")


class ExperimentResult(Result):
    """What experiment_run did: experiment, store, dir, points, skipped (done before), changed
    (done before but edited since: run again), done and failed now, failures ("point: error")."""

    points: int
    done: int
    failed: int
    failures: list


def experiment_run(file: Union[str, "os.PathLike[str]"], *, store: Optional[str] = None, dir: Optional[str] = None,
                   only: Optional[Sequence[str]] = None, progress: Optional[ProgressFn] = None) -> ExperimentResult:
    """Runs every point of an experiment file not yet done (docs/experiments.md), one after another in this
    process, into the results store (default DIR/results.sqlite; postgresql://... too). For points in their own
    processes, --jobs or SLURM, use `joule experiment run`."""
    return ExperimentResult(_joule.experiment_run(os.fspath(file), **_options(store=store, dir=dir, only=only,
                                                                             progress=progress)))


def experiment_status(file: Union[str, "os.PathLike[str]"], *, store: Optional[str] = None,
                      dir: Optional[str] = None) -> Result:
    """Points by status (done, failed, running, interrupted, changed, pending), as `joule experiment status`."""
    return Result(_joule.experiment_status(os.fspath(file), store or "", dir or ""))


def runs(store: str, *, experiment: Optional[str] = None, status: Optional[str] = None,
         model: Optional[str] = None) -> list:
    """The runs in a results store (without their full results: run_record has them), as dicts with
    point, params, status, metrics ("bench.latency_ms", "eval.top1", ...), wall_s, ..."""
    return json.loads(_joule.runs(store, experiment or "", status or "", model or ""))


def run_record(store: str, id: int) -> Optional[dict]:
    """One run in full: its result per step, metrics and per-layer times; None when there is none."""
    return json.loads(_joule.run_record(store, id))


def report(out: Union[str, "os.PathLike[str]"], *, store: Optional[str] = None, experiment: Optional[str] = None,
           run_dirs: Optional[Sequence[str]] = None, title: Optional[str] = None) -> str:
    """Writes the HTML report (as `joule report`) of a store's runs (or an experiment's) or of run folders."""
    return _joule.report(os.fspath(out), store or "", experiment or "", list(run_dirs or []), title or "")


def prune(model: Model, ratio: float, *, structured: bool = False, criterion: Optional[str] = None,
          scope: Optional[str] = None, seed: Optional[int] = None) -> DerivedModel:
    """The pruned model (as `joule prune`): unstructured (the smallest weights zeroed, per layer or
    scope="global") or structured (whole conv output channels removed through the graph: smaller and
    faster). .report: per-layer channels or nonzeros, parameters and FLOPs before and after."""
    return _joule.prune(model, **_options(ratio=ratio, structured=structured, criterion=criterion, scope=scope,
                                          seed=seed))


def search(model: Model, space: str, val: Data, out_dir: str, *, data: Optional[Data] = None,
           train: Optional[Data] = None,
           calib_samples: Optional[int] = None, val_samples: Optional[int] = None,
           objectives: Optional[Sequence[str]] = None, cost: Optional[str] = None, opdb: Optional[str] = None,
           algorithm: Optional[str] = None, trials: Optional[int] = None, population: Optional[int] = None,
           seed: Optional[int] = None, threads: Optional[int] = None, warmup: Optional[int] = None,
           runs: Optional[int] = None, min_time: Optional[float] = None, energy: Optional[str] = None,
           store: Optional[str] = None, name: Optional[str] = None, export: Optional[Sequence[int]] = None,
           progress: Optional[ProgressFn] = None) -> Result:
    """Multi-objective search over per-layer precision and structured pruning (as `joule search`):
    `space` is the space's YAML file or text, `val` the validation data (labelled: top-1 %, else the
    output SQNR against FP32), `data` the calibration samples, `train` the labelled data the space's
    finetune trains pruned trials on. Every trial is measured on the engine
    (or predicted with cost="predicted"), kept in out_dir/trials.jsonl (a second call resumes) and
    the front written to out_dir (front.csv/json/svg, front/N/*.yaml). Returns search.json."""
    return Result(_joule.search(model, str(space), val, str(out_dir), **_options(
        data=data, train=train, calib_samples=calib_samples, val_samples=val_samples,
        objectives=list(objectives) if objectives is not None else None, cost=cost, opdb=opdb,
        algorithm=algorithm, trials=trials, population=population, seed=seed, threads=threads, warmup=warmup,
        runs=runs, min_time=min_time, energy=energy, store=store, name=name, export=list(export) if export is not None else None,
        progress=progress)))


def prune_sensitivity(model: Model, *, ratios: Optional[Sequence[float]] = None, structured: Optional[bool] = None,
                      criterion: Optional[str] = None, data: Optional[Data] = None, samples: Optional[int] = None,
                      threads: Optional[int] = None, out_dir: Optional[str] = None,
                      progress: Optional[ProgressFn] = None) -> Result:
    """Each prunable layer pruned alone at each ratio: the model's output SQNR against the unpruned
    model (and top-1 with labelled data), as `joule prune --sensitivity`."""
    return Result(_joule.prune_sensitivity(model, **_options(
        ratios=list(ratios) if ratios is not None else None, structured=structured, criterion=criterion,
        data=data, samples=samples, threads=threads, out_dir=out_dir,
        progress=progress)))
