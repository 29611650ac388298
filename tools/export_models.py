#!/usr/bin/python3
"""Export real network architectures to ONNX as test fixtures for joule.

Every model gets seeded random weights (nothing is downloaded), non-trivial
BatchNorm statistics, a seeded random input and PyTorch's output for that
input.  For each model NAME the script writes:

    DIR/NAME/model.onnx   the exported graph (static shapes, batch 1)
    DIR/NAME/input.npy    float32 input, seeded random normal
    DIR/NAME/output.npy   float32 PyTorch output for input.npy (eval mode)
    DIR/NAME/meta.json    opset, input/output names and shapes, versions, ops

After a successful export that covers all default models it writes
DIR/.stamp containing the sha256 (hex, no newline) of this script.

Usage:
    /usr/bin/python3 tools/export_models.py --out DIR [--models a,b,...] [--list]
"""

import argparse
import collections
import hashlib
import json
import os
import sys
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

SEED = 0
INPUT_SEED = 1234


class TransformerEncoderClassifier(nn.Module):
    """Small text-style encoder on float input [batch, seq, d_model]."""

    def __init__(self, d_model=128, nhead=4, dim_feedforward=256, num_layers=3,
                 num_classes=10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward,
            dropout=0.1, activation="gelu", batch_first=True)
        # enable_nested_tensor=False: the nested-tensor fast path cannot be
        # exported to ONNX.
        self.encoder = nn.TransformerEncoder(layer, num_layers=num_layers,
                                             enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)
        # nn.TransformerEncoder deep-copies `layer`, so every layer starts with
        # identical weights.  Re-initialise each one so the layers differ (a
        # layer-ordering bug must not be able to hide).
        for enc_layer in self.encoder.layers:
            enc_layer.self_attn._reset_parameters()
            enc_layer.self_attn.out_proj.reset_parameters()
            enc_layer.linear1.reset_parameters()
            enc_layer.linear2.reset_parameters()

    def forward(self, x):
        x = self.encoder(x)
        x = self.norm(x)
        return self.head(x.mean(dim=1))


class RecurrentClassifier(nn.Module):
    """A sequence classifier on float input [batch, seq, features]: torch.nn.LSTM, GRU or RNN
    (batch_first), the last step's output through a Linear head."""

    def __init__(self, kind, layers, bidirectional, features, hidden, num_classes=10):
        super().__init__()
        self.rnn = getattr(nn, kind)(features, hidden, num_layers=layers, batch_first=True,
                                     bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), num_classes)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def make_vit_small():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=64, patch_size=8, num_layers=4,
                             num_heads=4, hidden_dim=128, mlp_dim=256,
                             num_classes=10)


# name -> (constructor, input shape, opset)
MODELS = collections.OrderedDict([
    ("resnet18", (lambda: torchvision.models.resnet18(weights=None), (1, 3, 224, 224), 13)),
    ("mobilenet_v2", (lambda: torchvision.models.mobilenet_v2(weights=None), (1, 3, 224, 224), 13)),
    ("mobilenet_v3_small", (lambda: torchvision.models.mobilenet_v3_small(weights=None), (1, 3, 224, 224), 13)),
    ("vit_small", (make_vit_small, (1, 3, 64, 64), 14)),
    ("transformer_encoder", (TransformerEncoderClassifier, (1, 32, 128), 17)),
    # Sequence classifiers, batch 3 (the recurrent kernels' batch paths).
    ("lstm_bi2", (lambda: RecurrentClassifier("LSTM", 2, True, 32, 48), (3, 20, 32), 13)),
    ("gru2", (lambda: RecurrentClassifier("GRU", 2, False, 32, 48), (3, 20, 32), 13)),
    ("rnn_bi", (lambda: RecurrentClassifier("RNN", 1, True, 32, 48), (3, 20, 32), 13)),
    # Not exported by default (large); used for benchmarks.
    ("resnet50", (lambda: torchvision.models.resnet50(weights=None), (1, 3, 224, 224), 13)),
    ("vit_b_16", (lambda: torchvision.models.vit_b_16(weights=None), (1, 3, 224, 224), 14)),
])
DEFAULT_MODELS = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "vit_small",
                  "transformer_encoder", "lstm_bi2", "gru2", "rnn_bi"]


def reinit_zero_linears(model):
    """torchvision zero-initialises some classifier heads (e.g. ViT's
    heads.head), which would make the output identically zero.  Give any
    all-zero Linear layer nn.Linear's default random init instead."""
    for m in model.modules():
        if isinstance(m, nn.Linear) and not torch.any(m.weight):
            m.reset_parameters()


def randomize_zero_params(model):
    """Replace any parameter that is still all zeros (biases, ViT's class
    token, ...) by small random values, so a dropped bias cannot hide."""
    with torch.no_grad():
        for p in model.parameters():
            if not torch.any(p):
                p.copy_(torch.randn_like(p) * 0.02)


def randomize_norms(model):
    """Give every BatchNorm non-trivial statistics and every BatchNorm /
    LayerNorm a non-trivial affine transform, so a broken norm path shows."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                m.weight.uniform_(0.5, 1.5)
                m.bias.copy_(torch.randn_like(m.bias) * 0.1)
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn_like(m.running_mean) * 0.1)
                m.running_var.uniform_(0.5, 2.0)
                if m.weight is not None:
                    m.weight.uniform_(0.5, 1.5)
                if m.bias is not None:
                    m.bias.copy_(torch.randn_like(m.bias) * 0.1)


def op_histogram(onnx_model):
    counts = collections.Counter(node.op_type for node in onnx_model.graph.node)
    return dict(sorted(counts.items()))


def value_info_shape(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in value_info.type.tensor_type.shape.dim]


def export_one(name, out_dir):
    make, input_shape, opset = MODELS[name]
    torch.manual_seed(SEED)
    model = make()
    reinit_zero_linears(model)
    randomize_zero_params(model)
    randomize_norms(model)
    model.eval()

    gen = torch.Generator().manual_seed(INPUT_SEED)
    x = torch.randn(*input_shape, generator=gen, dtype=torch.float32)

    # Reference output.  Run with autograd enabled (parameters require grad):
    # this keeps torch 1.13's native "fast path" of TransformerEncoderLayer /
    # MultiheadAttention disabled, so the reference follows the same regular
    # code path that the ONNX exporter traces.
    y = model(x).detach()
    y_np = y.numpy().astype(np.float32)
    if not np.all(np.isfinite(y_np)):
        raise RuntimeError(f"{name}: output contains NaN/Inf")
    if float(y_np.std()) <= 1e-3:
        raise RuntimeError(f"{name}: output is near-constant (std={y_np.std():.3g})")

    model_dir = os.path.join(out_dir, name)
    os.makedirs(model_dir, exist_ok=True)
    onnx_path = os.path.join(model_dir, "model.onnx")
    torch.onnx.export(model, (x,), onnx_path,
                      opset_version=opset,
                      input_names=["input"], output_names=["output"],
                      do_constant_folding=True,
                      # PRESERVE with the model in eval mode exports inference
                      # graphs like EVAL does, but skips the exporter's
                      # Conv+BatchNorm fusion, so BatchNormalization nodes (with
                      # the non-trivial statistics set above) stay in the graph.
                      training=torch.onnx.TrainingMode.PRESERVE)

    onnx_model = onnx.load(onnx_path)
    onnx.checker.check_model(onnx_model)
    hist = op_histogram(onnx_model)
    # These would mean a torch-internal fast path leaked into the graph.
    bad = [op for op in hist if op.startswith("ATen") or op == "PythonOp"]
    if bad:
        raise RuntimeError(f"{name}: non-standard ops in export: {bad}")
    # The exporter merges initializers with identical contents and links them
    # with Identity nodes; that would mean weights are not random enough.
    init_names = {t.name for t in onnx_model.graph.initializer}
    dups = [n.output[0] for n in onnx_model.graph.node
            if n.op_type == "Identity" and n.input[0] in init_names]
    if dups:
        raise RuntimeError(f"{name}: duplicated weights in export: {dups[:5]}")

    np.save(os.path.join(model_dir, "input.npy"), x.numpy().astype(np.float32))
    np.save(os.path.join(model_dir, "output.npy"), y_np)

    meta = {
        "model": name,
        "opset": opset,
        "inputs": [{"name": i.name, "shape": value_info_shape(i), "dtype": "float32"}
                   for i in onnx_model.graph.input],
        "outputs": [{"name": o.name, "shape": value_info_shape(o), "dtype": "float32"}
                    for o in onnx_model.graph.output],
        "torch_version": torch.__version__,
        "torchvision_version": torchvision.__version__,
        "onnx_version": onnx.__version__,
        "seed": SEED,
        "input_seed": INPUT_SEED,
        "output_std": float(y_np.std()),
        "num_nodes": len(onnx_model.graph.node),
        "op_histogram": hist,
    }
    with open(os.path.join(model_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return hist


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="output directory")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="comma-separated model names (default: %(default)s)")
    parser.add_argument("--list", action="store_true", help="list available models and exit")
    args = parser.parse_args()

    if args.list:
        for name, (_, shape, opset) in MODELS.items():
            tag = " (default)" if name in DEFAULT_MODELS else ""
            print(f"{name}: input {list(shape)}, opset {opset}{tag}")
        return 0
    if not args.out:
        parser.error("--out is required")

    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s): {', '.join(unknown)}; use --list")

    # Expected, harmless exporter noise: the constant-folding advice only
    # applies to models in training mode (ours are in eval mode), and the
    # tracer warnings come from shape asserts in torchvision's ViT.
    warnings.filterwarnings("ignore", message="It is recommended that constant folding")
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    os.makedirs(args.out, exist_ok=True)
    stamp_path = os.path.join(args.out, ".stamp")
    if os.path.exists(stamp_path):
        os.remove(stamp_path)  # stale until this run succeeds

    all_ops = set()
    for name in names:
        t0 = time.time()
        hist = export_one(name, args.out)
        all_ops.update(hist)
        ops = ", ".join(f"{op}: {n}" for op, n in hist.items())
        print(f"{name} ({time.time() - t0:.1f}s): {ops}", flush=True)
    print(f"distinct ops ({len(all_ops)}): {', '.join(sorted(all_ops))}")

    if all(n in names for n in DEFAULT_MODELS):
        with open(os.path.abspath(__file__), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(stamp_path, "w") as f:
            f.write(digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
