"""The ONNX importer keeps 1-D and 3-D windows and ConvTranspose as the model states them; the
`glow-decompose-*` passes, first in the default pipeline, leave only the 2-D ops the lowering
takes, the node name on the op computing the node's output. (Their numbers against
onnxruntime: tests/unit/test_kernels.py; their IR: tests/lit/decompose_*.mlir.)"""

from __future__ import annotations

import os
import re

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import ModuleOp

import glowmlir
from glowmlir.compiler import run_passes
from glowmlir.dialects import glow
from glowmlir.errors import GlowError
from glowmlir.importers.onnx import import_onnx_model
from glowmlir.lowering.glow_to_glowll import LowerGlowToGlowLL
from glowmlir.pipeline import pre_quantization_passes
from tests.support.models import onnxruntime_outputs, random_inputs
from tests.support.onnx_graphs import single_node_model

rng = np.random.default_rng(5)


def random(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


WINDOWS = [
    # op type, input shape, initializers, attributes, the glow op imported
    ("Conv", [1, 2, 9], {"w": random(3, 2, 3)}, {"strides": [2]}, glow.ConvolutionOp),
    ("Conv", [1, 2, 4, 5, 5], {"w": random(3, 2, 2, 3, 3)}, {"pads": [1] * 6}, glow.ConvolutionOp),
    ("ConvTranspose", [1, 2, 3, 3], {"w": random(2, 3, 2, 2)}, {"strides": [2, 2]}, glow.ConvTransposeOp),
    ("ConvTranspose", [1, 2, 7], {"w": random(2, 3, 3)}, {"strides": [3], "pads": [1, 0]}, glow.ConvTransposeOp),
    ("MaxPool", [1, 2, 9], {}, {"kernel_shape": [3]}, glow.MaxPoolOp),
    ("AveragePool", [1, 2, 4, 6, 6], {}, {"kernel_shape": [2, 3, 3], "strides": [2, 1, 2]}, glow.AvgPoolOp),
    ("GlobalAveragePool", [1, 2, 4, 6, 6], {}, {}, glow.AvgPoolOp),
    ("GlobalMaxPool", [1, 2, 9], {}, {}, glow.MaxPoolOp),
]


def imported(op_type, shape, initializers, attributes) -> ModuleOp:
    model = single_node_model(op_type, {"x": shape}, initializers, name="node", **attributes)
    return import_onnx_model(model, "net", "test model")


def window_ops(module: ModuleOp) -> list:
    return [op for op in module.walk() if isinstance(op, glow.ConvolutionOp | glow.PoolOp | glow.ConvTransposeOp)]


@pytest.mark.parametrize("op_type, shape, initializers, attributes, glow_op", WINDOWS)
def test_the_importer_builds_the_window_the_model_states(op_type, shape, initializers, attributes, glow_op):
    (op,) = window_ops(imported(op_type, shape, initializers, attributes))
    assert type(op) is glow_op
    assert len(glow.shape_of(op.input)) == len(shape)
    assert op.attributes[glow.NODE_NAME].data == "node"


@pytest.mark.parametrize("op_type, shape, initializers, attributes, glow_op", WINDOWS)
def test_the_default_pipeline_leaves_only_two_dimensional_windows(op_type, shape, initializers, attributes, glow_op):
    module = imported(op_type, shape, initializers, attributes)
    run_passes(module, pre_quantization_passes())
    windows = window_ops(module)
    assert windows and all(type(op) is not glow.ConvTransposeOp for op in windows)
    assert all(len(glow.shape_of(op.input)) == 4 for op in windows)
    (save,) = [op for op in module.walk() if isinstance(op, glow.SaveOp)]
    assert save.input.owner.attributes[glow.NODE_NAME].data == "node"  # the profile key of the node's output
    LowerGlowToGlowLL().apply(None, module)


@pytest.mark.parametrize("op_type, shape, initializers, attributes, message", [
    ("Conv", [1, 2, 9], {"w": random(3, 2, 3)}, {},
     "glow.convolution: only 2-D windows lower to glowll, this one is 1-D"),
    ("MaxPool", [1, 2, 4, 6, 6], {}, {"kernel_shape": [2, 2, 2]},
     "glow.max_pool: only 2-D windows lower to glowll, this one is 3-D"),
    ("ConvTranspose", [1, 2, 3, 3], {"w": random(2, 3, 2, 2)}, {},
     "glow.conv_transpose: no lowering to glowll (run glow-decompose-conv-transpose first?)"),
])
def test_the_lowering_names_a_window_it_cannot_take(op_type, shape, initializers, attributes, message):
    module = imported(op_type, shape, initializers, attributes)
    with pytest.raises(GlowError, match=re.escape(message)):
        LowerGlowToGlowLL().apply(None, module)


def test_a_three_dimensional_convolution_takes_a_filter_computed_at_run_time(tmp_path):
    """The taps are slices of the filter: a graph input serves as well as a constant."""
    model = single_node_model("Conv", {"x": [1, 2, 4, 5, 3], "w": [3, 2, 2, 3, 1]}, pads=[1, 1, 0, 0, 1, 0])
    path = os.path.join(tmp_path, "model.onnx")
    onnx.save(model, path)
    inputs = random_inputs(model, seed=3)
    np.testing.assert_allclose(glowmlir.compile(path).run(inputs)["y"], onnxruntime_outputs(model, inputs)["y"],
                               atol=1e-5, rtol=0)
