"""Lookup tables of unary functions on quantized data, computed at compile time.

An int8 op becomes a 256-entry table, one output level per input level (Glow's
IntLookupTable). Int16 data has 65,536 levels: it takes the 513-entry table of TFLite's
int16 LUT ops (`gen_lut` / `lut_lookup`, which CMSIS-NN's s16 activations also use). Entry
i holds the output level at input level -32768 + 128 i (entry 512, at 32768, only gives
the last slope); a level x reads entry j = 256 + (x >> 7) and interpolates linearly
towards entry j + 1 by (x & 127) / 128, rounding half up. Each entry but the last is
lowered by half the error linear interpolation makes at the middle of its step, so that
the errors of the interpolated curve are centred.

A table `glow-quantize` builds from a float op records that op (`TABLE_FUNCTION`: its name
and properties), so that `glow-fold-lookup-tables` can evaluate the float function when it
folds the table into a longer chain.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr, StringAttr
from xdsl.ir import Operation

from glowmlir.dialects.glow import LOOKUP_TABLE_SIZES, numpy_semantics

LOOKUP_STEPS = LOOKUP_TABLE_SIZES[16] - 1
"""Steps of an int16 table (512: it holds one more entry, their end)."""
LOOKUP_STEP_BITS = 7
"""Input levels per step of an int16 table: 2^7 = 65,536 / 512."""


def _round_half_away(values: np.ndarray) -> np.ndarray:
    return np.sign(values) * np.floor(np.abs(values) + 0.5)


def interpolated_table(function: Callable[[np.ndarray], np.ndarray], input_type, output_type) -> np.ndarray:
    """The 513-entry int16 table of `function` (reals to reals) from an int16 input type to
    an int16 output type (see the module docstring)."""
    step = 1 << LOOKUP_STEP_BITS
    starts = np.arange(LOOKUP_STEPS + 1, dtype=np.float64) * step - (1 << 15)

    def output_levels(input_levels: np.ndarray) -> np.ndarray:
        reals = (input_levels - input_type.offset) * np.float64(input_type.scale)
        with np.errstate(all="ignore"):
            values = np.asarray(function(reals.astype(np.float32)), np.float64)
        return np.nan_to_num(values, nan=0.0, posinf=1e30, neginf=-1e30) / np.float64(output_type.scale)

    at_start, at_middle = output_levels(starts), output_levels(starts[:-1] + step / 2)
    sampled = _round_half_away(at_start)
    interpolated_middle = _round_half_away((at_start[1:] + sampled[:-1]) / 2)
    centring = _round_half_away((interpolated_middle - _round_half_away(at_middle)) / 2)
    levels = sampled + output_type.offset
    levels[:-1] -= centring
    low, high = output_type.value_range
    return np.clip(levels, low, high).astype(np.int16)


TABLE_FUNCTION = "table_of"
"""The attribute of a `glow.int_lookup_table` naming the float op it samples:
`{op = "glow.sigmoid", ...its properties}`."""


def table_function_attribute(op: Operation) -> DictionaryAttr:
    """What `TABLE_FUNCTION` records of the float op `op`: its name and properties."""
    return DictionaryAttr({"op": StringAttr(op.name), **op.properties})


def table_function(lookup: Operation) -> Callable[[np.ndarray], np.ndarray] | None:
    """The float function (reals to reals) a lookup table records (`TABLE_FUNCTION`): its op's
    numpy semantics with its properties; None when it records none."""
    record = lookup.attributes.get(TABLE_FUNCTION)
    if not isinstance(record, DictionaryAttr) or not isinstance(record.data.get("op"), StringAttr):
        return None
    name = record.data["op"].data
    op_class = next((op for op in numpy_semantics() if op.name == name and op.FACTS.arity == 1), None)
    if op_class is None:
        return None
    sampled = op_class.create(properties={k: v for k, v in record.data.items() if k != "op"})
    return lambda reals: op_class.FACTS.numpy(sampled, reals)


SPAN_SAMPLES = 4096
"""Points at which `varying_span` evaluates functions over a range."""


def varying_span(functions: list[Callable[[np.ndarray], np.ndarray]], low: float,
                 high: float) -> tuple[float, float]:
    """The part of [low, high] outside which every function of `functions` gives the same
    result (HardSwish is 0 below -3, HardSigmoid 0 below -3 and 1 above 3): from the last of
    `SPAN_SAMPLES` points at which every function still gives its result at `low`, to the
    first from which it gives its result at `high`. [low, high] itself where they are all
    constant over it."""
    if not functions or not low < high:
        return low, high
    points = np.linspace(low, high, SPAN_SAMPLES)  # float64: a smooth function (a sigmoid) is not constant
    with np.errstate(all="ignore"):  # where float32 merely cannot show it change; a clip is
        results = [np.nan_to_num(np.asarray(function(points), np.float64), nan=0.0)
                   for function in functions]  # NaN as the tables hold it
    at_low = np.logical_and.reduce([result == result[0] for result in results])
    at_high = np.logical_and.reduce([result == result[-1] for result in results])
    if at_low.all():  # every function constant over the whole range
        return low, high
    first = int(np.argmin(at_low)) - 1  # the last point of the run that gives the result at `low`
    last = SPAN_SAMPLES - int(np.argmin(at_high[::-1]))  # the first point of the run at `high`
    return (low if first == 0 else float(points[first]), high if last == SPAN_SAMPLES - 1 else float(points[last]))
