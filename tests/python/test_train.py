"""Training on joule's engine against PyTorch autograd: the gradient of every weight of small
exported modules, the loss trajectory of a ResNet-style and a transformer-style model over 5 SGD
steps (BatchNorm frozen and in training mode), and runs killed and resumed from checkpoints."""
import json
import os
import signal
import subprocess

import numpy as np
import pytest

import joule
from conftest import JOULE_BIN, MODELS, SAMPLES

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def export(module, x, path, opset=13):
    """ONNX of `module` with its parameters as named initializers and BatchNorm kept."""
    module.eval()
    torch.onnx.export(module, x, str(path), input_names=["input"], output_names=["output"], opset_version=opset,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
    return joule.load(path)


def randomise_bn(module, gen):
    """Non-trivial running statistics and affine parameters for every BatchNorm, and no two
    parameters alike (the ONNX exporter would share one initializer between equal tensors,
    such as the LayerNorms' initial ones)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


class ConvNet(nn.Module):
    """Conv (groups, depthwise, strides, dilation), BN, ReLU, pools, residual, Linear."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2, bias=False)
        self.b2 = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8, bias=False)
        self.c3 = nn.Conv2d(8, 16, 1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.max_pool2d(y, 2)
        y = F.relu(y + self.b2(self.c2(y)))
        y = F.hardswish(self.dw(y))
        y = F.avg_pool2d(F.leaky_relu(self.c3(y), 0.1), 2)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class TinyTransformer(nn.Module):
    """Patch embedding, one encoder layer (LayerNorm, attention, GELU MLP), mean pool, head."""

    def __init__(self, dim=16, heads=2, classes=4):
        super().__init__()
        self.embed = nn.Conv2d(1, dim, 4, stride=4)
        self.layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=32, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=True)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.layer(t)).mean(1))


def torch_grads(module, x, y, bn_train):
    module.train(bn_train)
    module.zero_grad()
    out = module(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    return loss.item(), {n: p.grad.numpy().copy() for n, p in module.named_parameters()}


@pytest.mark.parametrize("bn", ["train", "frozen"])
def test_gradients_match_torch_convnet(tmp_path, bn):
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    net = ConvNet()
    randomise_bn(net, gen)
    x = torch.randn(4, 3, 16, 16, generator=gen)
    y = torch.tensor([0, 3, 1, 4])
    m = export(net, x, tmp_path / "convnet.onnx")
    loss, want = torch_grads(net, x, y, bn == "train")
    got = joule.gradients(m, x.numpy(), y.numpy(), bn=bn)
    assert got["loss"] == pytest.approx(loss, rel=1e-5)
    expected = {k for k in want if not (bn == "frozen" and False)}
    assert set(got["grads"]) == expected, set(got["grads"]) ^ expected
    scale = max(np.abs(g).max() for g in want.values())  # a conv bias before BatchNorm has only noise
    for name, g in want.items():
        np.testing.assert_allclose(got["grads"][name], g, rtol=1e-4, atol=1e-6 * scale, err_msg=name)
    if bn == "train":  # running statistics updated as PyTorch does
        for name, t in net.state_dict().items():
            if "running" in name:
                np.testing.assert_allclose(got["running_stats"][name], t.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_gradients_match_torch_transformer(tmp_path):
    gen = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    net = TinyTransformer()
    randomise_bn(net, gen)
    x = torch.randn(3, 1, 16, 16, generator=gen)
    y = torch.tensor([0, 3, 1])
    m = export(net, x, tmp_path / "transformer.onnx", opset=17)
    loss, want = torch_grads(net, x, y, True)
    got = joule.gradients(m, x.numpy(), y.numpy())
    assert got["loss"] == pytest.approx(loss, rel=1e-5)
    assert set(got["grads"]) == set(want)
    scale = max(np.abs(g).max() for g in want.values())
    for name, g in want.items():
        np.testing.assert_allclose(got["grads"][name], g, rtol=1e-4, atol=1e-6 * scale, err_msg=name)


def sgd_trajectory(net, xs, ys, steps, lr, bn_train):
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    losses = []
    for s in range(steps):
        net.train(bn_train)
        loss = F.cross_entropy(net(xs[s]), ys[s])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("arch,bn", [("resnet", "train"), ("resnet", "frozen"), ("transformer", "train")])
def test_loss_trajectory_matches_torch(tmp_path, arch, bn):
    gen = torch.Generator().manual_seed(2)
    torch.manual_seed(2)
    net = ConvNet() if arch == "resnet" else TinyTransformer()
    shape = (4, 3, 16, 16) if arch == "resnet" else (4, 1, 16, 16)
    randomise_bn(net, gen)
    steps, batch = 5, shape[0]
    xs = torch.randn(steps * batch, *shape[1:], generator=gen)
    classes = 5 if arch == "resnet" else 4
    ys = torch.randint(0, classes, (steps * batch,), generator=gen)
    m = export(net, xs[:batch], tmp_path / f"{arch}.onnx", opset=13 if arch == "resnet" else 17)
    want = sgd_trajectory(net, xs.split(batch), ys.split(batch), steps, 0.05, bn == "train")
    records = []
    joule.train(m, (xs.numpy(), ys.numpy()), batch=batch, steps=steps, lr=0.05, momentum=0.9, weight_decay=1e-4,
                shuffle=False, bn=bn, threads=1, on_record=records.append)
    got = [r["loss"] for r in records if r["event"] == "step"]
    np.testing.assert_allclose(got, want, rtol=1e-3)


def test_killed_run_resumes_to_the_same_weights(tmp_path):
    """A `joule train` process killed (SIGKILL) after a checkpoint, resumed, ends with the weights
    of the run that was never interrupted."""
    # 40 steps: the kill lands a few steps after the checkpoint that was read, never after the last.
    common = [JOULE_BIN, "train", "default", "--data", str(SAMPLES), "--batch", "4", "--steps", "40", "--lr", "0.02",
              "--threads", "1", "--seed", "3", "--hflip", "--crop-padding", "2", "--format", "json"]
    whole = tmp_path / "whole.onnx"
    subprocess.run(common + ["-o", str(whole)], check=True, capture_output=True)
    ckpt = tmp_path / "run.ckpt"
    p = subprocess.Popen(common + ["-o", str(tmp_path / "never.onnx"), "--checkpoint", str(ckpt),
                                   "--checkpoint-every", "1"], stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if json.loads(line).get("step") == 4:  # the checkpoint after step 5 exists
            p.send_signal(signal.SIGKILL)
            break
    p.wait()
    assert p.returncode == -signal.SIGKILL and not (tmp_path / "never.onnx").exists()
    resumed = tmp_path / "resumed.onnx"
    r = subprocess.run(common + ["-o", str(resumed), "--resume", str(ckpt)], check=True, capture_output=True, text=True)
    done = json.loads(r.stdout.strip().splitlines()[-1])
    # At least the checkpoint after step 5; the process may have written later ones before SIGKILL landed.
    assert 5 <= done["summary"]["resumed_at_step"] < 40
    a, b = joule.load(whole), joule.load(resumed)
    x = np.load(SAMPLES)[:1]
    np.testing.assert_array_equal(joule.Session(a, threads=1).run(x)["logits"], joule.Session(b, threads=1).run(x)["logits"])
    assert a.to_bytes() == b.to_bytes()


def test_resume_refuses_another_run(tmp_path):
    ckpt = tmp_path / "c.ckpt"
    m = joule.load("default")
    data = (np.load(SAMPLES), np.load(MODELS / "fashion_cnn_sample_labels.npy"))
    joule.train(m, data, batch=4, steps=2, checkpoint=str(ckpt), threads=1)
    with pytest.raises(joule.BadInput, match="batch"):
        joule.train(m, data, batch=8, steps=2, resume=str(ckpt), threads=1)
    (tmp_path / "bad.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(joule.BadInput, match="not a joule checkpoint"):
        joule.train(m, data, batch=4, steps=2, resume=str(tmp_path / "bad.ckpt"), threads=1)


def test_train_reports_epochs_and_the_model_improves():
    m = joule.load("default")
    images, labels = np.load(SAMPLES), np.load(MODELS / "fashion_cnn_sample_labels.npy")
    # Labels permuted: the pretrained model is wrong on all 16; a few epochs of training fix it.
    shifted = (labels + 1) % 10
    before = joule.evaluate(m, (images, shifted)).top1
    t = joule.train(m, (images, shifted), batch=8, epochs=20, lr=0.05, val=(images, shifted), threads=1)
    r = t.report
    assert isinstance(r, joule.TrainResult) and len(r.epochs) == 20
    assert r.epochs[-1]["loss"] < r.epochs[0]["loss"]
    assert r.epochs[-1]["val_top1"] > before + 0.5
    assert joule.evaluate(t, (images, shifted)).top1 == r.epochs[-1]["val_top1"]


def test_lora_finetune_trains_adapters_only(tmp_path):
    gen = torch.Generator().manual_seed(4)
    torch.manual_seed(4)
    net = TinyTransformer()
    randomise_bn(net, gen)
    x = torch.randn(32, 1, 16, 16, generator=gen).numpy()
    y = torch.randint(0, 4, (32,), generator=gen).numpy()
    m = export(net, torch.from_numpy(x[:8]), tmp_path / "t.onnx", opset=17)
    t = joule.finetune(m, (x, y), rank=2, batch=8, epochs=4, lr=0.05, threads=1)
    r = t.report
    assert r.lora["rank"] == 2 and len(r.lora["layers"]) >= 4, r.lora
    assert 0 < r.trained_values < r.model_values
    assert r.epochs[-1]["loss"] < r.epochs[0]["loss"]
    assert t.num_nodes == joule.load(tmp_path / "t.onnx").num_nodes  # merged: the model's own graph
    with pytest.raises(joule.BadInput, match="no node to adapt"):
        joule.finetune(m, (x, y), rank=2, target="no such layer", steps=1, batch=8)


def test_qat_exports_an_integer_model():
    from conftest import VNNI, W8A8
    m = joule.load("default")
    data = (np.load(SAMPLES), np.load(MODELS / "fashion_cnn_sample_labels.npy"))
    q = joule.qat(m, data, W8A8, steps=2, batch=8, optimizer="adamw", lr=1e-4, eval=data, threads=1)
    r = q.report
    assert isinstance(r, joule.TrainResult) and r.qat["method"] == "lsq"
    assert r.qat["fp32_top1"] == 1.0 and 0.5 <= r.qat["qat_top1"] <= 1.0
    ops = {h["op"]: h["count"] for h in joule.info(q).op_histogram}
    assert ops.get("QuantizeLinear") == 6 and ops.get("DequantizeLinear") == 12 and "FakeQuant" not in ops
    assert joule.evaluate(q, data).top1 == r.qat["qat_top1"]
    plan = joule.Session(q, threads=1).plan
    # oneDNN's int8 kernels where the CPU has VNNI; without it they would saturate 16-bit pair
    # sums, and the exact emulated kernel runs the integer plan.
    fast = "onednn_int8" if VNNI else "emulated"
    assert plan.algorithms.get(fast, 0) >= 5, plan.algorithms


def test_distillation_trajectory_matches_torch(tmp_path):
    gen = torch.Generator().manual_seed(5)
    torch.manual_seed(5)
    student, teacher = ConvNet(), ConvNet()
    randomise_bn(student, gen)
    randomise_bn(teacher, gen)
    steps, batch, T, alpha = 3, 4, 3.0, 0.3
    xs = torch.randn(steps * batch, 3, 16, 16, generator=gen)
    ys = torch.randint(0, 5, (steps * batch,), generator=gen)
    ms = export(student, xs[:batch], tmp_path / "student.onnx")
    mt = export(teacher, xs[:batch], tmp_path / "teacher.onnx")
    teacher.eval()
    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
    want = []
    for s in range(steps):
        student.train(False)  # BatchNorm frozen in both
        x, y = xs[s * batch:(s + 1) * batch], ys[s * batch:(s + 1) * batch]
        out = student(x)
        with torch.no_grad():
            t = teacher(x)
        kl = F.kl_div(F.log_softmax(out / T, 1), F.softmax(t / T, 1), reduction="batchmean")
        loss = alpha * F.cross_entropy(out, y) + (1 - alpha) * T * T * kl
        opt.zero_grad()
        loss.backward()
        opt.step()
        want.append(loss.item())
    records = []
    joule.train(ms, (xs.numpy(), ys.numpy()), loss="kd", teacher=mt, temperature=T, kd_alpha=alpha, batch=batch,
                steps=steps, lr=0.05, momentum=0.9, shuffle=False, bn="frozen", threads=1, on_record=records.append)
    np.testing.assert_allclose([r["loss"] for r in records if r["event"] == "step"], want, rtol=1e-3)


def test_a_training_step_profiles_like_any_model():
    m = joule.load("default")
    data = (np.load(SAMPLES), np.load(MODELS / "fashion_cnn_sample_labels.npy"))
    g = joule.training_graph(m, data, batch=8)
    assert "labels" in [i["name"] for i in g.inputs] and g.inputs[0]["shape"] == [8, 1, 28, 28]
    p = joule.profile(g, threads=1, runs=2, passes="none")
    algos = {layer["op"]: layer["algorithm"] for layer in p.layers}
    assert algos["ConvGradData"] == "onednn" and algos["ConvGradWeight"] == "onednn" and algos["Conv"] == "onednn"
