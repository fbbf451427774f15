"""glowmlir.quantization.params: Glow's chooseQuantizationParams / optimizeKL / rescaleHistogram,
quantize/dequantize, TFLite's QuantizeMultiplier and CMSIS-NN's arm_nn_requantize."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from glowmlir.quantization.params import (
    KL_MIN_GAIN,
    RANGES,
    SCHEMAS,
    QuantParams,
    choose_params,
    dequantize,
    dequantize_per_channel,
    multiplier_shift_arrays,
    optimize_kl,
    percentile_range,
    quantize,
    quantize_multiplier,
    quantize_per_channel,
    requantize,
    rescale_histogram,
    round_to_float32,
    squared_error,
    without_zero_spike,
)

f32 = round_to_float32


# ----------------------------------------------------------------------------- worked examples (notes §4)

def test_asymmetric_0_6():
    params = choose_params(0.0, 6.0)
    assert params == QuantParams(f32(6 / 255), -128)


def test_symmetric_minus1_2():
    params = choose_params(-1.0, 2.0, "symmetric")
    assert params.offset == 0
    assert params.scale == pytest.approx(2 / 127, rel=1e-6)


def test_power2_rounds_the_scale_up():
    # Glow: scale = exp2(ceil(log2(scale))). For [-1, 2] the scale is 2/127 = 0.015748 > 2^-6,
    # so it rounds up to 2^-5 (the notes' "2^-6" would be rounding down and lose range).
    assert choose_params(-1.0, 2.0, "symmetric_with_power2_scale") == QuantParams(2.0 ** -5, 0)
    # [-1, 1.9]: 1.9/127 = 0.01496 -> 2^-6.
    assert choose_params(-1.0, 1.9, "symmetric_with_power2_scale") == QuantParams(2.0 ** -6, 0)


def test_symmetric_with_uint8():
    unsigned = choose_params(0.5, 3.0, "symmetric_with_uint8")
    assert unsigned == QuantParams(f32(3 / 255), -128)  # zero forced in, then asymmetric formulas
    assert choose_params(-0.5, 3.0, "symmetric_with_uint8") == choose_params(-0.5, 3.0, "symmetric")


def test_zero_range_gets_scale_0_1():
    assert choose_params(0.0, 0.0) == QuantParams(f32(0.1), 0)
    assert choose_params(0.0, 0.0, "symmetric_with_power2_scale") == QuantParams(0.125, 0)


def test_range_not_containing_zero_is_extended():
    assert choose_params(2.0, 6.0) == choose_params(0.0, 6.0)
    assert choose_params(-6.0, -2.0) == QuantParams(f32(6 / 255), 127)


def test_int16_and_restricted_int32():
    assert RANGES["Int32"] == (-(2 ** 31) >> 2, (2 ** 31 - 1) >> 2)
    assert choose_params(0.0, 1.0, precision="Int16") == QuantParams(f32(1 / 65535), -32768)
    params = choose_params(-1.0, 1.0, "symmetric", precision="Int32")
    assert params.offset == 0 and params.scale == f32(2 / (2 ** 30 - 1))


def test_scale_is_float32():
    params = choose_params(0.0, 6.0)
    assert params.scale == float(np.float32(params.scale))
    assert QuantParams(0.1, 3).scale == float(np.float32(0.1))


@pytest.mark.parametrize("arguments, fragment", [
    (dict(schema="assymetric"), "schema"),
    (dict(precision="Int4"), "precision"),
    (dict(calibration="kl"), "calibration"),
])
def test_unknown_choices_are_rejected(arguments, fragment):
    with pytest.raises(ValueError, match=fragment):
        choose_params(0.0, 1.0, **arguments)


def test_min_above_max_is_rejected():
    with pytest.raises(ValueError, match="min"):
        choose_params(1.0, 0.0)


# ----------------------------------------------------------------------------- properties of choose_params

magnitudes = st.one_of(st.just(0.0), st.floats(1e-3, 1e4))
signed = st.builds(lambda magnitude, negative: -magnitude if negative else magnitude, magnitudes, st.booleans())
ranges = st.lists(signed, min_size=2, max_size=2).map(sorted)


@settings(max_examples=150, deadline=None)
@given(ranges, st.sampled_from(SCHEMAS), st.sampled_from(["Int8", "Int16"]))
def test_choose_params_properties(bounds, schema, precision):
    low, high = bounds
    qmin, qmax = RANGES[precision]
    params = choose_params(low, high, schema, precision)
    assert qmin <= params.offset <= qmax
    assert params.scale > 0
    # Zero is exactly representable.
    zero_level = quantize(np.float32(0), params, precision)
    assert zero_level == params.offset and dequantize(zero_level, params) == 0
    if schema in ("symmetric", "symmetric_with_power2_scale") or (schema == "symmetric_with_uint8" and low < 0):
        assert params.offset == 0
    if schema == "symmetric_with_uint8" and low >= 0 and high > 0:
        assert params.offset == qmin
    if schema == "symmetric_with_power2_scale":
        assert math.frexp(params.scale)[0] == 0.5
    # Values inside the profiled range come back within half a step (float32 slack).
    values = np.linspace(low, high, 101, dtype=np.float32)
    restored = dequantize(quantize(values, params, precision), params)
    slack = params.scale * 2.0 ** -8 + np.abs(values) * 2.0 ** -22
    assert np.all(np.abs(restored - values) <= params.scale / 2 + slack)


# ----------------------------------------------------------------------------- quantize / dequantize

def test_quantize_rounds_half_to_even_and_clips():
    params = QuantParams(1.0, 0)
    assert quantize([0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0], params).tolist() == [0, 2, 2, 0, -2, 127, -128]
    assert quantize([1e12, -1e12], params, "Int32").tolist() == [2 ** 31 - 1, -(2 ** 31)]
    assert quantize([1.0], params, "Int16").dtype == np.int16


def test_dequantize_is_float32():
    out = dequantize(np.array([-128, 0, 127], dtype=np.int8), QuantParams(0.5, -128))
    assert out.dtype == np.float32 and out.tolist() == [0.0, 64.0, 127.5]


def test_quantize_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        quantize([np.nan], QuantParams(1.0, 0))


def test_per_channel_matches_per_tensor():
    rng = np.random.default_rng(0)
    weights = rng.normal(size=(3, 2, 2, 4)).astype(np.float32)
    params = [choose_params(float(w.min()), float(w.max()), "symmetric") for w in weights]
    scales = np.array([p.scale for p in params], dtype=np.float32)
    offsets = np.array([p.offset for p in params], dtype=np.int32)
    levels = quantize_per_channel(weights, scales, offsets, 0)
    for channel, p in enumerate(params):
        assert np.array_equal(levels[channel], quantize(weights[channel], p))
    restored = dequantize_per_channel(levels, scales, offsets, 0)
    assert np.array_equal(restored[1], dequantize(levels[1], params[1]))
    with pytest.raises(ValueError, match="per-channel"):
        quantize_per_channel(weights, scales[:2], offsets[:2], 0)


# ----------------------------------------------------------------------------- QuantizeMultiplier

@settings(max_examples=300, deadline=None)
@given(st.floats(2.0 ** -31, 2.0 ** 30, exclude_max=True))
def test_quantize_multiplier_properties(real):
    multiplier, shift = quantize_multiplier(real)
    assert 2 ** 30 <= multiplier <= 2 ** 31 - 1
    assert -31 <= shift <= 30
    approximation = Fraction(multiplier) * Fraction(2) ** (shift - 31)
    assert abs(approximation - Fraction(real)) <= Fraction(real) * Fraction(1, 2 ** 31)


def test_quantize_multiplier_edges():
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(0.5) == (2 ** 30, 0)
    assert quantize_multiplier(1.0) == (2 ** 30, 1)
    assert quantize_multiplier(0.75) == (3 * 2 ** 29, 0)
    assert quantize_multiplier(1 - 2.0 ** -40) == (2 ** 30, 1)  # rounds to 2^31: halved, shift + 1
    assert quantize_multiplier(2.0 ** -33) == (0, 0)  # exponent < -31 flushes to zero
    assert quantize_multiplier(2.0 ** 31) == (2 ** 31 - 1, 30)  # exponent > 30 saturates (TFLite)
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError):
            quantize_multiplier(bad)


def test_quantize_multiplier_is_tflites():
    """Against the test-side copy of TFLite's `QuantizeMultiplier` (tests/support/int8_reference.py,
    written from `quantization_util.cc`): random reals over the whole range, and reals whose
    Q31 fraction ends in exactly one half (TfLiteRound: away from zero)."""
    from tests.support.int8_reference import quantize_multiplier as tflite_quantize_multiplier

    rng = np.random.default_rng(5)
    reals = list(2.0 ** rng.uniform(-31, 30, 2000)) + [2.0 ** -32 * 1.5, 2.0 ** -31, 1 - 2.0 ** -40]
    for fraction in rng.integers(2 ** 30, 2 ** 31 - 1, 200):  # q * 2^31 = fraction + 1/2, both parities
        reals.append((float(fraction) + 0.5) * 2.0 ** (int(rng.integers(-40, 20)) - 31))
    for real in reals:
        assert quantize_multiplier(real) == tflite_quantize_multiplier(real), real


def test_multiplier_shift_arrays():
    multipliers, shifts = multiplier_shift_arrays(np.array([[0.5, 0.75], [1.0, 0.0]]))
    assert multipliers.dtype == np.int32 and shifts.dtype == np.int32
    assert multipliers.tolist() == [[2 ** 30, 3 * 2 ** 29], [2 ** 30, 0]]
    assert shifts.tolist() == [[0, 0], [1, 0]]


# ----------------------------------------------------------------------------- arm_nn_requantize

def _cmsis_reference(value: int, multiplier: int, shift: int) -> int:
    """arm_nn_requantize (default branch) transcribed line by line from arm_nnsupportfunctions.h,
    with C's int32 wrap-around made explicit."""
    def int32(x):
        return ((x + 2 ** 31) % 2 ** 32) - 2 ** 31

    def doubling_high_mult_no_sat(m1, m2):
        return int32(((1 << 30) + m1 * m2) >> 31)

    def divide_by_power_of_two(dividend, exponent):
        remainder_mask = (1 << exponent) - 1
        remainder = remainder_mask & dividend
        result = dividend >> exponent
        threshold = remainder_mask >> 1
        if result < 0:
            threshold += 1
        if remainder > threshold:
            result += 1
        return result

    left, right = max(shift, 0), max(-shift, 0)
    return divide_by_power_of_two(doubling_high_mult_no_sat(int32(value * (1 << left)), multiplier), right)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1), min_size=1, max_size=16),
       st.integers(-(2 ** 31) + 1, 2 ** 31 - 1), st.integers(-31, 30))
def test_requantize_matches_the_c_code(values, multiplier, shift):
    got = requantize(np.array(values, dtype=np.int32), multiplier, shift)
    assert got.dtype == np.int32
    assert got.tolist() == [_cmsis_reference(v, multiplier, shift) for v in values]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2 ** 24), 2 ** 24), min_size=1, max_size=32), st.floats(1e-6, 4.0))
def test_requantize_is_within_one_of_the_real_product(values, real):
    acc = np.array(values, dtype=np.int32)
    got = requantize(acc, *quantize_multiplier(real)).astype(np.float64)
    assert np.all(np.abs(got - acc.astype(np.float64) * real) <= 1.0)


@pytest.mark.parametrize("acc, real, expected", [
    (2, 0.25, 1), (-2, 0.25, -1),          # +-0.5: away from zero (the divide by 2^k)
    (24, 2 ** -4, 2), (-24, 2 ** -4, -2),  # +-1.5
    (20, 2 ** -4, 1), (-20, 2 ** -4, -1),  # +-1.25
    (6, 2 ** -3, 1), (-6, 2 ** -3, -1),    # +-0.75
    (-3, 2 ** -3, 0),                      # -0.375
    (3, 2.0, 6), (-7, 3.0, -21),           # left shifts
    (1000, 0.1, 100), (-1000, 0.1, -100),
])
def test_requantize_hand_computed(acc, real, expected):
    exact = Fraction(acc) * Fraction(real)
    assert expected == math.copysign(math.floor(abs(exact) + Fraction(1, 2)), exact)  # half away from zero
    assert requantize(acc, *quantize_multiplier(real)) == expected


def test_requantize_doubling_high_multiply_rounds_halves_up():
    # With no right shift the only rounding is (a*b + 2^30) >> 31: halves go towards +inf,
    # exactly like TFLite's SaturatingRoundingDoublingHighMul.
    assert requantize([5, -5], 2 ** 30, 0).tolist() == [3, -2]


def test_requantize_broadcasts_per_channel():
    rng = np.random.default_rng(3)
    acc = rng.integers(-(2 ** 20), 2 ** 20, size=(5, 3)).astype(np.int32)
    multipliers, shifts = multiplier_shift_arrays(np.array([0.01, 0.5, 3.0]))
    got = requantize(acc, multipliers, shifts)
    for channel in range(3):
        assert np.array_equal(got[:, channel], requantize(acc[:, channel], multipliers[channel], shifts[channel]))


def test_requantize_wraps_the_left_shift_like_c():
    assert requantize(2 ** 30, 2 ** 30, 2) == _cmsis_reference(2 ** 30, 2 ** 30, 2) == 0


def test_requantize_rejects_bad_operands():
    with pytest.raises(ValueError):
        requantize(2 ** 31, 2 ** 30, 0)
    with pytest.raises(ValueError):
        requantize(1, 2 ** 30, 31)
    with pytest.raises(TypeError):
        requantize(1.5, 2 ** 30, 0)


# ----------------------------------------------------------------------------- histograms and KL

def test_rescale_histogram_hand_computed():
    assert rescale_histogram([4, 0], 0, 2, 0, 4).tolist() == [4, 0]
    assert rescale_histogram([0, 2], 0, 2, 0, 4).tolist() == [2, 0]
    assert rescale_histogram([4, 0], 0, 2, -1, 2).tolist() == [2, 2]  # split by overlap
    assert rescale_histogram([3, 0], 0, 2, -1, 2).tolist() == [2, 1]  # round(1.5) = 2, rest capped
    assert rescale_histogram([4, 0, 0], 0, 3, -1.5, 3).tolist() == [0, 4, 0]
    assert rescale_histogram([1, 2, 3], 0, 3, 0, 3).tolist() == [1, 2, 3]
    assert rescale_histogram([], 0, 1, 0, 2).size == 0


def _outlier_histogram(num_bins: int) -> tuple[np.ndarray, float, float]:
    rng = np.random.default_rng(7)
    data = np.concatenate([rng.normal(size=50_000), [-30.0, 40.0]]).astype(np.float32)
    low, high = float(data.min()), float(data.max())
    counts, _ = np.histogram(data, bins=num_bins, range=(low, high))
    return counts.astype(np.float32), low, high


def test_optimize_kl_narrows_a_range_with_outliers():
    counts, low, high = _outlier_histogram(1000)
    new_low, new_high = optimize_kl(counts, low, high, symmetric=False)
    assert low < new_low < -1.0 and 1.0 < new_high < high
    assert new_high - new_low < (high - low) / 1.5


def _optimize_kl_transcribed(hist, hist_min, hist_max, symmetric, num_quantized_bins=255):
    """Glow's optimizeKL / conditionHistogram / computeKL (Calibration.cpp) transcribed loop by
    loop with float32 scalars, the reference for the vectorized implementation, with its two
    changes: the bins are merged into groups as even as whole bins allow (TensorRT's; Glow gives
    the remainder to the last group) and a window ending at the last bin ends at `hist_max`."""
    F = np.float32

    def condition(h, eps=F(0.0001)):
        zeros = [int(v == 0) for v in h]
        if sum(zeros) == len(h):
            return
        eps_nonzero = F(eps * F(sum(zeros))) / F(len(h) - sum(zeros))
        if eps_nonzero >= 1.0:
            return
        for i in range(len(h)):
            h[i] = F(F(h[i] + F(eps * F(zeros[i]))) - F(eps_nonzero * F(1 - zeros[i])))

    def divergence(p, q):
        sum_p, sum_q = F(0), F(0)
        for v in p:
            sum_p = F(sum_p + v)
        for v in q:
            sum_q = F(sum_q + v)
        if sum_p == 0 or sum_q == 0:
            return F(0)
        total = F(0)
        for i in range(len(p)):
            p[i], q[i] = F(p[i] / sum_p), F(q[i] / sum_q)
            if p[i] > 0 and q[i] > 0:
                total = F(total + F(p[i] * np.log(F(p[i] / q[i]))))
        return total

    hist, hist_min, hist_max = [F(v) for v in hist], F(hist_min), F(hist_max)
    n = len(hist)
    width = F(F(hist_max - hist_min) / F(n))
    best, best_min, best_max = F(np.inf), hist_min, hist_max
    start, stop = 0, n - 1
    while stop - start + 1 >= num_quantized_bins:
        size = stop - start + 1
        p = [F(0)] * size
        for i in range(0, start + 1):
            p[0] = F(p[0] + hist[i])
        for i in range(start + 1, stop):
            p[i - start] = hist[i]
        for i in range(stop, n):
            p[-1] = F(p[-1] + hist[i])
        q = [F(0)] * size
        for group in range(num_quantized_bins):
            first = -(-group * size // num_quantized_bins)  # the first bin j with j * n // size == group
            end = -(-(group + 1) * size // num_quantized_bins)
            total, norm = F(0), 0
            for i in range(first, end):
                total, norm = F(total + hist[start + i]), norm + (hist[start + i] != 0)
            for i in range(first, end):
                if norm and p[i]:
                    q[i] = F(total / F(norm))
        condition(p)
        condition(q)
        d = divergence(p, q)
        if d < best:
            best, best_min = d, F(hist_min + F(F(start) * width))
            best_max = hist_max if stop == n - 1 else F(hist_min + F(F(stop + 1) * width))
        if symmetric:
            start, stop = start + 1, stop - 1
        else:
            losses = [F(hist[start] + hist[stop]), F(hist[start] + hist[start + 1]), F(hist[stop] + hist[stop - 1])]
            cheapest = int(np.argmin(losses))
            start, stop = ((start + 1, stop - 1), (start + 2, stop), (start, stop - 2))[cheapest]
    if symmetric:
        ratio_min, ratio_max = float(best_min) / float(hist_min), float(best_max) / float(hist_max)
        if ratio_min > ratio_max:
            best_max = F(ratio_min * float(hist_max))
        else:
            best_min = F(ratio_max * float(hist_min))
    return float(best_min), float(best_max)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_optimize_kl_matches_the_transcribed_c_code(seed):
    rng = np.random.default_rng(seed)
    data = [np.concatenate([rng.normal(size=3000), rng.normal(size=5) * 10]),
            np.concatenate([np.abs(rng.normal(size=3000)), [15.0]]),
            rng.exponential(size=3000) - 0.3][seed]
    low, high = float(data.min()), float(data.max())
    counts = np.histogram(data, bins=int(rng.integers(256, 290)), range=(low, high))[0].astype(np.float32)
    assert optimize_kl(counts, low, high, False) == _optimize_kl_transcribed(counts, low, high, False)
    bound = max(-low, high)
    assert optimize_kl(counts, -bound, bound, True) == _optimize_kl_transcribed(counts, -bound, bound, True)


def test_optimize_kl_symmetric_keeps_the_zero_point():
    counts, _, _ = _outlier_histogram(600)
    new_low, new_high = optimize_kl(counts, -40.0, 40.0, symmetric=True)
    assert new_low == -new_high and 1.0 < new_high < 40.0
    # An off-centre range keeps its min/max ratio (so the zero point stays 0).
    new_low, new_high = optimize_kl(counts, -32.0, 40.0, symmetric=True)
    assert new_low / -32.0 == pytest.approx(new_high / 40.0, rel=1e-6) and new_high < 40.0


def test_optimize_kl_needs_255_bins():
    counts, low, high = _outlier_histogram(254)
    assert optimize_kl(counts, low, high, symmetric=False) == (low, high)
    assert optimize_kl(np.zeros(0), -1.0, 2.0, symmetric=True) == (-1.0, 2.0)


def test_choose_params_with_kl_calibration():
    """KL's window is kept only where its squared error on the histogram is below the whole
    range's: two outliers 8 and 10 deviations out among 200,000 values are clipped (the finer
    scale saves more than clipping them costs); two 30 and 40 deviations out among 50,000
    are not (clipping them would cost more), though KL alone narrows that range."""
    rng = np.random.default_rng(8)
    data = np.concatenate([rng.normal(size=200_000), [-8.0, 10.0]]).astype(np.float32)
    low, high = float(data.min()), float(data.max())
    counts = np.histogram(data, bins=600, range=(low, high))[0]
    plain = choose_params(low, high, "symmetric")
    calibrated = choose_params(low, high, "symmetric", histogram=counts, calibration="KL")
    assert calibrated.offset == 0 and calibrated.scale < 0.6 * plain.scale
    assert choose_params(low, high, "symmetric", histogram=counts) == plain  # calibration None ignores it
    counts, low, high = _outlier_histogram(600)
    window = optimize_kl(rescale_histogram(counts, low, high, -high, high), -high, high, symmetric=True)
    assert window[1] < 0.5 * high  # KL alone clips the outliers ...
    assert choose_params(low, high, "symmetric", histogram=counts, calibration="KL") == \
        choose_params(low, high, "symmetric")  # ... which costs more squared error than it saves
    assert choose_params(low, high, "asymmetric", histogram=counts[:10], calibration="KL") == choose_params(low, high)


def test_squared_error_of_a_range():
    """Clipping moves a value to the edge (squared distance), rounding adds scale^2 / 12."""
    counts = np.array([1.0, 0.0, 0.0, 1.0])  # values at 0.5 and 3.5
    assert squared_error(counts, 0.0, 4.0, 0.0, 4.0, 4) == pytest.approx(1 / 12)
    assert squared_error(counts, 0.0, 4.0, 0.0, 2.0, 4) == pytest.approx((1.5 ** 2) / 2 + 0.5 ** 2 / 12)
    assert squared_error(np.zeros(4), 0.0, 4.0, 0.0, 2.0, 4) == 0.0


def _calibrated_range(data: np.ndarray, calibration: str, num_bins: int = 2048, **options) -> tuple[float, float]:
    """The real range int8 levels -128..127 cover under `calibration` of `data`'s histogram."""
    low, high = float(data.min()), float(data.max())
    counts = np.histogram(data, bins=num_bins, range=(low, high))[0]
    params = choose_params(low, high, histogram=counts, calibration=calibration, **options)
    return tuple(float(v) for v in dequantize(np.array([-128, 127]), params))


def _kl_window_and_gain(data: np.ndarray) -> tuple[tuple[float, float], float]:
    """The window `optimize_kl` finds on `data`'s 2,048-bin histogram (as `choose_params` runs
    it, asymmetric) and the share of the min/max range's `squared_error` it would remove."""
    low, high = min(float(data.min()), 0.0), max(float(data.max()), 0.0)
    counts = without_zero_spike(np.histogram(data, bins=2048, range=(low, high))[0], low, high)
    window = optimize_kl(counts, low, high, symmetric=False)
    window = min(window[0], 0.0), max(window[1], 0.0)
    return window, 1 - squared_error(counts, low, high, *window, 255) / squared_error(counts, low, high, low, high, 255)


def test_kl_takes_a_window_only_where_it_removes_a_fifth_of_the_error():
    """KL's window replaces min/max's range only where its squared error on the histogram is
    at least `KL_MIN_GAIN` (a fifth) lower. Outliers 8 and 10 deviations out: among 200,000
    values the narrower window saves a fifth just short (clipping them costs nearly what the
    finer scale saves): min/max kept; among 1,000,000 it saves almost two thirds: taken. A
    plain Gaussian's window saves a tenth: kept as min/max."""
    rng = np.random.default_rng(3)
    outliers = np.array([-8.0, 10.0])
    cases = {size: np.concatenate([rng.normal(size=size), outliers]).astype(np.float32)
             for size in (200_000, 1_000_000)}
    cases["plain"] = rng.normal(size=200_000).astype(np.float32)
    gains = {name: _kl_window_and_gain(data)[1] for name, data in cases.items()}
    assert 0.15 < gains[200_000] < KL_MIN_GAIN and gains[1_000_000] > 0.6 and 0 < gains["plain"] < 0.15
    for name in (200_000, "plain"):
        assert _calibrated_range(cases[name], "KL") == _calibrated_range(cases[name], "None")
    window, _ = _kl_window_and_gain(cases[1_000_000])
    low, high = _calibrated_range(cases[1_000_000], "KL")
    assert (low, high) == (pytest.approx(window[0], rel=0.01), pytest.approx(window[1], rel=0.01))
    assert -8.0 < low < -2.5 and 2.5 < high < 10.0


def test_kl_clips_a_gaussian_with_outliers_and_keeps_a_uniform_range():
    """2,048 bins (TensorRT's): outliers 8 to 10 deviations out among a million values are cut
    (the range lands strictly inside min/max, still beyond 2.5 deviations); a uniform
    histogram keeps ~all of it."""
    rng = np.random.default_rng(3)
    gaussian = np.concatenate([rng.normal(size=1_000_000), [-8.0, 10.0]]).astype(np.float32)
    low, high = _calibrated_range(gaussian, "KL")
    assert -8.0 < low < -2.5 and 2.5 < high < 10.0
    uniform = rng.uniform(-2.0, 3.0, size=200_000).astype(np.float32)
    low, high = _calibrated_range(uniform, "KL")
    assert low <= -0.97 * 2.0 and high >= 0.97 * 3.0


def test_kl_ignores_the_zeros_of_a_relu():
    """Half the values exactly 0 (a ReLU's): every range represents 0 exactly, so the spike
    must not drive the window search (it clipped this range to a quarter: [0, 0.25 max])."""
    rng = np.random.default_rng(4)
    relu = np.maximum(rng.normal(size=200_000), 0).astype(np.float32)
    low, high = _calibrated_range(relu, "KL")
    assert low == pytest.approx(0.0, abs=1e-6) and 0.6 * relu.max() < high <= relu.max() * 1.001
    counts = np.array([9.0, 1.0, 3.0, 5.0])
    assert without_zero_spike(counts, 0.0, 4.0).tolist() == [1.0, 1.0, 3.0, 5.0]  # bin 0 holds 0
    assert without_zero_spike(counts, -1.0, 3.0).tolist() == [9.0, 6.0, 3.0, 5.0]  # bin 1: its neighbours' mean
    assert without_zero_spike(counts, 1.0, 5.0).tolist() == counts.tolist()  # 0 outside: unchanged


def test_kl_window_beside_zero_keeps_zero_in_the_range():
    """A sigmoid gate's values lie in [0.25, 0.7]: the range quantized is [0, ~0.7], whatever
    window KL picks (Glow's would clamp the zero point and quantize [0, 0.46] only)."""
    rng = np.random.default_rng(5)
    gate = rng.uniform(0.25, 0.7, size=100_000).astype(np.float32)
    low, high = _calibrated_range(gate, "KL")
    assert low == pytest.approx(0.0, abs=1e-6) and high >= 0.69


def test_kl_with_255_bins_keeps_min_max_exactly():
    """255 bins: the only window is the whole histogram, so the parameters are min/max's."""
    counts, low, high = _outlier_histogram(255)
    for schema in ("asymmetric", "symmetric"):
        assert choose_params(low, high, schema, histogram=counts, calibration="KL") == choose_params(low, high, schema)


def test_percentile_option_narrows_further():
    rng = np.random.default_rng(6)
    data = rng.standard_t(3, size=100_000).astype(np.float32)
    wide, narrow = (_calibrated_range(data, "Percentile", percentile=p) for p in (99.99, 99.0))
    assert narrow[0] > wide[0] and narrow[1] < wide[1]
    assert _calibrated_range(data, "Percentile", percentile=100.0) == _calibrated_range(data, "None")


def test_percentile_range_cuts_the_tails_evenly():
    """99.99% kept of 100,000 values: at most 5 values go from each tail, whole bins only."""
    counts = np.zeros(1000)
    counts[0], counts[1], counts[500], counts[998], counts[999] = 3, 10, 99_973, 10, 4
    low, high = percentile_range(counts, -10.0, 10.0)
    assert (low, high) == (pytest.approx(-9.98), pytest.approx(9.98))  # bins 0 and 999 (3 and 4 values) cut
    counts[999], counts[500] = 7, 99_970  # 7 values: more than a tail, the bin stays
    assert percentile_range(counts, -10.0, 10.0) == (pytest.approx(-9.98), 10.0)
    assert percentile_range(counts, -10.0, 10.0, percentile=100.0) == (-10.0, 10.0)
    assert percentile_range(np.zeros(4), -1.0, 2.0) == (-1.0, 2.0)


def test_choose_params_with_percentile_calibration():
    counts, low, high = _outlier_histogram(600)
    plain = choose_params(low, high, "asymmetric")
    calibrated = choose_params(low, high, "asymmetric", histogram=counts, calibration="Percentile")
    assert calibrated.scale < 0.8 * plain.scale
    symmetric = choose_params(low, high, "symmetric", histogram=counts, calibration="Percentile")
    assert symmetric.offset == 0 and symmetric.scale < 0.8 * choose_params(low, high, "symmetric").scale
