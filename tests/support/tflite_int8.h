/*
 * TFLite int8 reference arithmetic shared by the host stand-ins of the kernel libraries,
 * FOR TESTS ONLY: cmsis_nn/standins.c (CMSIS-NN s8 functions) and hifi4/standins.c (HiFi 4
 * NNLib xa_nn functions) include it as "../tflite_int8.h", relative to their own directory,
 * so that they build with no extra -I flag (HostRunner's `link`, run_on_board's `link`).
 *
 * Written for this project from the documented semantics (gemmlowp's fixed-point
 * functions, TFLite(-Micro)'s int8 reference kernels, CMSIS-NN's arm_nn_* support
 * functions); this is not Arm's, Cadence's or Google's code. Deliberately plain reference
 * code: 64-bit intermediate values wrapped to int32 the way 32-bit hardware wraps.
 *
 * Requantization (TFLite MultiplyByQuantizedMultiplier as CMSIS-NN's arm_nn_requantize,
 * the default "double rounding" build):
 *   requantize(v, m, s) = divide_by_power_of_two(doubling_high_mult_no_sat(v * 2^max(s, 0), m), max(-s, 0))
 *   doubling_high_mult_no_sat(a, b) = (int32)((a * b + 2^30) >> 31)          (64-bit product)
 *   divide_by_power_of_two(x, e)    = x / 2^e rounded half away from zero
 *
 * Softmax (TFLite int8 softmax, output scale 1/256 and zero point -128): gemmlowp's
 * saturating doubling_high_mult, exp_on_negative_values, one_over_one_plus_x_for_x_in_0_1,
 * mult_by_power_of_two and a CLZ, combined by softmax_row.
 *
 * Every function is static inline: each stand-in is one translation unit and uses what it
 * needs. Argument validation stays in the stand-ins (the libraries' rules differ).
 */
#ifndef GLOWMLIR_TESTS_TFLITE_INT8_H
#define GLOWMLIR_TESTS_TFLITE_INT8_H

#include <stddef.h>
#include <stdint.h>

#define Q7_MIN (-128)
#define Q7_MAX 127
#define Q31_MIN ((int32_t)0x80000000)
#define Q31_MAX ((int32_t)0x7FFFFFFF)

/* ------------------------------------------------------------------ integer helpers */

/* Two's-complement truncation of a 64-bit value to int32 (what 32-bit hardware does). */
static inline int32_t wrap32(int64_t value)
{
    return (int32_t)(uint32_t)(uint64_t)value;
}

static inline int32_t clamp(int32_t value, int32_t low, int32_t high)
{
    if (value < low)
    {
        return low;
    }
    if (value > high)
    {
        return high;
    }
    return value;
}

static inline int in_range(int32_t value, int32_t low, int32_t high)
{
    return value >= low && value <= high;
}

/* ------------------------------------------------------------------ requantization */

/* (a * b + 2^30) >> 31 on the 64-bit product, arithmetic shift: the rounding term is always
 * +2^30 (CMSIS-NN arm_nn_doubling_high_mult_no_sat, used for requantization). */
static inline int32_t doubling_high_mult_no_sat(int32_t a, int32_t b)
{
    const int64_t product = (int64_t)a * (int64_t)b + ((int64_t)1 << 30);
    return wrap32(product >> 31);
}

/* gemmlowp SaturatingRoundingDoublingHighMul (CMSIS-NN arm_nn_doubling_high_mult): the
 * rounding term is 2^30 for a non-negative product and 1 - 2^30 for a negative one, the
 * division by 2^31 truncates toward zero, INT32_MIN * INT32_MIN saturates (used by
 * softmax). */
static inline int32_t doubling_high_mult(int32_t a, int32_t b)
{
    if (a == Q31_MIN && b == Q31_MIN)
    {
        return Q31_MAX;
    }
    const int64_t nudge = ((a < 0) != (b < 0)) ? 1 - ((int64_t)1 << 30) : ((int64_t)1 << 30);
    return wrap32(((int64_t)a * (int64_t)b + nudge) / ((int64_t)1 << 31));
}

/* x / 2^exponent, rounding half away from zero (gemmlowp RoundingDivideByPOT), for an
 * exponent in [0, 62]; for int32 values and exponents up to 31 this is exactly CMSIS-NN's
 * arm_nn_divide_by_power_of_two. */
static inline int64_t divide_by_power_of_two(int64_t dividend, int32_t exponent)
{
    const int64_t mask = ((int64_t)1 << exponent) - 1;
    const int64_t remainder = dividend & mask;
    int64_t result = dividend >> exponent; /* floor */
    int64_t threshold = mask >> 1;
    if (result < 0)
    {
        threshold += 1;
    }
    if (remainder > threshold)
    {
        result += 1;
    }
    return result;
}

/* TFLite MultiplyByQuantizedMultiplier as CMSIS-NN's arm_nn_requantize (double rounding);
 * shift in [-31, 30], positive = left. The left shift wraps like an int32 multiply. */
static inline int32_t requantize(int32_t value, int32_t multiplier, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t scaled = wrap32((int64_t)value * ((int64_t)1 << left));
    return (int32_t)divide_by_power_of_two(doubling_high_mult_no_sat(scaled, multiplier), right);
}

/* The int8 output of an int32 accumulator: clamp(requantize(acc) + output_offset, low, high),
 * the offset being +zero_point of the output and [low, high] the activation range (the
 * whole int8 range where a library has no activation clamp). */
static inline int8_t requantize_to_int8(int32_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                                        int32_t low, int32_t high)
{
    return (int8_t)clamp(requantize(acc, multiplier, shift) + output_offset, low, high);
}

/* ------------------------------------------------------------------ element-wise */

/* One input of TFLite's int8 Add: (x + offset) << left_shift, requantized with the input's
 * own multiplier / shift (offset = -zero_point, left_shift in [0, 23] so that the shifted
 * value fits in int32; TFLite uses 20). The output is
 * requantize_to_int8(wrap32(add_input(x1) + add_input(x2)), output multiplier, ...). */
static inline int32_t add_input(int8_t value, int32_t offset, int32_t left_shift, int32_t multiplier, int32_t shift)
{
    return requantize(((int32_t)value + offset) * (1 << left_shift), multiplier, shift);
}

/* ------------------------------------------------------------------ pooling */

/* The in-bounds part [start, end) of the pooling window of output position `out_index`
 * along one axis (the window starts at out_index * stride - pad and spans `kernel`). */
static inline void window_bounds(int32_t out_index, int32_t stride, int32_t pad, int32_t kernel, int32_t in_size,
                                 int32_t *start, int32_t *end)
{
    const int32_t first = out_index * stride - pad;
    *start = first < 0 ? 0 : first;
    *end = first + kernel < in_size ? first + kernel : in_size;
}

/* The average of `count` >= 1 in-bounds taps summing to `sum`, rounding half away from
 * zero (TFLite's int8 average pool; padding is not counted). */
static inline int32_t rounded_average(int32_t sum, int32_t count)
{
    return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

/* ------------------------------------------------------------------ softmax */

#define SOFTMAX_ACCUM_BITS 12

/* value * 2^exponent saturated to int32 (gemmlowp SaturatingRoundingMultiplyByPOT for a
 * positive exponent, CMSIS-NN arm_nn_mult_by_power_of_two), exponent in [0, 30]. */
static inline int32_t mult_by_power_of_two(int32_t value, int32_t exponent)
{
    const int32_t threshold = (int32_t)(((int64_t)1 << (31 - exponent)) - 1);
    if (value > threshold)
    {
        return Q31_MAX;
    }
    if (value < -threshold)
    {
        return Q31_MIN;
    }
    return wrap32((int64_t)value * ((int64_t)1 << exponent));
}

/* exp(x) in Q0.31 of a Q5.26 value x <= 0 (gemmlowp exp_on_negative_values, 5 integer
 * bits): exp on [-1/4, 0) by a polynomial around -1/8, times exp(-2^k / 4) for each set
 * bit k of the remaining integer multiple of 1/4. Never negative. */
static inline int32_t exp_on_negative_values(int32_t value)
{
    const int32_t quarter_bits = 24; /* 1/4 in Q5.26 */
    const int32_t mod_minus_quarter = (value & ((1 << quarter_bits) - 1)) - (1 << quarter_bits);
    const int32_t remainder = mod_minus_quarter - value;

    /* exp(t - 1/8) with t = mod_minus_quarter + 1/8, in Q0.31 */
    const int32_t x = wrap32((int64_t)mod_minus_quarter * 32 + (1 << 28));
    const int32_t x2 = doubling_high_mult(x, x);
    const int32_t x3 = doubling_high_mult(x2, x);
    const int32_t x4_over_4 = (int32_t)divide_by_power_of_two(doubling_high_mult(x2, x2), 2);
    const int32_t x4_over_24_plus_x3_over_6_plus_x2_over_2 = (int32_t)divide_by_power_of_two(
        wrap32((int64_t)doubling_high_mult(wrap32((int64_t)x4_over_4 + x3), 715827883) + x2), 1);
    const int32_t exp_minus_one_eighth = 1895147668;
    int32_t result = wrap32((int64_t)exp_minus_one_eighth +
                            doubling_high_mult(exp_minus_one_eighth,
                                               wrap32((int64_t)x + x4_over_24_plus_x3_over_6_plus_x2_over_2)));

    /* exp(-1/4), exp(-1/2), exp(-1), exp(-2), exp(-4), exp(-8), exp(-16) in Q0.31 */
    static const int32_t barrel[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    for (int32_t k = 0; k < 7; k++)
    {
        if (remainder & (1 << (quarter_bits + k)))
        {
            result = doubling_high_mult(result, barrel[k]);
        }
    }
    return value == 0 ? Q31_MAX : result;
}

/* 1 / (1 + x) in Q0.31 for x in [0, 1) in Q0.31 (gemmlowp one_over_one_plus_x_for_x_in_0_1):
 * three Newton-Raphson steps on the half denominator. */
static inline int32_t one_over_one_plus_x_for_x_in_0_1(int32_t value)
{
    const int64_t sum = (int64_t)value + Q31_MAX;
    const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    int32_t x = wrap32((int64_t)1515870810 + doubling_high_mult(half_denominator, -1010580540)); /* 48/17, -32/17 */
    const int32_t one_quarter = 1 << 29;
    for (int32_t step = 0; step < 3; step++)
    {
        const int32_t error = wrap32((int64_t)one_quarter - doubling_high_mult(half_denominator, x));
        x = wrap32((int64_t)x + mult_by_power_of_two(doubling_high_mult(x, error), 2));
    }
    return mult_by_power_of_two(x, 1);
}

static inline int32_t count_leading_zeros(uint32_t value)
{
    int32_t zeros = 0;
    for (uint32_t bit = 0x80000000u; bit != 0 && (value & bit) == 0; bit >>= 1)
    {
        zeros++;
    }
    return zeros; /* 32 for 0, like the CLZ instruction */
}

/* exp(diff) in Q0.31 of a softmax input difference diff = x - row max (<= 0), or -1 for
 * diff < diff_min (such entries do not take part). The difference is scaled to Q5.26 as
 * the libraries do: doubling_high_mult(diff * 2^shift, mult). */
static inline int32_t softmax_exp(int32_t diff, int32_t mult, int32_t shift, int32_t diff_min)
{
    if (diff < diff_min)
    {
        return -1;
    }
    return exp_on_negative_values(doubling_high_mult(wrap32((int64_t)diff * ((int64_t)1 << shift)), mult));
}

/*
 * TFLite int8 softmax of ONE row of `length` >= 1 elements (= CMSIS-NN arm_softmax_s8 for
 * one row), output scale 1/256 and zero point -128. With diff = x - max(row): entries with
 * diff < diff_min give -128; the others exp(diff) / sum(exp), with the input difference
 * scaled to Q5.26 by (mult, shift) (shift in [0, 30], TFLite's
 * QuantizeMultiplierGreaterThanOne) and ACCUM_BITS = 12 fractional bits for the sum. The
 * final rounding shift (12 - headroom + 23) exceeds 31 only for rows whose sum reaches 2^28
 * (more than ~512 entries tied at the maximum; undefined in the libraries' C): there the
 * exact rounded quotient is used.
 * `exps`: NULL, or working memory for `length` int32 that receives the exp of each entry
 * (-1 for entries below diff_min); the output pass then reads `exps` instead of
 * recomputing from `input`, so input and output may be the same buffer. The result is the
 * same either way.
 */
static inline void softmax_row(const int8_t *input, int8_t *output, int32_t length, int32_t mult, int32_t shift,
                               int32_t diff_min, int32_t *exps)
{
    int32_t max = input[0];
    for (int32_t i = 1; i < length; i++)
    {
        max = input[i] > max ? input[i] : max;
    }

    int32_t sum = 0;
    for (int32_t i = 0; i < length; i++)
    {
        const int32_t e = softmax_exp(input[i] - max, mult, shift, diff_min);
        if (exps != NULL)
        {
            exps[i] = e;
        }
        if (e >= 0)
        {
            sum = wrap32((int64_t)sum + divide_by_power_of_two(e, SOFTMAX_ACCUM_BITS));
        }
    }

    const int32_t headroom = count_leading_zeros((uint32_t)sum);
    const int32_t normalized = sum > 0 ? wrap32((int64_t)sum << headroom) : 0;
    const int32_t shifted_scale = one_over_one_plus_x_for_x_in_0_1(wrap32((int64_t)normalized - Q31_MIN));
    const int32_t bits_over_unit = SOFTMAX_ACCUM_BITS - headroom + 23;

    for (int32_t i = 0; i < length; i++)
    {
        const int32_t e = exps != NULL ? exps[i] : softmax_exp(input[i] - max, mult, shift, diff_min);
        if (e >= 0)
        {
            const int64_t level = divide_by_power_of_two(doubling_high_mult(shifted_scale, e), bits_over_unit);
            output[i] = (int8_t)clamp((int32_t)(level + Q7_MIN), Q7_MIN, Q7_MAX);
        }
        else
        {
            output[i] = Q7_MIN;
        }
    }
}

#endif /* GLOWMLIR_TESTS_TFLITE_INT8_H */
