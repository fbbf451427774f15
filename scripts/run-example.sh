#!/usr/bin/env bash
# Sets everything up, compiles the LeNet MNIST example into a Glow bundle, builds the
# example's Glow-style main.c against it with the system C compiler and classifies the
# shipped digits.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

example=examples/lenet_mnist
build=build/lenet_mnist
.venv/bin/glow-compile -backend=CPU -model=$example/lenet_mnist.onnx -emit-bundle=$build
cc -std=c99 -O2 -I $build $example/main.c $build/lenet_mnist.o -lpng -lm -o $build/lenet_mnist
$build/lenet_mnist $example/images/*.png
