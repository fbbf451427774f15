"""The per-layer instruction counts `glowmlir/backends/cmsis_nn/conv_pool_costs.py` is fitted to
(tests/support/cmsis_nn/conv_pool_costs.json; `bench/bench_conv_pool_costs.py` measures
our side), and the work of each of its layers as the estimates take it."""

from __future__ import annotations

import json
import os

from glowmlir.backends.arm_dsp.layout import gathers, packing
from glowmlir.backends.cmsis_nn.conv_pool_costs import VECTOR_LANES, ConvolutionWork, row_vectors

TABLE = os.path.join(os.path.dirname(__file__), "cmsis_nn", "conv_pool_costs.json")


def table_rows() -> list[dict]:
    with open(TABLE) as f:
        return json.load(f)["rows"]


def work_of_row(row: dict) -> ConvolutionWork:
    """A measured layer's work: 'same' padding (kernel // 2), stride 1, so rows keep their
    width; its pool ("pool") global or 2x2 of stride 2 (over even rows and columns: the
    windows tile the output)."""
    (kernel_h, kernel_w), (out_h, out_w) = row["kernel"], row["output"]
    outputs = row["output_channels"] * out_h * out_w
    taps = kernel_h * kernel_w * row["input_channels"]
    vectors = row_vectors(out_w, out_w, kernel_w, 1, kernel_w // 2, 1)
    filter_shape = (row["output_channels"], row["input_channels"], kernel_h, kernel_w)
    kind = packing(filter_shape, [kernel_h // 2, kernel_w // 2] * 2, 1, pooled=True, tiled=True)
    gathered = gathers(kind, (1, 1), True, row["pool"] == "global")
    return ConvolutionWork(outputs * taps, outputs, out_h * out_w * kernel_h,
                           row["output_channels"] * out_h * vectors * VECTOR_LANES * taps,
                           out_h * out_w * taps if gathered else 0)
