#!/usr/bin/python3
"""A trained ImageNet-style CNN for the search benchmark: torchvision's ResNet-18 (10 classes)
trained briefly on Fashion-MNIST images padded to 32x32 and repeated to 3 channels, exported
as ONNX (opset 13, batch 1). Seeded random weights make every channel matter equally, so a
search judged on accuracy needs a trained network; no weights can be downloaded here.

Writes into OUT (default ~/.cache/joule/zoo_trained/resnet18_fashion32/):
    model.onnx                 input "input" [1,3,32,32], output "logits" [1,10]
    calib.npy                  512 training images (normalised) for calibration
    train.npy, train_labels.npy  8000 training images and labels (fine-tuning in searches)
    val.npy, val_labels.npy    the first N test images and their labels
    meta.json                  training settings and PyTorch's test accuracy on val

    /usr/bin/python3 tools/train_zoo_resnet18.py [--train 60000] [--epochs 2] [--val 2000]
"""
import argparse, gzip, json, os, time
import numpy as np
import torch
import torch.nn as nn
import torchvision

FASHION = "/usr/share/datasets/fashion-mnist"


def idx(name, images):
    with gzip.open(os.path.join(FASHION, name)) as f:
        b = f.read()
    return np.frombuffer(b, np.uint8, offset=16 if images else 8)


def prepare(x):
    x = x.reshape(-1, 28, 28).astype(np.float32) / 255.0
    x = np.pad(x, ((0, 0), (2, 2), (2, 2)))
    x = (x - 0.286) / 0.353
    return np.ascontiguousarray(np.repeat(x[:, None], 3, axis=1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=60000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--val", type=int, default=2000)
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/joule/zoo_trained/resnet18_fashion32"))
    ap.add_argument("--data-only", action="store_true", help="write the .npy files only (the model is there)")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count() or 1)
    xtr = prepare(idx("train-images-idx3-ubyte.gz", True))[: a.train]
    ytr = idx("train-labels-idx1-ubyte.gz", False)[: a.train].astype(np.int64)
    xte = prepare(idx("t10k-images-idx3-ubyte.gz", True))[: a.val]
    yte = idx("t10k-labels-idx1-ubyte.gz", False)[: a.val].astype(np.int64)
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "calib.npy"), xtr[:512])
    np.save(os.path.join(a.out, "train.npy"), xtr[:8000])
    np.save(os.path.join(a.out, "train_labels.npy"), ytr[:8000])
    np.save(os.path.join(a.out, "val.npy"), xte)
    np.save(os.path.join(a.out, "val_labels.npy"), yte)
    if a.data_only:
        return
    m = torchvision.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    steps = a.epochs * (len(xtr) // 64)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=steps)
    t0 = time.time()
    m.train()
    for e in range(a.epochs):
        perm = np.random.default_rng(e).permutation(len(xtr))
        for i in range(len(xtr) // 64):
            b = perm[i * 64:(i + 1) * 64]
            loss = nn.functional.cross_entropy(m(torch.from_numpy(xtr[b])), torch.from_numpy(ytr[b]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    m.eval()
    with torch.no_grad():
        acc = float((m(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean())
    torch.onnx.export(m, torch.zeros(1, 3, 32, 32), os.path.join(a.out, "model.onnx"), opset_version=13,
                      input_names=["input"], output_names=["logits"])
    json.dump({"arch": "torchvision resnet18(num_classes=10)", "input": [1, 3, 32, 32], "train_images": a.train,
               "epochs": a.epochs, "seconds": time.time() - t0, "torch_top1_val": acc, "val": a.val},
              open(os.path.join(a.out, "meta.json"), "w"), indent=2)
    print(f"resnet18 on Fashion-MNIST 32x32: {acc * 100:.2f} % on {a.val} test images ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
