"""Quantization parameters and integer requantization, bit-faithful to Glow and CMSIS-NN.

Mirrored sources:

* Glow (pytorch/glow @ 05dd99b9) `lib/Quantization/Base/Base.cpp`: `getQuantizedRange`,
  `chooseQuantizationParams`, `validateQuantizationParams`; `include/glow/Quantization/Base/Base.h`:
  `quantize`, `dequantize`; `lib/Quantization/Base/Profile.cpp`: `rescaleHistogram`;
  `lib/Quantization/Base/Calibration.cpp`: `optimizeKL`.
* TFLite `tensorflow/lite/kernels/internal/quantization_util.cc`: `QuantizeMultiplier`.
* CMSIS-NN `Include/arm_nnsupportfunctions.h`: `arm_nn_requantize` (default double-rounding
  branch), `arm_nn_doubling_high_mult_no_sat`, `arm_nn_divide_by_power_of_two`.

Glow computes in C `float` wherever its source does, and these functions reproduce every such
float32 rounding point: `round_to_float32` after each operation on float32 operands (computing
+, -, *, / in double and rounding once gives exactly the float32 result), or numpy float32
arrays. Sums over histograms are accumulated left to right like the C loops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RANGES = {"Int8": (-128, 127), "Int16": (-32768, 32767), "Int32": (-536870912, 536870911),
          "Int64": (-(1 << 62), (1 << 62) - 1)}
"""Glow's `getQuantizedRange`: Int32 is restricted to [INT32_MIN >> 2, INT32_MAX >> 2] so that
`bias - biasOffset` cannot overflow and the scale (max - min) / (qmax - qmin) stays accurate.
Int64 (not Glow's: the biases of int16 layers, TFLite's 16x8 scheme) holds +-2^62, whose
bounds float64 represents exactly."""

SCHEMAS = ("asymmetric", "symmetric", "symmetric_with_uint8", "symmetric_with_power2_scale")
"""Glow's `-quantization-schema` values (Asymmetric, Symmetric, SymmetricWithUnsigned,
SymmetricWithPower2Scale)."""

CALIBRATIONS = ("None", "KL", "Percentile")
"""`-quantization-calibration`: none, KL-divergence minimization over the profiled histogram
(Glow's), or the central `PERCENTILE` of its mass (an extension of glowmlir, as onnxruntime's
and TensorRT's percentile calibrators)."""

PERCENTILE = 99.99
"""The share of a histogram's mass (in %) Percentile calibration keeps by default
(`-quantization-percentile`): the rest is cut evenly from both tails (outliers saturate
instead of stretching the scale)."""

KL_QUANTIZED_BINS = 255
"""Glow's `numQuantizedBins` for `optimizeKL` (the TVM / MXNet default)."""

KL_MIN_GAIN = 0.2
"""The share of a tensor's squared quantization error (`squared_error` on its histogram) a KL
window must remove to replace the min/max range. A smaller gain is below the noise of what it
is for: on the tests' random-weight nets, windows saving less moved top-1 agreement with float
by up to 6 of 200 inputs either way, as much as widening every range by 1-4 % (clipping
nothing) does (bench/bench_calibration.py), so taking them made KL worse than min/max on some
seeds; a window that cuts a sparse long tail and halves the scale saves far more."""

FLT_MAX = float(np.finfo(np.float32).max)
FLT_EPSILON = float(np.finfo(np.float32).eps)

_STORAGE_DTYPES = {"Int8": np.int8, "Int16": np.int16, "Int32": np.int32, "Int64": np.int64}
# Doubles at or beyond this magnitude round to float32 infinity (FLT_MAX plus half an ulp).
_FLOAT32_OVERFLOW = FLT_MAX + 2.0 ** 103


def round_to_float32(value: float) -> float:
    """`value` rounded to the nearest float32 (what a C `float` holds), as a Python float."""
    if abs(value) >= _FLOAT32_OVERFLOW:
        return math.copysign(math.inf, value)
    return float(np.float32(value))


def round_half_away_from_zero(value: float) -> float:
    """C's `round()`/`std::round()`: to the nearest integer, halves away from zero (exact for all
    doubles, unlike `floor(x + 0.5)`)."""
    if not math.isfinite(value):
        return value
    truncated = float(math.trunc(value))
    if abs(value - truncated) >= 0.5:
        truncated += math.copysign(1.0, value)
    return truncated


def _check_choice(what: str, value: str, choices) -> None:
    if value not in choices:
        raise ValueError(f"unknown quantization {what} {value!r} (expected one of: {', '.join(choices)})")


def _quantized_range(precision: str) -> tuple[int, int]:
    _check_choice("precision", precision, tuple(RANGES))
    return RANGES[precision]


@dataclass(frozen=True)
class QuantParams:
    """Glow's `TensorQuantizationParams`: `real = scale * (q - offset)`; `offset` is the zero point.

    `scale` is always held float32-rounded (Glow stores it as a C `float`), whatever was passed.
    """

    scale: float
    offset: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", round_to_float32(float(self.scale)))
        object.__setattr__(self, "offset", int(self.offset))


# ----------------------------------------------------------------------------- choosing params

def choose_params(min_value: float, max_value: float, schema: str = "asymmetric", precision: str = "Int8",
                  histogram=None, calibration: str = "None", percentile: float = PERCENTILE) -> QuantParams:
    """Scale and offset for a profiled range: Glow's `chooseQuantizationParams`.

    Steps (glow-quantization.md §4): force 0 into the range; `symmetric_with_uint8` keeps the
    asymmetric formulas for a non-negative range (offset = qmin) and otherwise becomes `symmetric`;
    symmetric schemas stretch the shorter side so the zero point is 0; clamp to finite floats;
    with `calibration == "KL"` and a histogram, narrow the range by `optimize_kl` after
    `without_zero_spike`, force 0 back into the window (Glow does not: a window beside 0
    clamps its zero point, so the range actually quantized is wrong) and keep it only if its
    `squared_error` on the histogram is at least `KL_MIN_GAIN` below the whole range's (Glow
    keeps it always); with "Percentile", narrow it to its central `percentile` %
    (`percentile_range`), 0 forced in;
    `scale = (max - min) / (qmax - qmin)` (0 becomes 0.1); zero point from whichever end has the
    smaller rounding error, forced to 0 when `|max + min| <= FLT_EPSILON`, clamped or rounded half
    away from zero; `symmetric_with_power2_scale` rounds the scale up to a power of two.
    """
    _check_choice("schema", schema, SCHEMAS)
    qmin, qmax = _quantized_range(precision)
    _check_choice("calibration", calibration, CALIBRATIONS)
    profiled_min, profiled_max = round_to_float32(float(min_value)), round_to_float32(float(max_value))
    if not profiled_min <= profiled_max:
        raise ValueError(f"invalid profiled range [{min_value}, {max_value}] (min must not exceed max)")

    low, high = min(profiled_min, 0.0), max(profiled_max, 0.0)
    if schema == "symmetric_with_uint8" and not low >= 0.0:
        schema = "symmetric"
    symmetric = schema in ("symmetric", "symmetric_with_power2_scale")
    if symmetric:
        low, high = _stretch_to_symmetric(low, high, qmin, qmax)
    low, high = max(low, -FLT_MAX), min(high, FLT_MAX)

    if calibration != "None" and histogram is not None and profiled_min != profiled_max and low != high:
        if calibration == "KL":
            rescaled = rescale_histogram(histogram, profiled_min, profiled_max, low, high)
            rescaled = without_zero_spike(rescaled, low, high)
            window = optimize_kl(rescaled, low, high, symmetric)
            window = min(window[0], 0.0), max(window[1], 0.0)
            errors = [squared_error(rescaled, low, high, *bounds, qmax - qmin) for bounds in (window, (low, high))]
            if errors[0] < (1 - KL_MIN_GAIN) * errors[1]:
                low, high = window
        else:
            low, high = percentile_range(histogram, profiled_min, profiled_max, percentile)
        low, high = min(low, 0.0), max(high, 0.0)
        if symmetric and calibration == "Percentile":
            low, high = _stretch_to_symmetric(low, high, qmin, qmax)

    scale = (high - low) / (qmax - qmin)
    if scale == 0:
        scale = 0.1
    offset = _nudged_zero_point(low, high, scale, qmin, qmax)
    if schema == "symmetric_with_power2_scale":
        scale = 2.0 ** math.ceil(math.log2(scale))
    params = QuantParams(scale, offset)
    _validate(params, schema, qmin, qmax)
    return params


def _stretch_to_symmetric(low: float, high: float, qmin: int, qmax: int) -> tuple[float, float]:
    """Extend the end that saturates later so that real 0 maps to quantized 0 (range becomes
    [qmin * s, qmax * s]); the ratios are computed in double, the new end stored as float."""
    ratio_min, ratio_max = low / qmin, high / qmax
    if ratio_min > ratio_max:
        return low, round_to_float32(ratio_min * qmax)
    return round_to_float32(ratio_max * qmin), high


def _nudged_zero_point(low: float, high: float, scale: float, qmin: int, qmax: int) -> int:
    """The integer zero point of Glow's `chooseQuantizationParams` (double arithmetic)."""
    from_min, from_max = qmin - low / scale, qmax - high / scale
    error_from_min = abs(qmin) + abs(low / scale)
    error_from_max = abs(qmax) + abs(high / scale)
    zero_point = from_min if error_from_min < error_from_max else from_max
    if abs(round_to_float32(high + low)) <= FLT_EPSILON:  # `float difference = std::abs(max + min)`
        zero_point = 0.0
    if zero_point < qmin:
        return qmin
    if zero_point > qmax:
        return qmax
    return int(round_half_away_from_zero(zero_point))


def _is_power_of_two(value: float) -> bool:
    """Glow's `isFloatPowerOf2`: the frexp mantissa is exactly 0.5."""
    return abs(math.frexp(value)[0]) == 0.5


def _validate(params: QuantParams, schema: str, qmin: int, qmax: int) -> None:
    """Glow's `validateQuantizationParams` (asserts there; a ValueError here)."""
    problem = None
    if not qmin <= params.offset <= qmax:
        problem = f"offset {params.offset} outside [{qmin}, {qmax}]"
    elif schema in ("symmetric", "symmetric_with_power2_scale") and params.offset != 0:
        problem = f"{schema} needs offset 0, got {params.offset}"
    elif schema == "symmetric_with_uint8" and params.offset not in (0, qmin):
        problem = f"symmetric_with_uint8 needs offset 0 or {qmin}, got {params.offset}"
    elif schema == "symmetric_with_power2_scale" and not _is_power_of_two(params.scale):
        problem = f"scale {params.scale!r} is not a power of two representable as float32"
    if problem is not None:
        raise ValueError(f"cannot quantize this range with the {schema} schema: {problem}")


# ----------------------------------------------------------------------------- histograms and KL

def _histogram_index(position: float, num_bins: int, rounding) -> int:
    """`static_cast<size_t>(std::max(rounding(position), 0.f))` saturated to the last bin."""
    if not position > 0:  # also NaN
        return 0
    if position >= num_bins:
        return num_bins - 1
    return min(int(rounding(position)), num_bins - 1)


def percentile_range(histogram, min_value: float, max_value: float,
                     percentile: float = PERCENTILE) -> tuple[float, float]:
    """The narrowest range of whole bins of `histogram` (over [min_value, max_value]) holding the
    central `percentile` % of its mass: (100 - percentile) / 2 % is cut from each tail. An
    empty histogram keeps the range."""
    counts = np.asarray(histogram, dtype=np.float64).ravel()
    total = counts.sum()
    if total <= 0 or counts.size == 0:
        return round_to_float32(min_value), round_to_float32(max_value)
    tail = total * (100.0 - percentile) / 200.0
    cumulative = np.cumsum(counts)
    first = int(np.searchsorted(cumulative, tail, side="right"))  # bins wholly within the low tail are cut
    last = int(np.searchsorted(cumulative, total - tail, side="left"))
    width = (max_value - min_value) / counts.size
    return (round_to_float32(min_value + first * width),
            round_to_float32(min_value + min(last + 1, counts.size) * width))


def rescale_histogram(histogram, old_min: float, old_max: float, new_min: float, new_max: float) -> np.ndarray:
    """The histogram over [old_min, old_max] redistributed onto the same number of bins over
    [new_min, new_max]: Glow's `rescaleHistogram` (Profile.cpp), used before KL calibration.

    Each source bin is split over every destination bin it overlaps, in proportion to the
    overlap; each share is rounded half away from zero and capped by what is left of the source
    count (so only whole counts move). Returns float32 counts, like Glow's `std::vector<float>`.
    """
    source = np.asarray(histogram, dtype=np.float32).ravel()
    if source.size == 0:
        return source.copy()
    old_min, old_max = round_to_float32(old_min), round_to_float32(old_max)
    new_min, new_max = round_to_float32(new_min), round_to_float32(new_max)
    if not (old_min < old_max and new_min < new_max):
        raise ValueError(f"rescale_histogram needs non-empty ranges, "
                         f"got [{old_min}, {old_max}] -> [{new_min}, {new_max}]")
    if old_min == new_min and old_max == new_max:
        return source.copy()

    num_bins = source.size
    source_width = round_to_float32(round_to_float32(old_max - old_min) / num_bins)
    dest_width = round_to_float32(round_to_float32(new_max - new_min) / num_bins)
    if source_width == 0 or dest_width == 0:
        raise ValueError("rescale_histogram: range too small for the number of bins (bin width underflows)")
    dest = [0.0] * num_bins
    for index in np.flatnonzero(source):
        count = float(source[index])
        start = round_to_float32(old_min + round_to_float32(int(index) * source_width))
        stop = round_to_float32(old_min + round_to_float32((int(index) + 1) * source_width))
        first = _histogram_index(round_to_float32(round_to_float32(start - new_min) / dest_width), num_bins, math.floor)
        last = _histogram_index(round_to_float32(round_to_float32(stop - new_min) / dest_width), num_bins, math.ceil)
        remaining = count
        for dest_index in range(first, last + 1):
            dest_start = round_to_float32(new_min + round_to_float32(dest_index * dest_width))
            dest_stop = round_to_float32(new_min + round_to_float32((dest_index + 1) * dest_width))
            overlap = round_to_float32(min(stop, dest_stop) - max(start, dest_start))
            ratio = min(max(round_to_float32(overlap / source_width), 0.0), 1.0)
            share = min(round_half_away_from_zero(round_to_float32(ratio * count)), remaining)
            dest[dest_index] = round_to_float32(dest[dest_index] + share)
            remaining = round_to_float32(remaining - share)
    return np.array(dest, dtype=np.float32)


def _sequential_sum(values: np.ndarray) -> np.float32:
    """Left-to-right float32 sum (`std::accumulate`), unlike numpy's pairwise `sum`."""
    if values.size == 0:
        return np.float32(0)
    return np.cumsum(values, dtype=np.float32)[-1]


def _saturated_window(histogram: np.ndarray, prefix_sums: np.ndarray, start: int, stop: int) -> np.ndarray:
    """KL reference distribution P: the window, with all mass left of it added to its first bin
    and all mass right of it to its last bin."""
    window = histogram[start:stop + 1].copy()
    window[0] = prefix_sums[start]
    window[-1] = _sequential_sum(histogram[stop:])
    return window


def _quantized_approximation(window: np.ndarray, reference: np.ndarray, num_quantized_bins: int) -> np.ndarray:
    """KL candidate distribution Q: the window's bins merged into `num_quantized_bins` groups
    as evenly as whole bins allow (bin j in group `j * num_quantized_bins // window.size`, sizes
    differing by at most one, as TensorRT's calibrator spreads them; Glow gives every group
    the same size and the whole remainder, up to 254 bins, to the last), each group's sum
    spread evenly over its non-zero bins, and kept only where the reference P is non-zero."""
    groups = np.arange(window.size) * num_quantized_bins // window.size
    sizes = np.bincount(groups, minlength=num_quantized_bins)
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    padded = np.zeros((num_quantized_bins, int(sizes.max())), dtype=np.float32)  # trailing zeros: sums unchanged
    padded[groups, np.arange(window.size) - firsts[groups]] = window
    sums = np.add.accumulate(padded, axis=1, dtype=np.float32)[:, -1]  # left to right, like the C loop
    counts = np.count_nonzero(padded, axis=1).astype(np.float32)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts != 0)
    return np.where(reference != 0, means[groups], np.float32(0))


def _conditioned(histogram: np.ndarray, eps_zero: np.float32 = np.float32(0.0001)) -> np.ndarray:
    """Glow's `conditionHistogram`: zeros get `eps_zero`, the same total is taken evenly from
    the non-zero bins (skipped when all are zero or the per-bin amount would reach 1)."""
    is_zero = histogram == 0
    num_zeros = int(np.count_nonzero(is_zero))
    if num_zeros == histogram.size:
        return histogram
    eps_nonzero = np.float32(eps_zero * np.float32(num_zeros)) / np.float32(histogram.size - num_zeros)
    if eps_nonzero >= 1.0:
        return histogram
    return np.where(is_zero, eps_zero, histogram - eps_nonzero).astype(np.float32)


def _kl_divergence(reference: np.ndarray, candidate: np.ndarray) -> np.float32:
    """Glow's `computeKL`: D(P||Q) = sum P ln(P/Q) over bins where both are positive, after
    normalizing each; 0 when either is all zero."""
    sum_reference, sum_candidate = _sequential_sum(reference), _sequential_sum(candidate)
    if sum_reference == 0 or sum_candidate == 0:
        return np.float32(0)
    p, q = reference / sum_reference, candidate / sum_candidate
    both_positive = (p > 0) & (q > 0)
    safe_p, safe_q = np.where(both_positive, p, np.float32(1)), np.where(both_positive, q, np.float32(1))
    return _sequential_sum(np.where(both_positive, p * np.log(safe_p / safe_q), np.float32(0)))


def without_zero_spike(histogram, min_value: float, max_value: float) -> np.ndarray:
    """`histogram` (over [min_value, max_value], which holds 0) with the bin holding real 0
    given the mean count of its neighbours (TensorRT's `bins[0] = bins[1]`).

    The zeros a ReLU, zero padding or a pooled dead channel make pile up in that bin. Every
    range quantizes 0 exactly (it is the zero point), so that spike costs nothing in any
    window; left in, `optimize_kl` sees it spread over a merged quantized bin and prefers the
    windows narrow enough to keep one histogram bin per level (a ReLU output is then clipped
    to a quarter of its range with 2,048 bins).
    """
    counts = np.array(histogram, dtype=np.float32).ravel()
    if counts.size < 2 or not min_value <= 0 <= max_value or min_value == max_value:
        return counts
    width = (max_value - min_value) / counts.size
    zero = min(int(-min_value // width), counts.size - 1)
    neighbours = counts[max(zero - 1, 0):zero + 2]
    counts[zero] = (neighbours.sum() - counts[zero]) / (neighbours.size - 1)
    return counts


def squared_error(histogram, hist_min: float, hist_max: float, low: float, high: float, steps: int) -> float:
    """The mean squared error of quantizing the values of `histogram` (its bins over
    [hist_min, hist_max], each value at its bin's centre) to `steps` + 1 levels over [low, high]:
    the distance clipping moves a value, squared, plus the rounding noise scale^2 / 12.

    KL calibration keeps its window only where this error is clearly (`KL_MIN_GAIN`) lower
    than the whole range's: KL measures how well the quantized histogram keeps the shape of the bulk, and happily
    clips a long tail whose few values carry the signal (a HardSwish's large outputs feeding
    a convolution); the squared error weighs what clipping costs them."""
    counts = np.asarray(histogram, dtype=np.float64).ravel()
    if counts.size == 0 or counts.sum() <= 0:
        return 0.0
    centres = hist_min + (np.arange(counts.size) + 0.5) * ((hist_max - hist_min) / counts.size)
    clipping = centres - np.clip(centres, low, high)
    rounding = ((high - low) / steps) ** 2 / 12
    return float((counts * (clipping ** 2 + rounding)).sum() / counts.sum())


def _window_edge(hist_min: float, hist_max: float, bin_index: int, bin_width: float, num_bins: int) -> float:
    """Where bin `bin_index` starts: `hist_min + bin_index * bin_width` in float32, except that
    the histogram's own ends are exact (Glow's sum can miss `hist_max` by an ulp, so an
    unclipped window would still change the scale)."""
    if bin_index == num_bins:
        return hist_max
    return round_to_float32(hist_min + round_to_float32(bin_index * bin_width))


def optimize_kl(histogram, min_value: float, max_value: float, symmetric: bool) -> tuple[float, float]:
    """The sub-range of [min_value, max_value] whose 255-level quantization loses the least
    information about `histogram`: Glow's `optimizeKL` (Calibration.cpp).

    Slides a window over the bins, starting with all of them, while it spans at least 255 bins;
    keeps the window with the smallest KL divergence between the saturated histogram P and its
    255-bin approximation Q. Symmetric schemas shrink the window by one bin on each side and
    finally restore the input's min/max ratio (so the zero point stays 0); asymmetric ones drop
    the side (or both sides) losing the least mass. Fewer than 255 bins: the range unchanged.
    Bounds are float32 values, like Glow's `float` results.
    """
    counts = np.asarray(histogram, dtype=np.float32).ravel()
    hist_min, hist_max = round_to_float32(min_value), round_to_float32(max_value)
    num_bins = counts.size
    if num_bins < KL_QUANTIZED_BINS:
        return hist_min, hist_max
    if not hist_min < hist_max:
        raise ValueError(f"optimize_kl needs min < max, got [{hist_min}, {hist_max}]")
    if symmetric and not hist_min < 0 < hist_max:
        raise ValueError(f"symmetric optimize_kl needs min < 0 < max, got [{hist_min}, {hist_max}]")

    bin_width = round_to_float32(round_to_float32(hist_max - hist_min) / num_bins)
    prefix_sums = np.cumsum(counts, dtype=np.float32)
    best_divergence = np.float32(np.inf)
    best_min, best_max = hist_min, hist_max
    start, stop = 0, num_bins - 1
    while stop - start + 1 >= KL_QUANTIZED_BINS:
        reference = _saturated_window(counts, prefix_sums, start, stop)
        candidate = _quantized_approximation(counts[start:stop + 1], reference, KL_QUANTIZED_BINS)
        divergence = _kl_divergence(_conditioned(reference), _conditioned(candidate))
        if divergence < best_divergence:
            best_divergence = divergence
            best_min = _window_edge(hist_min, hist_max, start, bin_width, num_bins)
            best_max = _window_edge(hist_min, hist_max, stop + 1, bin_width, num_bins)
        if symmetric:
            start, stop = start + 1, stop - 1
            continue
        losses = (counts[start] + counts[stop], counts[start] + counts[start + 1], counts[stop] + counts[stop - 1])
        cheapest = int(np.argmin(losses))
        if cheapest == 0:
            start, stop = start + 1, stop - 1
        elif cheapest == 1:
            start += 2
        else:
            stop -= 2

    if symmetric:
        ratio_min, ratio_max = best_min / hist_min, best_max / hist_max
        if ratio_min > ratio_max:
            best_max = round_to_float32(ratio_min * hist_max)
        else:
            best_min = round_to_float32(ratio_max * hist_min)
    return best_min, best_max


# ----------------------------------------------------------------------------- quantize / dequantize

def _storage_dtype(precision: str):
    _quantized_range(precision)
    return _STORAGE_DTYPES[precision]


def _quantize_levels(values: np.ndarray, scales: np.ndarray, offsets: np.ndarray, precision: str) -> np.ndarray:
    """Glow's `quantize<DestTy>`: `float r = x / scale + offset`, `nearbyintf` (half to even),
    clipped to the storage type's limits (Glow clips to `DestTy`, so Int32 uses the full int32
    range here; `RANGES` only restricts the range parameters are chosen for; Int64 is clipped
    to its `RANGES`, as float64 cannot hold int64's own limits)."""
    dtype = _storage_dtype(precision)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        levels = np.rint(values / scales + offsets)
    if np.isnan(levels).any():
        raise ValueError("cannot quantize NaN")
    low, high = RANGES["Int64"] if dtype == np.int64 else (np.iinfo(dtype).min, np.iinfo(dtype).max)
    return np.clip(levels.astype(np.float64), low, high).astype(dtype)


def _channel_shape(values: np.ndarray, channel_params: np.ndarray, axis: int) -> tuple[int, ...]:
    if not -values.ndim <= axis < values.ndim:
        raise ValueError(f"channel axis {axis} out of range for a {values.ndim}-d tensor")
    if channel_params.shape != (values.shape[axis],):
        raise ValueError(f"expected {values.shape[axis]} per-channel parameters along axis {axis}, "
                         f"got shape {channel_params.shape}")
    shape = [1] * values.ndim
    shape[axis] = values.shape[axis]
    return tuple(shape)


def quantize(array, params: QuantParams, precision: str = "Int8") -> np.ndarray:
    """`clip(nearbyintf(x / scale + offset))` in float32, as int8/int16/int32 (Glow's `quantize`)."""
    return _quantize_levels(np.asarray(array, dtype=np.float32), np.float32(params.scale),
                            np.float32(params.offset), precision)


def quantize_per_channel(array, scales: np.ndarray, offsets: np.ndarray, axis: int,
                         precision: str = "Int8") -> np.ndarray:
    """`quantize` with one (scale, offset) per index along `axis` (Glow's channel-wise
    `quantizeTensor`, e.g. axis 0 of a [C_out, kH, kW, C_in] filter)."""
    values = np.asarray(array, dtype=np.float32)
    scales, offsets = np.asarray(scales, dtype=np.float32).ravel(), np.asarray(offsets).ravel()
    shape = _channel_shape(values, scales, axis)
    _channel_shape(values, offsets, axis)
    return _quantize_levels(values, scales.reshape(shape), offsets.astype(np.float32).reshape(shape), precision)


def dequantize(levels, params: QuantParams) -> np.ndarray:
    """`scale * (q - offset)` in float32 (Glow's `dequantize`, difference taken in int64)."""
    difference = np.asarray(levels).astype(np.int64) - params.offset
    return difference.astype(np.float32) * np.float32(params.scale)


def dequantize_per_channel(levels, scales: np.ndarray, offsets: np.ndarray, axis: int) -> np.ndarray:
    """`dequantize` with one (scale, offset) per index along `axis`."""
    levels = np.asarray(levels)
    scales, offsets = np.asarray(scales, dtype=np.float32).ravel(), np.asarray(offsets, dtype=np.int64).ravel()
    shape = _channel_shape(levels, scales, axis)
    _channel_shape(levels, offsets, axis)
    return (levels.astype(np.int64) - offsets.reshape(shape)).astype(np.float32) * scales.reshape(shape)


def dequantize_as(levels, element) -> np.ndarray:
    """`dequantize` by a quantized element type's parameters (`quant.UniformQuantizedType`):
    per channel along its axis, or per tensor."""
    if element.per_channel:
        return dequantize_per_channel(levels, element.scale_array(), element.offset_array(), element.axis.data)
    return dequantize(levels, QuantParams(element.scale, element.offset))


# ----------------------------------------------------------------------------- fixed-point requantization

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's `QuantizeMultiplier`: `real ≈ multiplier * 2^(shift - 31)`.

    `multiplier` is an int32 Q31 fraction in [2^30, 2^31 - 1] and `shift` the power of two to
    apply, positive meaning a left shift (CMSIS-NN's convention; range [-31, 30]). `(q, e) =
    frexp(real)`, `multiplier = round(q * 2^31)` (half away from zero); a multiplier of 2^31 is
    halved with `e + 1`; `e < -31` flushes to (0, 0); `e > 30` saturates to (2^31 - 1, 30) as
    current TFLite does. `real == 0` gives (0, 0). Negative or non-finite reals are rejected.
    """
    real = float(real)
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"quantize_multiplier needs a finite non-negative real, got {real!r}")
    if real == 0:
        return 0, 0
    fraction, exponent = math.frexp(real)
    multiplier = int(round_half_away_from_zero(fraction * (1 << 31)))
    if multiplier == 1 << 31:
        multiplier //= 2
        exponent += 1
    if exponent < -31:
        return 0, 0
    if exponent > 30:
        return _INT32_MAX, 30
    return multiplier, exponent


def multiplier_shift_arrays(reals) -> tuple[np.ndarray, np.ndarray]:
    """`quantize_multiplier` over an array: (multipliers, shifts) as int32 arrays of its shape."""
    reals = np.asarray(reals, dtype=np.float64)
    pairs = [quantize_multiplier(real) for real in reals.ravel()]
    multipliers = np.array([m for m, _ in pairs], dtype=np.int32).reshape(reals.shape)
    shifts = np.array([s for _, s in pairs], dtype=np.int32).reshape(reals.shape)
    return multipliers, shifts


def _as_int64(values, what: str, low: int, high: int) -> np.ndarray:
    array = np.asarray(values)
    if not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"requantize: {what} must be integers, got {array.dtype}")
    array = array.astype(np.int64)
    if array.size and (array.min() < low or array.max() > high):
        raise ValueError(f"requantize: {what} outside [{low}, {high}]")
    return array


def _wrap_int32(values: np.ndarray) -> np.ndarray:
    """Two's-complement truncation of int64 values to int32 (what a C cast to int32_t does)."""
    return ((values + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _doubling_high_mult_no_sat(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`arm_nn_doubling_high_mult_no_sat`: `(int32)(((int64)a * b + (1 << 30)) >> 31)`; the
    rounding term is always +2^30 (halves round towards +inf) and the shift is arithmetic."""
    return _wrap_int32((a * b + (1 << 30)) >> 31)


def _divide_by_power_of_two(dividend: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """`arm_nn_divide_by_power_of_two` (gemmlowp's RoundingDivideByPOT): arithmetic shift, then
    +1 when the remainder exceeds half the divisor, halves rounding away from zero."""
    mask = (np.int64(1) << exponent) - 1
    quotient = dividend >> exponent
    threshold = (mask >> 1) + (quotient < 0)
    return quotient + ((dividend & mask) > threshold)


def requantize(acc, multiplier, shift) -> np.ndarray:
    """CMSIS-NN's `arm_nn_requantize` (default, double-rounding branch), vectorized:
    `divide_by_power_of_two(doubling_high_mult_no_sat(acc * 2^max(shift, 0), multiplier),
    max(-shift, 0))`, i.e. `acc * multiplier * 2^(shift - 31)` rounded twice as TFLite does.

    `multiplier` and `shift` may be scalars or arrays broadcastable against `acc` (e.g. one per
    output channel). `acc * 2^shift` wraps modulo 2^32 like the C code. Returns int32.
    """
    acc = _as_int64(acc, "accumulators", _INT32_MIN, _INT32_MAX)
    multiplier = _as_int64(multiplier, "multipliers", _INT32_MIN, _INT32_MAX)
    shift = _as_int64(shift, "shifts", -31, 30)
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    scaled = _wrap_int32(acc << left)
    return _divide_by_power_of_two(_doubling_high_mult_no_sat(scaled, multiplier), right).astype(np.int32)
