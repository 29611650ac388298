#!/usr/bin/python3
"""A zoo of torchvision architectures for checks beyond the five models of tests/models/.

    export  DIR               each architecture with seeded random weights (no all-zero layer,
                              norms made non-trivial) as DIR/NAME/model.onnx, with a seeded input
                              and PyTorch's output (input.npy, output.npy); existing ones are kept
    check   DIR JOULE [B]     for each model: joule's output against PyTorch's (max |diff| / max
                              |torch|, same top-1), and the median of joule bench at 1 thread;
                              with a second joule binary B, both timed in alternating processes
                              (the ratio B / JOULE is what a change did)

    /usr/bin/python3 tools/zoo.py export ~/.cache/joule/zoo
    /usr/bin/python3 tools/zoo.py check ~/.cache/joule/zoo build/joule [OTHER_JOULE]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# name -> input size; small and mid-sized ImageNet classifiers across the families.
ZOO = {
    "resnet18": 224, "resnet50": 224, "resnext50_32x4d": 224, "mobilenet_v2": 224, "mobilenet_v3_small": 224,
    "mobilenet_v3_large": 224, "efficientnet_b0": 224, "regnet_x_400mf": 224, "regnet_y_400mf": 224,
    "mnasnet0_5": 224, "shufflenet_v2_x0_5": 224, "squeezenet1_0": 224, "densenet121": 224, "googlenet": 224,
    "alexnet": 224, "vgg11": 224, "convnext_tiny": 224, "vit_b_16": 224,
}


def export(out):
    import torch
    import torchvision
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import export_models as em
    torch.set_num_threads(2)
    for name, size in ZOO.items():
        d = os.path.join(out, name)
        if os.path.exists(os.path.join(d, "output.npy")):
            continue
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(0)
        kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
        net = getattr(torchvision.models, name)(weights=None, **kw)
        # No all-zero head (ViT's would make every logit 0), biases or norms that hide a bug.
        em.reinit_zero_linears(net)
        em.randomize_zero_params(net)
        em.randomize_norms(net)
        net.eval()
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            y = net(x)
        torch.onnx.export(net, x, os.path.join(d, "model.onnx"), opset_version=17, input_names=["input"],
                          output_names=["output"])
        np.save(os.path.join(d, "input.npy"), x.numpy())
        np.save(os.path.join(d, "output.npy"), y.numpy())
        print(f"exported {name}", flush=True)


def bench(joule, model, runs):
    r = subprocess.run([joule, "bench", model, "--threads", "1", "--runs", str(runs), "--warmup", "2", "--format", "json"],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["latency_ms"]["median"]


def check(out, joule, other=None):
    tmp = tempfile.mkdtemp()
    print(f"{'model':<20} {'max rel err':>12} {'top-1':>6} {'joule ms':>10}" + (f" {'other ms':>10} {'other/joule':>12}" if other else ""))
    worst = 0.0
    for name in ZOO:
        d = os.path.join(out, name)
        model = os.path.join(d, "model.onnx")
        if not os.path.exists(model):
            continue
        o = os.path.join(tmp, name)
        subprocess.run([joule, "run", model, "-i", os.path.join(d, "input.npy"), "-o", o, "--threads", "1"],
                       capture_output=True, check=True)
        got = np.load(os.path.join(o, os.listdir(o)[0]))
        want = np.load(os.path.join(d, "output.npy"))
        err = float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-6))
        worst = max(worst, err)
        same = int(np.argmax(got) == np.argmax(want))
        runs = 3 if name in ("vit_b_16", "vgg11", "convnext_tiny", "densenet121", "resnext50_32x4d") else 10
        mine, theirs = [], []
        for _ in range(3):  # alternating processes, best of three
            mine.append(bench(joule, model, runs))
            if other:
                theirs.append(bench(other, model, runs))
        line = f"{name:<20} {err:>12.2e} {'ok' if same else 'DIFF':>6} {min(mine):>10.3f}"
        if other:
            line += f" {min(theirs):>10.3f} {min(theirs) / min(mine):>11.2f}x"
        print(line, flush=True)
    print(f"worst max rel err {worst:.2e}")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "export":
        export(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        sys.exit(__doc__)
