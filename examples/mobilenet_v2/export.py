"""Exports MobileNetV2 (Sandler et al. 2018) from PyTorch with random weights, for the tests.

The network is written out here (torchvision is not installable beside the local torch
build): inverted residual blocks with depthwise convolutions, batch normalization and
ReLU6, width multiplier 0.35 and a 96x96 input to keep the file small. Weights are random
(seed 0); batch-norm statistics are randomised too so that folding them is exercised.

    pip install torch==2.13.0 && python examples/mobilenet_v2/export.py
"""

from __future__ import annotations

import os

import torch
from torch import nn

WIDTH = 0.35
SETTINGS = [  # expansion t, output channels c, repeats n, first stride s
    (1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def channels(c: float) -> int:
    return max(8, int(c + 4) // 8 * 8)


def conv_bn(inp: int, out: int, kernel: int, stride: int, groups: int = 1, relu: bool = True) -> nn.Sequential:
    layers = [nn.Conv2d(inp, out, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(out)]
    return nn.Sequential(*layers, nn.ReLU6()) if relu else nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, inp: int, out: int, stride: int, expansion: int):
        super().__init__()
        hidden = inp * expansion
        layers = [conv_bn(inp, hidden, 1, 1)] if expansion != 1 else []
        layers += [conv_bn(hidden, hidden, 3, stride, groups=hidden), conv_bn(hidden, out, 1, 1, relu=False)]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and inp == out

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes: int = 1000):
        super().__init__()
        inp = channels(32 * WIDTH)
        layers = [conv_bn(3, inp, 3, 2)]
        for t, c, n, s in SETTINGS:
            out = channels(c * WIDTH)
            for i in range(n):
                layers.append(InvertedResidual(inp, out, s if i == 0 else 1, t))
                inp = out
        layers.append(conv_bn(inp, 1280, 1, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        return torch.softmax(self.classifier(x), dim=1)


def main() -> None:
    torch.manual_seed(0)
    model = MobileNetV2()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
            nn.init.uniform_(module.weight, 0.5, 1.5)
            nn.init.uniform_(module.bias, -0.1, 0.1)
    model.eval()
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mobilenet_v2.onnx")
    torch.onnx.export(model, torch.randn(1, 3, 96, 96), path, input_names=["data"], output_names=["prob"],
                      opset_version=13, dynamo=False)
    print(f"wrote {path} ({os.path.getsize(path):,} bytes)")


if __name__ == "__main__":
    main()
