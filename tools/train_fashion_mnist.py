#!/usr/bin/python3
"""Train joule's bundled example model: a small residual CNN on Fashion-MNIST.

Reads Debian's dataset-fashion-mnist (gzipped IDX files), trains on CPU and
writes, by default into models/ next to this tools/ directory:

    fashion_cnn.onnx               opset 13, input "input" [1,1,28,28] float32,
                                   output "logits" [1,10] float32
    fashion_cnn.json               accuracy, normalisation, shapes, classes, ...
    fashion_cnn_sample.npy         first 16 normalised test images [16,1,28,28] float32
    fashion_cnn_sample_labels.npy  their labels [16] int64
    fashion_cnn_sample_logits.npy  PyTorch's logits for them [16,10] float32

Usage:
    /usr/bin/python3 tools/train_fashion_mnist.py [--epochs N] [--out DIR]
"""

import argparse
import datetime
import gzip
import json
import os
import sys
import time
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN = 0.2860
STD = 0.3530
SEED = 0
OPSET = 13
CLASS_NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
               "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
NUM_SAMPLES = 16


# --------------------------------------------------------------------------
# Data

IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4",
              0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path):
    """Read a (gzipped) IDX file into a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: bad IDX magic")
    dtype = np.dtype(IDX_DTYPES[data[2]])
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    offset = 4 + 4 * ndim
    arr = np.frombuffer(data, dtype=dtype, offset=offset, count=int(np.prod(shape)))
    return arr.reshape(shape)


def load_split(split):
    images = read_idx(os.path.join(DATA_DIR, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(DATA_DIR, f"{split}-labels-idx1-ubyte.gz"))
    assert images.shape[0] == labels.shape[0]
    return images, labels


def normalise(images_u8):
    """uint8 [N,28,28] -> float32 [N,1,28,28], (x/255 - MEAN) / STD."""
    x = images_u8.astype(np.float32) / 255.0
    x = (x - np.float32(MEAN)) / np.float32(STD)
    return x[:, None, :, :].astype(np.float32)


# --------------------------------------------------------------------------
# Model

def conv_bn_relu(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class BasicBlock(nn.Module):
    """ResNet basic block: two 3x3 Conv+BN, identity shortcut, Add, ReLU."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


class FashionCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn_relu(1, 32),        # 32x28x28
            nn.MaxPool2d(2),            # 32x14x14
            conv_bn_relu(32, 64),       # 64x14x14
            # count_include_pad=False: same result without padding, but torch
            # would otherwise emit a no-op Pad node before AveragePool.
            nn.AvgPool2d(2, count_include_pad=False),  # 64x7x7
            BasicBlock(64),
            conv_bn_relu(64, 128),      # 128x7x7
            nn.AdaptiveAvgPool2d(1),    # 128x1x1 (GlobalAveragePool)
            nn.Flatten(),
        )
        self.classifier = nn.Linear(128, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x))


# --------------------------------------------------------------------------
# Training

def evaluate(model, x, y, batch_size=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch_size):
            logits = model(x[i:i + batch_size])
            correct += (logits.argmax(1) == y[i:i + batch_size]).sum().item()
    return correct / len(x)


def train(model, x_train, y_train, x_test, y_test, epochs, batch_size, lr):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=5e-4)
    steps_per_epoch = (len(x_train) + batch_size - 1) // batch_size
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, epochs=epochs, steps_per_epoch=steps_per_epoch)
    gen = torch.Generator().manual_seed(SEED)
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        t0 = time.time()
        perm = torch.randperm(len(x_train), generator=gen)
        total_loss = 0.0
        for i in range(0, len(x_train), batch_size):
            idx = perm[i:i + batch_size]
            xb, yb = x_train[idx], y_train[idx]
            # Augmentation: horizontal flip of a random half of the batch.
            flip = torch.rand(len(xb), generator=gen) < 0.5
            xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            total_loss += loss.item() * len(idx)
        train_time = time.time() - t0
        acc = evaluate(model, x_test, y_test)
        history.append({"epoch": epoch, "loss": total_loss / len(x_train),
                        "test_accuracy": acc, "seconds": round(train_time, 1)})
        print(f"epoch {epoch}/{epochs}: loss {total_loss / len(x_train):.4f}, "
              f"test acc {acc * 100:.2f}%, train time {train_time:.1f}s "
              f"(+{time.time() - t0 - train_time:.1f}s eval)", flush=True)
    return history


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    default_out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
    parser.add_argument("--out", default=os.path.normpath(default_out),
                        help="output directory (default: %(default)s)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()

    # Only relevant in training mode; the model is exported in eval mode.
    warnings.filterwarnings("ignore", message="It is recommended that constant folding")
    torch.manual_seed(SEED)
    torch.set_num_threads(2)
    t_start = time.time()

    train_images, train_labels = load_split("train")
    test_images, test_labels = load_split("t10k")
    x_train = torch.from_numpy(normalise(train_images))
    y_train = torch.from_numpy(train_labels.astype(np.int64))
    x_test = torch.from_numpy(normalise(test_images))
    y_test = torch.from_numpy(test_labels.astype(np.int64))
    print(f"train {tuple(x_train.shape)}, test {tuple(x_test.shape)}")

    model = FashionCNN()
    num_params = sum(p.numel() for p in model.parameters())
    print(f"FashionCNN: {num_params} parameters")

    history = train(model, x_train, y_train, x_test, y_test,
                    args.epochs, args.batch_size, args.lr)
    train_seconds = time.time() - t_start
    model.eval()
    test_acc = evaluate(model, x_test, y_test)
    print(f"final test accuracy {test_acc * 100:.2f}% after {train_seconds:.0f}s")

    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "fashion_cnn.onnx")
    dummy = x_test[:1].clone()
    # TrainingMode.PRESERVE with the model in eval mode gives an inference
    # graph but keeps the BatchNormalization nodes (EVAL would fold them into
    # the preceding Conv weights).
    torch.onnx.export(model, (dummy,), onnx_path, opset_version=OPSET,
                      input_names=["input"], output_names=["logits"],
                      do_constant_folding=True,
                      training=torch.onnx.TrainingMode.PRESERVE)
    onnx_model = onnx.load(onnx_path)
    onnx.checker.check_model(onnx_model)
    ops = {}
    for node in onnx_model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    print("ONNX ops:", ", ".join(f"{k}: {v}" for k, v in sorted(ops.items())))

    # Fixture for the C++ tests: first 16 test images, labels, logits.
    sample = x_test[:NUM_SAMPLES].numpy().astype(np.float32)
    sample_labels = test_labels[:NUM_SAMPLES].astype(np.int64)
    with torch.no_grad():
        sample_logits = model(torch.from_numpy(sample)).numpy().astype(np.float32)
    np.save(os.path.join(args.out, "fashion_cnn_sample.npy"), sample)
    np.save(os.path.join(args.out, "fashion_cnn_sample_labels.npy"), sample_labels)
    np.save(os.path.join(args.out, "fashion_cnn_sample_logits.npy"), sample_logits)
    sample_correct = int((sample_logits.argmax(1) == sample_labels).sum())
    print(f"sample: {sample_correct}/{NUM_SAMPLES} correct")

    meta = {
        "model": "fashion_cnn",
        "file": "fashion_cnn.onnx",
        "dataset": "Fashion-MNIST (Debian dataset-fashion-mnist)",
        "test_accuracy": test_acc,
        "test_set_size": len(x_test),
        "normalisation": {"formula": "(x / 255 - mean) / std",
                          "mean": MEAN, "std": STD},
        "input": {"name": "input", "shape": [1, 1, 28, 28], "dtype": "float32"},
        "output": {"name": "logits", "shape": [1, 10], "dtype": "float32"},
        "class_names": CLASS_NAMES,
        "opset": OPSET,
        "num_parameters": num_params,
        "onnx_ops": dict(sorted(ops.items())),
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "optimizer": f"AdamW(lr={args.lr}, weight_decay=5e-4), OneCycleLR",
        "augmentation": "random horizontal flip",
        "history": history,
        "train_seconds": round(train_seconds, 1),
        "seed": SEED,
        "torch_version": torch.__version__,
        "date": datetime.date.today().isoformat(),
        "samples": {"images": "fashion_cnn_sample.npy",
                    "labels": "fashion_cnn_sample_labels.npy",
                    "logits": "fashion_cnn_sample_logits.npy",
                    "count": NUM_SAMPLES,
                    "correct": sample_correct},
    }
    with open(os.path.join(args.out, "fashion_cnn.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    print(f"wrote {onnx_path} ({os.path.getsize(onnx_path)} bytes) and fixtures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
