/*
 * Host stand-ins for the CMSIS-NN int8 ("s8") functions glowmlir calls, FOR TESTS ONLY.
 *
 * Written for this project from the documented semantics of the CMSIS-NN v7 API
 * (bit-exact with TFLite(-Micro)'s int8 reference kernels); this is not Arm's code. It is
 * deliberately plain reference code: straightforward loops, 64-bit accumulation wrapped
 * to int32 the way the 32-bit accumulators of the library wrap, no vectorisation.
 *
 * Arithmetic (the library's default "double rounding" build; the shared TFLite int8 helpers
 * are in ../tflite_int8.h):
 *   requantize(v, m, s) = divide_by_power_of_two(doubling_high_mult_no_sat(v * 2^max(s, 0), m), max(-s, 0))
 *   doubling_high_mult_no_sat(a, b) = (int32)((a * b + 2^30) >> 31)          (64-bit product)
 *   divide_by_power_of_two(x, e)    = x / 2^e rounded half away from zero
 *   conv / depthwise: acc = bias[c] + sum (x + input_offset) * w   (padded taps contribute 0)
 *   fully connected:  acc = bias[c] + sum (x + input_offset) * (w + filter_offset)
 *   out = clamp(requantize(acc, mult, shift) + output_offset, act.min, act.max)
 *
 * Scratch buffers: each *_get_buffer_size returns what the library's plain DSP (Cortex-M4/M7,
 * non-MVE, GCC) build asks for, or, compiled with -DARM_MATH_MVEI, what its Helium (MVE,
 * Cortex-M55, GCC) build asks for; the rules are spelled out next to each getter, from the
 * library's arm_*_get_buffer_sizes_s8.c. Whenever that size is positive the stand-in
 * requires ctx->buf != NULL and ctx->size >= size, clears the first `size` bytes and uses
 * the buffer as its working memory (im2col columns, pooling sums) where it is large enough,
 * so a caller that under-plans the scratch fails. The Helium build's arm_fully_connected_s8
 * instead reads its context buffer: one int32 per output channel, the library's
 * arm_vector_sum_s8 of the weights (bias + input_offset x the row's weight sum), which
 * replaces the bias argument (ignored); the stand-in does the same.
 * tests/support/cmsis_nn/cmsis_nn_outputs.json holds what the real library returned for
 * both builds; tests/unit/test_cmsis_standins.py compares.
 *
 * Validation: every function returns ARM_CMSIS_NN_ARG_ERROR for arguments it cannot handle
 * (see the check_* helpers). This is deliberately stricter than the library, which mostly
 * trusts its caller, so that a mistake in the generated calls shows up in host tests.
 * arm_softmax_s8 returns void: on invalid arguments it writes nothing.
 */
#include "arm_nnfunctions.h"

/* As the library's arm_nn_math_types.h: a core with integer MVE gets the Helium build. */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1) && !defined(ARM_MATH_MVEI)
#define ARM_MATH_MVEI 1
#endif

#include "../tflite_int8.h"

#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------------ argument checks */

static int check_activation(const cmsis_nn_activation *act)
{
    return in_range(act->min, Q7_MIN, Q7_MAX) && in_range(act->max, Q7_MIN, Q7_MAX) && act->min <= act->max;
}

/* An input offset is -zero_point of an int8 tensor, an output offset +zero_point. */
static int check_input_offset(int32_t offset)
{
    return in_range(offset, -127, 128);
}

static int check_output_offset(int32_t offset)
{
    return in_range(offset, Q7_MIN, Q7_MAX);
}

static int check_requant(int32_t multiplier, int32_t shift)
{
    return multiplier != Q31_MIN && in_range(shift, -31, 30);
}

static int check_per_channel(const cmsis_nn_per_channel_quant_params *quant, int32_t channels)
{
    if (quant == NULL || quant->multiplier == NULL || quant->shift == NULL)
    {
        return 0;
    }
    for (int32_t c = 0; c < channels; c++)
    {
        if (!check_requant(quant->multiplier[c], quant->shift[c]))
        {
            return 0;
        }
    }
    return 1;
}

static int check_dims_positive(const cmsis_nn_dims *dims)
{
    return dims != NULL && dims->n >= 1 && dims->h >= 1 && dims->w >= 1 && dims->c >= 1;
}

/* One spatial axis of a windowed operation: positive sizes, stride and dilation >= 1,
 * padding >= 0, and an output no smaller than TFLite's / Glow's output size for some
 * non-negative far-side padding, i.e. the implied far-side padding
 * (out - 1) * stride + effective_kernel - in - pad is greater than -stride. */
static int check_axis(int32_t in, int32_t out, int32_t kernel, int32_t stride, int32_t pad, int32_t dilation)
{
    if (in < 1 || out < 1 || kernel < 1 || stride < 1 || pad < 0 || dilation < 1)
    {
        return 0;
    }
    const int64_t effective_kernel = (int64_t)(kernel - 1) * dilation + 1;
    const int64_t far_pad = (int64_t)(out - 1) * stride + effective_kernel - in - pad;
    return far_pad > -(int64_t)stride;
}

/* The scratch check shared by the functions taking a context. */
static int check_scratch(const cmsis_nn_context *ctx, int32_t required)
{
    if (ctx == NULL || required < 0)
    {
        return 0;
    }
    if (required > 0 && (ctx->buf == NULL || ctx->size < required))
    {
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ convolution */

/*
 * arm_convolve_wrapper_s8_get_buffer_size (DSP, non-MVE, GCC build of CMSIS-NN):
 *   - 1x1 kernel, padding 0, dilation 1, input_dims->c == filter_dims->c (not grouped), any
 *     stride: 0 (arm_convolve_1x1_s8_fast / arm_convolve_1x1_s8 need no scratch with GCC);
 *   - everything else (arm_convolve_1_x_n_s8 and arm_convolve_s8, which share the same
 *     DSP size): 2 * align4(KH * KW * input_dims->c) * sizeof(int16_t): two im2col columns
 *     of int16. input_dims->c (not C_IN / groups) as in the library's getter.
 * The grouped-1x1 case follows the current library (arm_nn_is_convolve_1x1 checks the
 * channel counts); v7.0.0's getter returned 0 there although its wrapper dispatches to
 * arm_convolve_s8, which requires a buffer.
 */
static int conv_is_1x1(const cmsis_nn_conv_params *conv_params,
                       const cmsis_nn_dims *input_dims,
                       const cmsis_nn_dims *filter_dims)
{
    return conv_params->padding.w == 0 && conv_params->padding.h == 0 && filter_dims->w == 1 && filter_dims->h == 1 &&
        conv_params->dilation.w == 1 && conv_params->dilation.h == 1 && input_dims->c == filter_dims->c;
}

#if !defined(ARM_MATH_MVEI)
static int32_t conv_im2col_size(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    const int32_t rhs_cols = filter_dims->h * filter_dims->w * input_dims->c;
    const int32_t aligned = (rhs_cols + 3) / 4 * 4;
    return 2 * aligned * (int32_t)sizeof(int16_t);
}
#endif

#if defined(ARM_MATH_MVEI)
/*
 * The Helium build (arm_convolve_wrapper_s8_get_buffer_size_mve):
 *   - 1x1 as above: 0;
 *   - 1 x N (input_dims->h == 1, filter_dims->h == 1, dilation.w == 1,
 *     stride.w * input_dims->c % 4 == 0, input_dims->c == filter_dims->c), when its left,
 *     right and unpadded output columns add up to output_dims->w: the larger of the
 *     left-padded and right-padded int8 windows (arm_convolve_1_x_n_s8_get_buffer_size_mve);
 *   - everything else: four int8 im2col columns of KH * KW * input_dims->c rounded up to 16
 *     (a Q register), arm_convolve_s8_get_buffer_size_mve.
 */
static int32_t conv_im2col_size_mve(const cmsis_nn_dims *input_dims, const cmsis_nn_dims *filter_dims)
{
    const int32_t lanes = (input_dims->c * filter_dims->w * filter_dims->h + 15) / 16;
    return 4 * lanes * 16;
}

static int32_t max32(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

static int32_t conv_1_x_n_size_mve(const cmsis_nn_conv_params *conv_params,
                                   const cmsis_nn_dims *input_dims,
                                   const cmsis_nn_dims *filter_dims,
                                   const cmsis_nn_dims *output_dims)
{
    const int32_t pad_x = conv_params->padding.w, stride_x = conv_params->stride.w;
    const int32_t kernel_x = filter_dims->w, output_x = output_dims->w;
    const int32_t asym_pad = ((output_x - 1) * stride_x + kernel_x - input_dims->w) % 2;
    const int32_t right = pad_x + asym_pad != 0 ? max32(1, (pad_x + asym_pad + stride_x - 1) / stride_x) : 0;
    const int32_t left = pad_x != 0 ? max32(1, (pad_x + stride_x - 1) / stride_x) : 0;
    const int32_t unpadded = max32(output_x - (right + left), 0);
    if (right + unpadded + left != output_x)
    {
        return conv_im2col_size_mve(input_dims, filter_dims);
    }
    const int32_t pad_size_left = pad_x * input_dims->c;
    const int32_t pad_size_right = asym_pad ? right * input_dims->c : pad_size_left;
    const int32_t elements_left = kernel_x * input_dims->c;
    return max32(elements_left + pad_size_left, elements_left - input_dims->c + pad_size_right);
}
#endif

int32_t arm_convolve_wrapper_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims,
                                                const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims)
{
    (void)output_dims;
    if (conv_is_1x1(conv_params, input_dims, filter_dims))
    {
        return 0;
    }
#if defined(ARM_MATH_MVEI)
    if (input_dims->h == 1 && conv_params->dilation.w == 1 && filter_dims->h == 1 &&
        (conv_params->stride.w * input_dims->c) % 4 == 0 && input_dims->c == filter_dims->c)
    {
        return conv_1_x_n_size_mve(conv_params, input_dims, filter_dims, output_dims);
    }
    return conv_im2col_size_mve(input_dims, filter_dims);
#else
    return conv_im2col_size(input_dims, filter_dims);
#endif
}

/* The input value of one convolution tap with the input offset added, or 0 for a tap in
 * the padding (padding stands for the real value 0, i.e. the zero point). */
static int32_t conv_tap(const int8_t *input, const cmsis_nn_dims *input_dims, int32_t batch, int32_t y, int32_t x,
                        int32_t channel, int32_t input_offset)
{
    if (y < 0 || y >= input_dims->h || x < 0 || x >= input_dims->w)
    {
        return 0;
    }
    const int64_t index = (((int64_t)batch * input_dims->h + y) * input_dims->w + x) * input_dims->c + channel;
    return (int32_t)input[index] + input_offset;
}

arm_cmsis_nn_status arm_convolve_wrapper_s8(const cmsis_nn_context *ctx,
                                            const cmsis_nn_conv_params *conv_params,
                                            const cmsis_nn_per_channel_quant_params *quant_params,
                                            const cmsis_nn_dims *input_dims,
                                            const int8_t *input_data,
                                            const cmsis_nn_dims *filter_dims,
                                            const int8_t *filter_data,
                                            const cmsis_nn_dims *bias_dims,
                                            const int32_t *bias_data,
                                            const cmsis_nn_dims *output_dims,
                                            int8_t *output_data)
{
    (void)bias_dims; /* unused by the library too; bias_data may be NULL (no bias) */
    if (conv_params == NULL || !check_dims_positive(input_dims) || !check_dims_positive(filter_dims) ||
        !check_dims_positive(output_dims) || input_data == NULL || filter_data == NULL || output_data == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t in_ch = input_dims->c;
    const int32_t group_ch = filter_dims->c; /* input channels per group */
    const int32_t out_ch = output_dims->c;
    if (in_ch % group_ch != 0)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t groups = in_ch / group_ch;
    if (filter_dims->n != out_ch || out_ch % groups != 0 || output_dims->n != input_dims->n)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t out_ch_per_group = out_ch / groups;
    if (!check_axis(input_dims->h, output_dims->h, filter_dims->h, conv_params->stride.h, conv_params->padding.h,
                    conv_params->dilation.h) ||
        !check_axis(input_dims->w, output_dims->w, filter_dims->w, conv_params->stride.w, conv_params->padding.w,
                    conv_params->dilation.w))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (!check_input_offset(conv_params->input_offset) || !check_output_offset(conv_params->output_offset) ||
        !check_activation(&conv_params->activation) || !check_per_channel(quant_params, out_ch))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t scratch_size =
        arm_convolve_wrapper_s8_get_buffer_size(conv_params, input_dims, filter_dims, output_dims);
    if (!check_scratch(ctx, scratch_size))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }

    /* General path: the scratch holds the im2col column of one output pixel and group,
     * (x + input_offset) as int16 in filter order (ky, kx, channel). */
    int16_t *column = NULL;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t column_length = kh * kw * group_ch;
    if (scratch_size > 0)
    {
        memset(ctx->buf, 0, (size_t)scratch_size);
        if (scratch_size >= column_length * (int32_t)sizeof(int16_t))
        {
            column = (int16_t *)ctx->buf;
        }
    }

    for (int32_t b = 0; b < input_dims->n; b++)
    {
        for (int32_t oy = 0; oy < output_dims->h; oy++)
        {
            for (int32_t ox = 0; ox < output_dims->w; ox++)
            {
                const int32_t y0 = oy * conv_params->stride.h - conv_params->padding.h;
                const int32_t x0 = ox * conv_params->stride.w - conv_params->padding.w;
                for (int32_t g = 0; g < groups; g++)
                {
                    if (column != NULL)
                    {
                        for (int32_t ky = 0; ky < kh; ky++)
                        {
                            for (int32_t kx = 0; kx < kw; kx++)
                            {
                                for (int32_t ci = 0; ci < group_ch; ci++)
                                {
                                    column[(ky * kw + kx) * group_ch + ci] =
                                        (int16_t)conv_tap(input_data, input_dims, b, y0 + ky * conv_params->dilation.h,
                                                          x0 + kx * conv_params->dilation.w, g * group_ch + ci,
                                                          conv_params->input_offset);
                                }
                            }
                        }
                    }
                    for (int32_t oc = g * out_ch_per_group; oc < (g + 1) * out_ch_per_group; oc++)
                    {
                        int64_t acc = bias_data != NULL ? bias_data[oc] : 0;
                        const int8_t *weights = filter_data + (int64_t)oc * column_length;
                        for (int32_t ky = 0; ky < kh; ky++)
                        {
                            for (int32_t kx = 0; kx < kw; kx++)
                            {
                                for (int32_t ci = 0; ci < group_ch; ci++)
                                {
                                    const int32_t k = (ky * kw + kx) * group_ch + ci;
                                    const int32_t tap = column != NULL
                                        ? column[k]
                                        : conv_tap(input_data, input_dims, b, y0 + ky * conv_params->dilation.h,
                                                   x0 + kx * conv_params->dilation.w, g * group_ch + ci,
                                                   conv_params->input_offset);
                                    acc += (int64_t)tap * weights[k];
                                }
                            }
                        }
                        const int64_t index = (((int64_t)b * output_dims->h + oy) * output_dims->w + ox) * out_ch + oc;
                        output_data[index] = requantize_to_int8(wrap32(acc), quant_params->multiplier[oc],
                                                                quant_params->shift[oc], conv_params->output_offset,
                                                                conv_params->activation.min,
                                                                conv_params->activation.max);
                    }
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------ depthwise convolution */

/*
 * arm_depthwise_conv_wrapper_s8_get_buffer_size (DSP, non-MVE build of CMSIS-NN):
 *   - input_dims->c == output_dims->c (ch_mult 1), batch 1, dilation 1:
 *       3x3 kernel with padding.h <= 1 and padding.w <= 1 -> 0 (arm_depthwise_conv_3x3_s8);
 *       otherwise C_IN * KH * KW * sizeof(int16_t)             (arm_depthwise_conv_s8_opt);
 *   - everything else -> 0 (generic arm_depthwise_conv_s8).
 */
/*
 * The Helium build (arm_depthwise_conv_wrapper_s8_get_buffer_size with ARM_MATH_MVEI, GCC):
 *   - one input channel and more than CONVERT_DW_CONV_WITH_ONE_INPUT_CH_AND_OUTPUT_CH_ABOVE_THRESHOLD
 *     (1 with GCC) output channels: the convolution it becomes, i.e. the Helium convolution
 *     size of filter {C_OUT, KH, KW, 1} plus C_OUT * KH * KW bytes of re-laid-out weights;
 *   - ch_mult 1, batch 1, dilation 1 (3x3 included): 4 * CH_IN_BLOCK_MVE (124) * KH * KW;
 *   - everything else: 0.
 */
int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                      const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims,
                                                      const cmsis_nn_dims *output_dims)
{
#if defined(ARM_MATH_MVEI)
    if (input_dims->c == 1 && output_dims->c > 1)
    {
        const cmsis_nn_dims conv_filter = {filter_dims->c, filter_dims->h, filter_dims->w, filter_dims->n};
        const cmsis_nn_conv_params conv = {dw_conv_params->input_offset, dw_conv_params->output_offset,
                                           dw_conv_params->stride, dw_conv_params->padding,
                                           dw_conv_params->dilation, dw_conv_params->activation};
        return arm_convolve_wrapper_s8_get_buffer_size(&conv, input_dims, &conv_filter, output_dims) +
            filter_dims->c * filter_dims->h * filter_dims->w * filter_dims->n;
    }
    if (input_dims->c == output_dims->c && input_dims->n == 1 && dw_conv_params->dilation.w == 1 &&
        dw_conv_params->dilation.h == 1)
    {
        return 4 * 124 * filter_dims->w * filter_dims->h;
    }
    return 0;
#endif
    if (input_dims->c == output_dims->c && input_dims->n == 1 && dw_conv_params->dilation.w == 1 &&
        dw_conv_params->dilation.h == 1)
    {
        if (filter_dims->w == 3 && filter_dims->h == 3 && dw_conv_params->padding.h <= 1 &&
            dw_conv_params->padding.w <= 1)
        {
            return 0;
        }
        return input_dims->c * filter_dims->w * filter_dims->h * (int32_t)sizeof(int16_t);
    }
    return 0;
}

arm_cmsis_nn_status arm_depthwise_conv_wrapper_s8(const cmsis_nn_context *ctx,
                                                  const cmsis_nn_dw_conv_params *dw_conv_params,
                                                  const cmsis_nn_per_channel_quant_params *quant_params,
                                                  const cmsis_nn_dims *input_dims,
                                                  const int8_t *input_data,
                                                  const cmsis_nn_dims *filter_dims,
                                                  const int8_t *filter_data,
                                                  const cmsis_nn_dims *bias_dims,
                                                  const int32_t *bias_data,
                                                  const cmsis_nn_dims *output_dims,
                                                  int8_t *output_data)
{
    (void)bias_dims;
    if (dw_conv_params == NULL || !check_dims_positive(input_dims) || !check_dims_positive(filter_dims) ||
        !check_dims_positive(output_dims) || input_data == NULL || filter_data == NULL || output_data == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    /* Batch 1 only (the optimised paths assume it); filter [1, KH, KW, C_OUT]. */
    const int32_t in_ch = input_dims->c, out_ch = output_dims->c, ch_mult = dw_conv_params->ch_mult;
    if (input_dims->n != 1 || output_dims->n != 1 || filter_dims->n != 1 || ch_mult < 1 ||
        out_ch != in_ch * ch_mult || filter_dims->c != out_ch)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (!check_axis(input_dims->h, output_dims->h, filter_dims->h, dw_conv_params->stride.h,
                    dw_conv_params->padding.h, dw_conv_params->dilation.h) ||
        !check_axis(input_dims->w, output_dims->w, filter_dims->w, dw_conv_params->stride.w,
                    dw_conv_params->padding.w, dw_conv_params->dilation.w))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (!check_input_offset(dw_conv_params->input_offset) || !check_output_offset(dw_conv_params->output_offset) ||
        !check_activation(&dw_conv_params->activation) || !check_per_channel(quant_params, out_ch))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t scratch_size =
        arm_depthwise_conv_wrapper_s8_get_buffer_size(dw_conv_params, input_dims, filter_dims, output_dims);
    if (!check_scratch(ctx, scratch_size))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }

    /* Optimised path: the scratch holds the im2col patch of one output pixel,
     * (x + input_offset) as int16 in (ky, kx, input channel) order. */
    int16_t *patch = NULL;
    if (scratch_size > 0)
    {
        memset(ctx->buf, 0, (size_t)scratch_size);
        if (scratch_size >= filter_dims->h * filter_dims->w * in_ch * (int32_t)sizeof(int16_t))
        {
            patch = (int16_t *)ctx->buf;
        }
    }

    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    for (int32_t oy = 0; oy < output_dims->h; oy++)
    {
        for (int32_t ox = 0; ox < output_dims->w; ox++)
        {
            const int32_t y0 = oy * dw_conv_params->stride.h - dw_conv_params->padding.h;
            const int32_t x0 = ox * dw_conv_params->stride.w - dw_conv_params->padding.w;
            if (patch != NULL)
            {
                for (int32_t ky = 0; ky < kh; ky++)
                {
                    for (int32_t kx = 0; kx < kw; kx++)
                    {
                        for (int32_t ic = 0; ic < in_ch; ic++)
                        {
                            patch[(ky * kw + kx) * in_ch + ic] =
                                (int16_t)conv_tap(input_data, input_dims, 0, y0 + ky * dw_conv_params->dilation.h,
                                                  x0 + kx * dw_conv_params->dilation.w, ic,
                                                  dw_conv_params->input_offset);
                        }
                    }
                }
            }
            for (int32_t oc = 0; oc < out_ch; oc++)
            {
                const int32_t ic = oc / ch_mult;
                int64_t acc = bias_data != NULL ? bias_data[oc] : 0;
                for (int32_t ky = 0; ky < kh; ky++)
                {
                    for (int32_t kx = 0; kx < kw; kx++)
                    {
                        const int32_t tap = patch != NULL
                            ? patch[(ky * kw + kx) * in_ch + ic]
                            : conv_tap(input_data, input_dims, 0, y0 + ky * dw_conv_params->dilation.h,
                                       x0 + kx * dw_conv_params->dilation.w, ic, dw_conv_params->input_offset);
                        acc += (int64_t)tap * filter_data[(ky * kw + kx) * out_ch + oc];
                    }
                }
                output_data[((int64_t)oy * output_dims->w + ox) * out_ch + oc] = requantize_to_int8(
                    wrap32(acc), quant_params->multiplier[oc], quant_params->shift[oc], dw_conv_params->output_offset,
                    dw_conv_params->activation.min, dw_conv_params->activation.max);
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------ fully connected */

/* arm_fully_connected_s8_get_buffer_size: 0 on the DSP build; C_OUT * 4 on the Helium
 * build, which takes the kernel sums there (see the top of this file). */
int32_t arm_fully_connected_s8_get_buffer_size(const cmsis_nn_dims *filter_dims)
{
#if defined(ARM_MATH_MVEI)
    return filter_dims->c * (int32_t)sizeof(int32_t);
#else
    (void)filter_dims;
    return 0;
#endif
}

/*
 * input_dims: n = batches, h * w * c = accumulation depth (the input is read as
 * [n][accum_depth]); filter_dims: n = accumulation depth, c = output depth;
 * output_dims: n = batches, c = output depth. Weights [C_OUT][accum_depth].
 */
arm_cmsis_nn_status arm_fully_connected_s8(const cmsis_nn_context *ctx,
                                           const cmsis_nn_fc_params *fc_params,
                                           const cmsis_nn_per_tensor_quant_params *quant_params,
                                           const cmsis_nn_dims *input_dims,
                                           const int8_t *input_data,
                                           const cmsis_nn_dims *filter_dims,
                                           const int8_t *filter_data,
                                           const cmsis_nn_dims *bias_dims,
                                           const int32_t *bias_data,
                                           const cmsis_nn_dims *output_dims,
                                           int8_t *output_data)
{
    (void)bias_dims;
    if (fc_params == NULL || quant_params == NULL || !check_dims_positive(input_dims) || filter_dims == NULL ||
        output_dims == NULL || input_data == NULL || filter_data == NULL || output_data == NULL)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t batches = input_dims->n;
    const int32_t depth = filter_dims->n;
    const int32_t out_ch = output_dims->c;
    if (depth < 1 || out_ch < 1 || (int64_t)input_dims->h * input_dims->w * input_dims->c != depth ||
        filter_dims->c != out_ch || output_dims->n != batches)
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (!check_input_offset(fc_params->input_offset) || !check_input_offset(fc_params->filter_offset) ||
        !check_output_offset(fc_params->output_offset) || !check_activation(&fc_params->activation) ||
        !check_requant(quant_params->multiplier, quant_params->shift))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    if (!check_scratch(ctx, arm_fully_connected_s8_get_buffer_size(filter_dims)))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }

    for (int32_t b = 0; b < batches; b++)
    {
        const int8_t *x = input_data + (int64_t)b * depth;
        for (int32_t oc = 0; oc < out_ch; oc++)
        {
            const int8_t *w = filter_data + (int64_t)oc * depth;
#if defined(ARM_MATH_MVEI)
            (void)bias_data;
            int64_t acc = ((const int32_t *)ctx->buf)[oc];
            for (int32_t k = 0; k < depth; k++)
            {
                acc += (int64_t)x[k] * ((int64_t)w[k] + fc_params->filter_offset);
            }
#else
            int64_t acc = bias_data != NULL ? bias_data[oc] : 0;
            for (int32_t k = 0; k < depth; k++)
            {
                acc += ((int64_t)x[k] + fc_params->input_offset) * ((int64_t)w[k] + fc_params->filter_offset);
            }
#endif
            output_data[(int64_t)b * out_ch + oc] =
                requantize_to_int8(wrap32(acc), quant_params->multiplier, quant_params->shift, fc_params->output_offset,
                                   fc_params->activation.min, fc_params->activation.max);
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------ pooling */

static int check_pool(const cmsis_nn_pool_params *pool_params,
                      const cmsis_nn_dims *input_dims,
                      const int8_t *input_data,
                      const cmsis_nn_dims *filter_dims,
                      const cmsis_nn_dims *output_dims,
                      const int8_t *output_data)
{
    if (pool_params == NULL || !check_dims_positive(input_dims) || filter_dims == NULL || output_dims == NULL ||
        input_data == NULL || output_data == NULL)
    {
        return 0;
    }
    /* Only filter h and w are used; the channel count is preserved. */
    if (output_dims->n != input_dims->n || output_dims->c != input_dims->c)
    {
        return 0;
    }
    return check_axis(input_dims->h, output_dims->h, filter_dims->h, pool_params->stride.h, pool_params->padding.h,
                      1) &&
        check_axis(input_dims->w, output_dims->w, filter_dims->w, pool_params->stride.w, pool_params->padding.w, 1) &&
        check_activation(&pool_params->activation);
}

/* Max pool: the maximum over the in-bounds taps (padding is ignored), then the activation
 * clamp. No scratch (ctx is not used and may be NULL). A window without an in-bounds tap is
 * an error. */
arm_cmsis_nn_status arm_max_pool_s8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_pool_params *pool_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data)
{
    (void)ctx;
    if (!check_pool(pool_params, input_dims, input_data, filter_dims, output_dims, output_data))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t in_h = input_dims->h, in_w = input_dims->w, ch = input_dims->c;
    const int32_t out_h = output_dims->h, out_w = output_dims->w;
    for (int32_t b = 0; b < input_dims->n; b++)
    {
        for (int32_t oy = 0; oy < out_h; oy++)
        {
            int32_t y_start, y_end;
            window_bounds(oy, pool_params->stride.h, pool_params->padding.h, filter_dims->h, in_h, &y_start, &y_end);
            for (int32_t ox = 0; ox < out_w; ox++)
            {
                int32_t x_start, x_end;
                window_bounds(ox, pool_params->stride.w, pool_params->padding.w, filter_dims->w, in_w, &x_start,
                              &x_end);
                if (y_start >= y_end || x_start >= x_end)
                {
                    return ARM_CMSIS_NN_ARG_ERROR;
                }
                for (int32_t c = 0; c < ch; c++)
                {
                    int32_t max = Q7_MIN;
                    for (int32_t y = y_start; y < y_end; y++)
                    {
                        for (int32_t x = x_start; x < x_end; x++)
                        {
                            const int32_t value = input_data[(((int64_t)b * in_h + y) * in_w + x) * ch + c];
                            max = value > max ? value : max;
                        }
                    }
                    output_data[(((int64_t)b * out_h + oy) * out_w + ox) * ch + c] =
                        (int8_t)clamp(max, pool_params->activation.min, pool_params->activation.max);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* arm_avgpool_s8_get_buffer_size: on the DSP build ch_src * sizeof(int32_t), one int32 sum
 * per channel (the output width does not matter); 0 on the Helium build. */
int32_t arm_avgpool_s8_get_buffer_size(const int dim_dst_width, const int ch_src)
{
    (void)dim_dst_width;
#if defined(ARM_MATH_MVEI)
    (void)ch_src;
    return 0; /* the Helium build keeps its sums in vector registers */
#else
    return ch_src * (int32_t)sizeof(int32_t);
#endif
}

/* Average pool: the sum of the in-bounds taps (padding is not counted), divided by their
 * number rounding half away from zero, then the activation clamp. The per-channel sums of
 * one output pixel live in the scratch buffer. A window without an in-bounds tap is an
 * error. */
arm_cmsis_nn_status arm_avgpool_s8(const cmsis_nn_context *ctx,
                                   const cmsis_nn_pool_params *pool_params,
                                   const cmsis_nn_dims *input_dims,
                                   const int8_t *input_data,
                                   const cmsis_nn_dims *filter_dims,
                                   const cmsis_nn_dims *output_dims,
                                   int8_t *output_data)
{
    if (!check_pool(pool_params, input_dims, input_data, filter_dims, output_dims, output_data))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    const int32_t scratch_size = arm_avgpool_s8_get_buffer_size(output_dims->w, input_dims->c);
    if (!check_scratch(ctx, scratch_size))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    int32_t *sums = NULL; /* the per-channel sums of one output pixel, where the build asks for them */
    if (scratch_size > 0)
    {
        memset(ctx->buf, 0, (size_t)scratch_size);
        sums = (int32_t *)ctx->buf;
    }

    const int32_t in_h = input_dims->h, in_w = input_dims->w, ch = input_dims->c;
    const int32_t out_h = output_dims->h, out_w = output_dims->w;
    for (int32_t b = 0; b < input_dims->n; b++)
    {
        for (int32_t oy = 0; oy < out_h; oy++)
        {
            int32_t y_start, y_end;
            window_bounds(oy, pool_params->stride.h, pool_params->padding.h, filter_dims->h, in_h, &y_start, &y_end);
            for (int32_t ox = 0; ox < out_w; ox++)
            {
                int32_t x_start, x_end;
                window_bounds(ox, pool_params->stride.w, pool_params->padding.w, filter_dims->w, in_w, &x_start,
                              &x_end);
                if (y_start >= y_end || x_start >= x_end)
                {
                    return ARM_CMSIS_NN_ARG_ERROR;
                }
                const int32_t count = (y_end - y_start) * (x_end - x_start);
                for (int32_t c = 0; c < ch; c++)
                {
                    int32_t sum = 0;
                    for (int32_t y = y_start; y < y_end; y++)
                    {
                        for (int32_t x = x_start; x < x_end; x++)
                        {
                            sum += input_data[(((int64_t)b * in_h + y) * in_w + x) * ch + c];
                        }
                    }
                    if (sums != NULL)
                    {
                        sums[c] = sum;
                    }
                    output_data[(((int64_t)b * out_h + oy) * out_w + ox) * ch + c] = (int8_t)clamp(
                        rounded_average(sum, count), pool_params->activation.min, pool_params->activation.max);
                }
            }
        }
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* ------------------------------------------------------------------ softmax */

/*
 * CMSIS-NN arm_softmax_s8 (TFLite int8 softmax, output scale 1/256 and zero point -128):
 * softmax_row of ../tflite_int8.h on each of the num_rows rows of row_size entries: with
 * diff = x - max(row), entries with diff < diff_min give -128; the others give
 * exp(diff) / sum(exp) computed with ACCUM_BITS = 12 fractional bits for the sum. The
 * final rounding shift (12 - headroom + 23) exceeds 31 for rows whose exponent sum reaches
 * 2^28 (512 or more entries, e.g. ~512 tied at the maximum). That shift is undefined in the
 * library's C; what the library does there when built by GCC for a Cortex-M (where a shift
 * by a register amount >= 32 gives 0, or the sign for an arithmetic shift) is what this
 * stand-in does: its rounding division returns 1, so every entry not below diff_min is
 * -127 (arm_softmax_s8_outputs.json: outputs of the real library on the M7 under QEMU).
 * Requires shift in [0, 30] (TFLite's QuantizeMultiplierGreaterThanOne), num_rows >= 0 and
 * row_size >= 1; otherwise nothing is written.
 */
/* The row's maximum if its sum of exponents (12 fractional bits) reaches 2^28, so that the
 * library divides by 2^32 or more; else INT32_MIN. */
static int32_t softmax_oversized_shift_max(const int8_t *input, int32_t length, int32_t mult, int32_t shift,
                                           int32_t diff_min)
{
    int32_t max = input[0];
    for (int32_t i = 1; i < length; i++)
    {
        max = input[i] > max ? input[i] : max;
    }
    int64_t sum = 0;
    for (int32_t i = 0; i < length; i++)
    {
        const int32_t e = softmax_exp(input[i] - max, mult, shift, diff_min);
        sum += e >= 0 ? divide_by_power_of_two(e, SOFTMAX_ACCUM_BITS) : 0;
    }
    return sum >= ((int64_t)1 << 28) ? max : INT32_MIN;
}

void arm_softmax_s8(const int8_t *input,
                    const int32_t num_rows,
                    const int32_t row_size,
                    const int32_t mult,
                    const int32_t shift,
                    const int32_t diff_min,
                    int8_t *output)
{
    if (input == NULL || output == NULL || num_rows < 0 || row_size < 1 || shift < 0 || shift > 30)
    {
        return;
    }
    for (int32_t row = 0; row < num_rows; row++)
    {
        /* no scratch: the output pass recomputes the exps from the input */
        const int8_t *row_input = input + (int64_t)row * row_size;
        int8_t *row_output = output + (int64_t)row * row_size;
        const int32_t max = softmax_oversized_shift_max(row_input, row_size, mult, shift, diff_min);
        if (max != INT32_MIN)
        {
            for (int32_t i = 0; i < row_size; i++) /* the library's rounding division by 2^32+ gives 1 */
            {
                row_output[i] = (int8_t)(row_input[i] - max >= diff_min ? Q7_MIN + 1 : Q7_MIN);
            }
            continue;
        }
        softmax_row(row_input, row_output, row_size, mult, shift, diff_min, NULL);
    }
}

/* ------------------------------------------------------------------ elementwise */

/*
 * Add (TFLite int8 Add): each input (x + offset) << left_shift, requantized with its own
 * multiplier/shift, summed, requantized with the output multiplier/shift, + out_offset,
 * clamped. Element counts: block_size, no broadcasting. left_shift in [0, 23] (so that
 * (x + offset) << left_shift fits in int32; TFLite uses 20).
 */
arm_cmsis_nn_status arm_elementwise_add_s8(const int8_t *input_1_vect,
                                           const int8_t *input_2_vect,
                                           const int32_t input_1_offset,
                                           const int32_t input_1_mult,
                                           const int32_t input_1_shift,
                                           const int32_t input_2_offset,
                                           const int32_t input_2_mult,
                                           const int32_t input_2_shift,
                                           const int32_t left_shift,
                                           int8_t *output,
                                           const int32_t out_offset,
                                           const int32_t out_mult,
                                           const int32_t out_shift,
                                           const int32_t out_activation_min,
                                           const int32_t out_activation_max,
                                           const int32_t block_size)
{
    const cmsis_nn_activation act = {out_activation_min, out_activation_max};
    if (input_1_vect == NULL || input_2_vect == NULL || output == NULL || block_size < 0 ||
        !check_input_offset(input_1_offset) || !check_input_offset(input_2_offset) ||
        !check_output_offset(out_offset) || !check_requant(input_1_mult, input_1_shift) ||
        !check_requant(input_2_mult, input_2_shift) || !check_requant(out_mult, out_shift) ||
        !in_range(left_shift, 0, 23) || !check_activation(&act))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    for (int32_t i = 0; i < block_size; i++)
    {
        const int32_t sum =
            wrap32((int64_t)add_input(input_1_vect[i], input_1_offset, left_shift, input_1_mult, input_1_shift) +
                   add_input(input_2_vect[i], input_2_offset, left_shift, input_2_mult, input_2_shift));
        output[i] = requantize_to_int8(sum, out_mult, out_shift, out_offset, out_activation_min, out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}

/* Mul (TFLite int8 Mul): (x1 + offset1) * (x2 + offset2), requantized, + out_offset,
 * clamped. block_size elements, no broadcasting. */
arm_cmsis_nn_status arm_elementwise_mul_s8(const int8_t *input_1_vect,
                                           const int8_t *input_2_vect,
                                           const int32_t input_1_offset,
                                           const int32_t input_2_offset,
                                           int8_t *output,
                                           const int32_t out_offset,
                                           const int32_t out_mult,
                                           const int32_t out_shift,
                                           const int32_t out_activation_min,
                                           const int32_t out_activation_max,
                                           const int32_t block_size)
{
    const cmsis_nn_activation act = {out_activation_min, out_activation_max};
    if (input_1_vect == NULL || input_2_vect == NULL || output == NULL || block_size < 0 ||
        !check_input_offset(input_1_offset) || !check_input_offset(input_2_offset) ||
        !check_output_offset(out_offset) || !check_requant(out_mult, out_shift) || !check_activation(&act))
    {
        return ARM_CMSIS_NN_ARG_ERROR;
    }
    for (int32_t i = 0; i < block_size; i++)
    {
        const int32_t product =
            ((int32_t)input_1_vect[i] + input_1_offset) * ((int32_t)input_2_vect[i] + input_2_offset);
        output[i] =
            requantize_to_int8(product, out_mult, out_shift, out_offset, out_activation_min, out_activation_max);
    }
    return ARM_CMSIS_NN_SUCCESS;
}
