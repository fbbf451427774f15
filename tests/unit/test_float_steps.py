"""`quantization.float_steps`: TFLite's int8 output step in single-precision floats, found and
proved at compile time, against `params.requantize` on values it did not check."""

import numpy as np
import pytest

from glowmlir.quantization.float_steps import FloatStep, float_step, step_points, tflite_levels
from glowmlir.quantization.rescaling import multiplier_and_shift

INT32 = (-(2**31), 2**31 - 1)


def random_layers(count: int, seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        real = float(np.exp(rng.uniform(np.log(1e-4), np.log(0.3))))
        yield (*multiplier_and_shift(real), int(rng.integers(-128, 40)))


@pytest.mark.parametrize("seed", [0, 1])
def test_found_steps_equal_tflite_on_every_value_tried(seed):
    rng = np.random.default_rng(100 + seed)
    found = 0
    for multiplier, shift, offset in random_layers(40, seed):
        step = float_step(multiplier, shift, offset, *INT32)
        if step is None:
            continue
        found += 1
        points = step_points(multiplier, shift, offset, *INT32)
        near = (points[:, None] + np.arange(-3, 4)).ravel()
        values = np.concatenate([rng.integers(*INT32, 20000), rng.integers(-(1 << 20), 1 << 20, 20000),
                                 np.clip(near, *INT32), np.arange(-2000, 2000)])
        np.testing.assert_array_equal(step.levels(values), tflite_levels(values, multiplier, shift, offset))
    assert found >= 15, f"the float step was found for {found} of 40 layers"


def test_a_shifted_offset_is_caught():
    """A step one threshold off differs from TFLite somewhere near a threshold: the check sees it."""
    multiplier, shift = multiplier_and_shift(0.0024)
    step = float_step(multiplier, shift, -17, *INT32)
    assert step is not None
    wrong = FloatStep(step.scale, step.offset + 0.01, step.negative_offset)
    points = step_points(multiplier, shift, -17, *INT32)
    assert not np.array_equal(wrong.levels(points), tflite_levels(points, multiplier, shift, -17))

