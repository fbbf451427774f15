/*
 * Host stand-ins for the Cadence HiFi 4 NN library (xa_nnlib) int8 functions glowmlir
 * calls, FOR TESTS ONLY.
 *
 * Written for this project from the documented semantics of the xa_nnlib 4.x API (TFLite
 * int8 reference arithmetic); this is not Cadence's code and contains none of it. It is
 * deliberately plain reference code: straightforward loops, 64-bit accumulation wrapped to
 * int32 the way 32-bit accumulators wrap, no vectorisation.
 *
 * Arithmetic (TFLite MultiplyByQuantizedMultiplier, double rounding, written exactly as
 * CMSIS-NN's arm_nn_requantize; the shared TFLite int8 helpers are in ../tflite_int8.h):
 *   requantize(v, m, s) = divide_by_power_of_two(doubling_high_mult_no_sat(v * 2^max(s, 0), m), max(-s, 0))
 *   doubling_high_mult_no_sat(a, b) = (int32)((a * b + 2^30) >> 31)          (64-bit product)
 *   divide_by_power_of_two(x, e)    = x / 2^e rounded half away from zero
 *   conv / depthwise: acc = bias[c] + sum (x + input_zero_bias) * w  (padded taps contribute 0)
 *   fully connected:  acc = bias[o] + sum (x + input_zero_bias) * w
 *   out = clamp(requantize(acc, mult, shift) + out_zero_bias, -128, 127)   (no activation clamp)
 *
 * Layouts: NHWC activations without a batch dimension (one image per call), conv kernel
 * OHWI, depthwise kernel [kh][kw][input_channels * channels_multiplier] (output channel
 * ic * channels_multiplier + m reads input channel ic), FC weights [out_depth][weight_depth].
 * Padding arguments are the top/left pads; the bottom/right pads are implied by the output
 * size. Only out_data_format / inp_data_format 0 (NHWC) is supported; anything else is -1.
 *
 * Scratch buffers. Each *_getsize returns a fixed documented rule (below, next to each
 * getter), always ending in "+ 8": the kernels align p_scratch up to ALIGNMENT = 8 bytes
 * internally, as the library does, so the caller may pass any alignment. Every kernel whose
 * getsize is positive requires p_scratch != NULL (-1 otherwise), first clears exactly
 * getsize bytes from p_scratch and then uses the aligned part as its working memory (an
 * int16 im2col patch, an int32 row of pooling accumulators, the int32 exps of softmax), so
 * the planned size is really exercised and a NULL scratch fails.
 *
 * Validation: every function returns -1 for arguments it cannot handle (see the check_*
 * helpers): NULL data pointers, non-positive sizes, strides < 1, negative pads, an output
 * size the geometry cannot produce or a window lying entirely in the padding, zero biases
 * outside [-127, 128] (inputs) or [-128, 127] (outputs), negative multipliers, shifts
 * outside [-31, 30], activation bounds outside the int8 range or min > max, data formats
 * other than 0. This is deliberately stricter than the library so that a mistake in the
 * generated calls shows up in host tests. Kernels check everything before writing anything.
 */
#include "xa_nnlib_kernels_api.h"

#include "../tflite_int8.h"

#include <stddef.h>
#include <string.h>

#define ALIGNMENT 8
#define ALIGN_UP(value) (((value) + (ALIGNMENT - 1)) / ALIGNMENT * ALIGNMENT)

#define OK 0
#define BAD (-1)

/* ------------------------------------------------------------------ argument checks */

/* input_zero_bias is -zero_point of an int8 tensor, out_zero_bias +zero_point. */
static int check_input_zero_bias(int32_t zero_bias)
{
    return in_range(zero_bias, -127, 128);
}

static int check_output_zero_bias(int32_t zero_bias)
{
    return in_range(zero_bias, Q7_MIN, Q7_MAX);
}

/* A QuantizeMultiplier pair: multiplier >= 0 (Q31), shift in [-31, 30]. */
static int check_requant(int32_t multiplier, int32_t shift)
{
    return multiplier >= 0 && in_range(shift, -31, 30);
}

static int check_per_channel(const int32_t *multiplier, const int32_t *shift, int32_t channels)
{
    if (multiplier == NULL || shift == NULL)
    {
        return 0;
    }
    for (int32_t c = 0; c < channels; c++)
    {
        if (!check_requant(multiplier[c], shift[c]))
        {
            return 0;
        }
    }
    return 1;
}

static int check_activation(int32_t low, int32_t high)
{
    return in_range(low, Q7_MIN, Q7_MAX) && in_range(high, Q7_MIN, Q7_MAX) && low <= high;
}

/* One spatial axis of a windowed operation (conv, depthwise, pools): positive sizes,
 * stride >= 1, padding >= 0, and an output size the geometry can produce with some
 * non-negative far-side padding, every window overlapping the input:
 *   - the implied far-side padding (out - 1) * stride + kernel - in - pad is > -stride
 *     (the output is not smaller than TFLite's output size for that padding);
 *   - pad < kernel (the first window holds an input tap) and (out - 1) * stride - pad < in
 *     (so does the last, hence every window).
 * TFLite's SAME / VALID paddings always satisfy this; a window lying entirely in the
 * padding is rejected. */
static int check_axis(int32_t in, int32_t out, int32_t kernel, int32_t stride, int32_t pad)
{
    if (in < 1 || out < 1 || kernel < 1 || stride < 1 || pad < 0 || pad >= kernel)
    {
        return 0;
    }
    const int64_t far_pad = (int64_t)(out - 1) * stride + kernel - in - pad;
    return far_pad > -(int64_t)stride && (int64_t)(out - 1) * stride - pad < in;
}

/* The first byte at or after `scratch` aligned to ALIGNMENT. */
static void *align_scratch(void *scratch)
{
    const uintptr_t address = (uintptr_t)scratch;
    return (void *)((address + (ALIGNMENT - 1)) & ~(uintptr_t)(ALIGNMENT - 1));
}

/* (x + zero_bias) of NHWC tap (y, x, c), or 0 for a tap in the padding (padding stands for
 * the real value 0, i.e. the zero point). */
static int32_t conv_tap(const int8_t *input, int32_t height, int32_t width, int32_t channels, int32_t y, int32_t x,
                        int32_t c, int32_t zero_bias)
{
    if (y < 0 || y >= height || x < 0 || x >= width)
    {
        return 0;
    }
    return (int32_t)input[((int64_t)y * width + x) * channels + c] + zero_bias;
}

/* ------------------------------------------------------------------ standard convolution */

/*
 * Scratch rule of xa_nn_conv2d_std_getsize:
 *     ALIGN_UP(input_channels * kernel_height * kernel_width * 2, 8) + 8
 * = one int16 im2col patch of one output pixel ((x + input_zero_bias) of every tap and input
 * channel, in kernel order ky, kx, ic), plus 8 bytes for aligning p_scratch.
 * Returns -1 unless: all sizes / strides >= 1, paddings >= 0, kernel_channels ==
 * input_channels (standard, ungrouped conv), input_precision PREC_ASYM8S, kernel_precision
 * PREC_SYM8S, dilation 1 x 1 (the std kernel has no dilation), out_data_format 0.
 */
static int32_t conv_std_scratch_bytes(int32_t input_channels, int32_t kernel_height, int32_t kernel_width)
{
    return ALIGN_UP(input_channels * kernel_height * kernel_width * (int32_t)sizeof(int16_t)) + ALIGNMENT;
}

WORD32 xa_nn_conv2d_std_getsize(WORD32 input_height,
                                WORD32 input_width,
                                WORD32 input_channels,
                                WORD32 kernel_height,
                                WORD32 kernel_width,
                                WORD32 kernel_channels,
                                WORD32 y_stride,
                                WORD32 y_padding,
                                WORD32 x_stride,
                                WORD32 x_padding,
                                WORD32 out_height,
                                WORD32 out_width,
                                WORD32 output_channels,
                                WORD32 input_precision,
                                WORD32 kernel_precision,
                                WORD32 dilation_height,
                                WORD32 dilation_width,
                                WORD32 out_data_format)
{
    if (input_height < 1 || input_width < 1 || input_channels < 1 || kernel_height < 1 || kernel_width < 1 ||
        kernel_channels != input_channels || y_stride < 1 || x_stride < 1 || y_padding < 0 || x_padding < 0 ||
        out_height < 1 || out_width < 1 || output_channels < 1 || input_precision != PREC_ASYM8S ||
        kernel_precision != PREC_SYM8S || dilation_height != 1 || dilation_width != 1 || out_data_format != 0)
    {
        return BAD;
    }
    return conv_std_scratch_bytes(input_channels, kernel_height, kernel_width);
}

WORD32 xa_nn_conv2d_std_per_chan_sym8sxasym8s(WORD8 *__restrict__ p_out,
                                              const WORD8 *__restrict__ p_inp,
                                              const WORD8 *__restrict__ p_kernel,
                                              const WORD32 *__restrict__ p_bias,
                                              WORD32 input_height,
                                              WORD32 input_width,
                                              WORD32 input_channels,
                                              WORD32 kernel_height,
                                              WORD32 kernel_width,
                                              WORD32 out_channels,
                                              WORD32 x_stride,
                                              WORD32 y_stride,
                                              WORD32 x_padding,
                                              WORD32 y_padding,
                                              WORD32 out_height,
                                              WORD32 out_width,
                                              WORD32 input_zero_bias,
                                              WORD32 *p_out_multiplier,
                                              WORD32 *p_out_shift,
                                              WORD32 out_zero_bias,
                                              WORD32 out_data_format,
                                              VOID *p_scratch)
{
    if (p_out == NULL || p_inp == NULL || p_kernel == NULL || p_scratch == NULL || input_channels < 1 ||
        out_channels < 1 || out_data_format != 0 ||
        !check_axis(input_height, out_height, kernel_height, y_stride, y_padding) ||
        !check_axis(input_width, out_width, kernel_width, x_stride, x_padding) ||
        !check_input_zero_bias(input_zero_bias) || !check_output_zero_bias(out_zero_bias) ||
        !check_per_channel(p_out_multiplier, p_out_shift, out_channels))
    {
        return BAD;
    }
    memset(p_scratch, 0, (size_t)conv_std_scratch_bytes(input_channels, kernel_height, kernel_width));
    int16_t *patch = (int16_t *)align_scratch(p_scratch);
    const int32_t patch_length = kernel_height * kernel_width * input_channels;

    for (int32_t oy = 0; oy < out_height; oy++)
    {
        for (int32_t ox = 0; ox < out_width; ox++)
        {
            const int32_t y0 = oy * y_stride - y_padding;
            const int32_t x0 = ox * x_stride - x_padding;
            for (int32_t ky = 0; ky < kernel_height; ky++)
            {
                for (int32_t kx = 0; kx < kernel_width; kx++)
                {
                    for (int32_t ic = 0; ic < input_channels; ic++)
                    {
                        patch[(ky * kernel_width + kx) * input_channels + ic] = (int16_t)conv_tap(
                            p_inp, input_height, input_width, input_channels, y0 + ky, x0 + kx, ic, input_zero_bias);
                    }
                }
            }
            for (int32_t oc = 0; oc < out_channels; oc++)
            {
                const int8_t *weights = p_kernel + (int64_t)oc * patch_length;
                int64_t acc = p_bias != NULL ? p_bias[oc] : 0;
                for (int32_t k = 0; k < patch_length; k++)
                {
                    acc += (int64_t)patch[k] * weights[k];
                }
                p_out[((int64_t)oy * out_width + ox) * out_channels + oc] = requantize_to_int8(
                    wrap32(acc), p_out_multiplier[oc], p_out_shift[oc], out_zero_bias, Q7_MIN, Q7_MAX);
            }
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ depthwise convolution */

/*
 * Scratch rule of xa_nn_conv2d_depthwise_getsize:
 *     ALIGN_UP(input_channels * kernel_height * kernel_width * 2, 8) + 8
 * = one int16 patch of one output pixel ((x + input_zero_bias) of every tap and input
 * channel, in order ky, kx, ic), plus 8 bytes for aligning p_scratch. channels_multiplier
 * does not matter (the patch holds input channels). Returns -1 unless: all sizes / strides
 * >= 1, paddings >= 0, circ_buf_precision PREC_ASYM8S, inp_data_format 0.
 */
static int32_t conv_depthwise_scratch_bytes(int32_t input_channels, int32_t kernel_height, int32_t kernel_width)
{
    return ALIGN_UP(input_channels * kernel_height * kernel_width * (int32_t)sizeof(int16_t)) + ALIGNMENT;
}

WORD32 xa_nn_conv2d_depthwise_getsize(WORD32 input_height,
                                      WORD32 input_width,
                                      WORD32 input_channels,
                                      WORD32 kernel_height,
                                      WORD32 kernel_width,
                                      WORD32 channels_multiplier,
                                      WORD32 x_stride,
                                      WORD32 y_stride,
                                      WORD32 x_padding,
                                      WORD32 y_padding,
                                      WORD32 output_height,
                                      WORD32 output_width,
                                      WORD32 circ_buf_precision,
                                      WORD32 inp_data_format)
{
    if (input_height < 1 || input_width < 1 || input_channels < 1 || kernel_height < 1 || kernel_width < 1 ||
        channels_multiplier < 1 || x_stride < 1 || y_stride < 1 || x_padding < 0 || y_padding < 0 ||
        output_height < 1 || output_width < 1 || circ_buf_precision != PREC_ASYM8S || inp_data_format != 0)
    {
        return BAD;
    }
    return conv_depthwise_scratch_bytes(input_channels, kernel_height, kernel_width);
}

WORD32 xa_nn_conv2d_depthwise_per_chan_sym8sxasym8s(pWORD8 __restrict__ p_out,
                                                    const WORD8 *__restrict__ p_kernel,
                                                    const WORD8 *__restrict__ p_inp,
                                                    const WORD32 *__restrict__ p_bias,
                                                    WORD32 input_height,
                                                    WORD32 input_width,
                                                    WORD32 input_channels,
                                                    WORD32 kernel_height,
                                                    WORD32 kernel_width,
                                                    WORD32 channels_multiplier,
                                                    WORD32 x_stride,
                                                    WORD32 y_stride,
                                                    WORD32 x_padding,
                                                    WORD32 y_padding,
                                                    WORD32 out_height,
                                                    WORD32 out_width,
                                                    WORD32 input_zero_bias,
                                                    const WORD32 *p_out_multiplier,
                                                    const WORD32 *p_out_shift,
                                                    WORD32 out_zero_bias,
                                                    WORD32 inp_data_format,
                                                    WORD32 out_data_format,
                                                    pVOID p_scratch)
{
    if (p_out == NULL || p_kernel == NULL || p_inp == NULL || p_scratch == NULL || input_channels < 1 ||
        channels_multiplier < 1 || inp_data_format != 0 || out_data_format != 0 ||
        !check_axis(input_height, out_height, kernel_height, y_stride, y_padding) ||
        !check_axis(input_width, out_width, kernel_width, x_stride, x_padding) ||
        !check_input_zero_bias(input_zero_bias) || !check_output_zero_bias(out_zero_bias))
    {
        return BAD;
    }
    const int32_t out_channels = input_channels * channels_multiplier;
    if (!check_per_channel(p_out_multiplier, p_out_shift, out_channels))
    {
        return BAD;
    }
    memset(p_scratch, 0, (size_t)conv_depthwise_scratch_bytes(input_channels, kernel_height, kernel_width));
    int16_t *patch = (int16_t *)align_scratch(p_scratch);

    for (int32_t oy = 0; oy < out_height; oy++)
    {
        for (int32_t ox = 0; ox < out_width; ox++)
        {
            const int32_t y0 = oy * y_stride - y_padding;
            const int32_t x0 = ox * x_stride - x_padding;
            for (int32_t ky = 0; ky < kernel_height; ky++)
            {
                for (int32_t kx = 0; kx < kernel_width; kx++)
                {
                    for (int32_t ic = 0; ic < input_channels; ic++)
                    {
                        patch[(ky * kernel_width + kx) * input_channels + ic] = (int16_t)conv_tap(
                            p_inp, input_height, input_width, input_channels, y0 + ky, x0 + kx, ic, input_zero_bias);
                    }
                }
            }
            for (int32_t oc = 0; oc < out_channels; oc++)
            {
                const int32_t ic = oc / channels_multiplier;
                int64_t acc = p_bias != NULL ? p_bias[oc] : 0;
                for (int32_t ky = 0; ky < kernel_height; ky++)
                {
                    for (int32_t kx = 0; kx < kernel_width; kx++)
                    {
                        acc += (int64_t)patch[(ky * kernel_width + kx) * input_channels + ic] *
                            p_kernel[(ky * kernel_width + kx) * out_channels + oc];
                    }
                }
                p_out[((int64_t)oy * out_width + ox) * out_channels + oc] = requantize_to_int8(
                    wrap32(acc), p_out_multiplier[oc], p_out_shift[oc], out_zero_bias, Q7_MIN, Q7_MAX);
            }
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ fully connected */

/* One input vector [weight_depth] -> [out_depth]; no scratch, no activation clamp. */
WORD32 xa_nn_fully_connected_sym8sxasym8s_asym8s(pWORD8 __restrict__ p_out,
                                                 const WORD8 *__restrict__ p_weight,
                                                 const WORD8 *__restrict__ p_inp,
                                                 const WORD32 *__restrict__ p_bias,
                                                 WORD32 weight_depth,
                                                 WORD32 out_depth,
                                                 WORD32 input_zero_bias,
                                                 WORD32 out_multiplier,
                                                 WORD32 out_shift,
                                                 WORD32 out_zero_bias)
{
    if (p_out == NULL || p_weight == NULL || p_inp == NULL || weight_depth < 1 || out_depth < 1 ||
        !check_input_zero_bias(input_zero_bias) || !check_output_zero_bias(out_zero_bias) ||
        !check_requant(out_multiplier, out_shift))
    {
        return BAD;
    }
    for (int32_t o = 0; o < out_depth; o++)
    {
        const int8_t *w = p_weight + (int64_t)o * weight_depth;
        int64_t acc = p_bias != NULL ? p_bias[o] : 0;
        for (int32_t k = 0; k < weight_depth; k++)
        {
            acc += ((int64_t)p_inp[k] + input_zero_bias) * w[k];
        }
        p_out[o] = requantize_to_int8(wrap32(acc), out_multiplier, out_shift, out_zero_bias, Q7_MIN, Q7_MAX);
    }
    return OK;
}

/* ------------------------------------------------------------------ pooling */

/*
 * Scratch rule of xa_nn_maxpool_getsize and xa_nn_avgpool_getsize (the same rule):
 *     out_width * input_channels * 4 + 8
 * = one int32 accumulator (running max or sum) per channel of one output row, plus 8 bytes
 * for aligning p_scratch. Returns -1 unless: all sizes / strides >= 1, paddings >= 0,
 * inp_precision == out_precision, either PREC_8 or PREC_ASYM8S (int8 pooling keeps the
 * scale and zero point, so the plain 8-bit kernels serve int8), both data formats 0.
 */
static int32_t pool_scratch_bytes(int32_t out_width, int32_t input_channels)
{
    return out_width * input_channels * (int32_t)sizeof(int32_t) + ALIGNMENT;
}

static WORD32 pool_getsize(WORD32 input_channels, WORD32 inp_precision, WORD32 out_precision, WORD32 input_height,
                           WORD32 input_width, WORD32 kernel_height, WORD32 kernel_width, WORD32 x_stride,
                           WORD32 y_stride, WORD32 x_padding, WORD32 y_padding, WORD32 out_height, WORD32 out_width,
                           WORD32 inp_data_format, WORD32 out_data_format)
{
    if (input_channels < 1 || (inp_precision != PREC_8 && inp_precision != PREC_ASYM8S) ||
        out_precision != inp_precision || input_height < 1 || input_width < 1 || kernel_height < 1 ||
        kernel_width < 1 || x_stride < 1 || y_stride < 1 || x_padding < 0 || y_padding < 0 || out_height < 1 ||
        out_width < 1 || inp_data_format != 0 || out_data_format != 0)
    {
        return BAD;
    }
    return pool_scratch_bytes(out_width, input_channels);
}

WORD32 xa_nn_maxpool_getsize(WORD32 input_channels,
                             WORD32 inp_precision,
                             WORD32 out_precision,
                             WORD32 input_height,
                             WORD32 input_width,
                             WORD32 kernel_height,
                             WORD32 kernel_width,
                             WORD32 x_stride,
                             WORD32 y_stride,
                             WORD32 x_padding,
                             WORD32 y_padding,
                             WORD32 out_height,
                             WORD32 out_width,
                             WORD32 inp_data_format,
                             WORD32 out_data_format)
{
    return pool_getsize(input_channels, inp_precision, out_precision, input_height, input_width, kernel_height,
                        kernel_width, x_stride, y_stride, x_padding, y_padding, out_height, out_width,
                        inp_data_format, out_data_format);
}

WORD32 xa_nn_avgpool_getsize(WORD32 input_channels,
                             WORD32 inp_precision,
                             WORD32 out_precision,
                             WORD32 input_height,
                             WORD32 input_width,
                             WORD32 kernel_height,
                             WORD32 kernel_width,
                             WORD32 x_stride,
                             WORD32 y_stride,
                             WORD32 x_padding,
                             WORD32 y_padding,
                             WORD32 out_height,
                             WORD32 out_width,
                             WORD32 inp_data_format,
                             WORD32 out_data_format)
{
    return pool_getsize(input_channels, inp_precision, out_precision, input_height, input_width, kernel_height,
                        kernel_width, x_stride, y_stride, x_padding, y_padding, out_height, out_width,
                        inp_data_format, out_data_format);
}

/* Arguments of both pools (check_axis guarantees at least one in-bounds tap per window). */
static int check_pool(const WORD8 *p_out, const WORD8 *p_inp, WORD32 input_height, WORD32 input_width,
                      WORD32 input_channels, WORD32 kernel_height, WORD32 kernel_width, WORD32 x_stride,
                      WORD32 y_stride, WORD32 x_padding, WORD32 y_padding, WORD32 out_height, WORD32 out_width,
                      WORD32 inp_data_format, WORD32 out_data_format, const VOID *p_scratch)
{
    return p_out != NULL && p_inp != NULL && p_scratch != NULL && input_channels >= 1 && inp_data_format == 0 &&
        out_data_format == 0 && check_axis(input_height, out_height, kernel_height, y_stride, y_padding) &&
        check_axis(input_width, out_width, kernel_width, x_stride, x_padding);
}

/* The shared pooling loop: per output row, the int32 row accumulator in the scratch takes
 * the running max (is_max) or the sum of the in-bounds taps, then each output is the max, or
 * the sum divided by the number of in-bounds taps rounding half away from zero (TFLite). */
static WORD32 pool_8(int is_max, WORD8 *p_out, const WORD8 *p_inp, WORD32 input_height, WORD32 input_width,
                     WORD32 input_channels, WORD32 kernel_height, WORD32 kernel_width, WORD32 x_stride,
                     WORD32 y_stride, WORD32 x_padding, WORD32 y_padding, WORD32 out_height, WORD32 out_width,
                     WORD32 inp_data_format, WORD32 out_data_format, VOID *p_scratch)
{
    if (!check_pool(p_out, p_inp, input_height, input_width, input_channels, kernel_height, kernel_width, x_stride,
                    y_stride, x_padding, y_padding, out_height, out_width, inp_data_format, out_data_format,
                    p_scratch))
    {
        return BAD;
    }
    memset(p_scratch, 0, (size_t)pool_scratch_bytes(out_width, input_channels));
    int32_t *row = (int32_t *)align_scratch(p_scratch);
    const int32_t channels = input_channels;

    for (int32_t oy = 0; oy < out_height; oy++)
    {
        int32_t y_start, y_end;
        window_bounds(oy, y_stride, y_padding, kernel_height, input_height, &y_start, &y_end);
        for (int32_t i = 0; i < out_width * channels; i++)
        {
            row[i] = is_max ? Q7_MIN : 0;
        }
        for (int32_t ox = 0; ox < out_width; ox++)
        {
            int32_t x_start, x_end;
            window_bounds(ox, x_stride, x_padding, kernel_width, input_width, &x_start, &x_end);
            int32_t *acc = row + (int64_t)ox * channels;
            for (int32_t y = y_start; y < y_end; y++)
            {
                for (int32_t x = x_start; x < x_end; x++)
                {
                    const int8_t *tap = p_inp + ((int64_t)y * input_width + x) * channels;
                    for (int32_t c = 0; c < channels; c++)
                    {
                        if (is_max)
                        {
                            acc[c] = tap[c] > acc[c] ? tap[c] : acc[c];
                        }
                        else
                        {
                            acc[c] += tap[c];
                        }
                    }
                }
            }
            const int32_t count = (y_end - y_start) * (x_end - x_start);
            for (int32_t c = 0; c < channels; c++)
            {
                const int32_t value = is_max ? acc[c] : rounded_average(acc[c], count);
                p_out[((int64_t)oy * out_width + ox) * channels + c] = (int8_t)clamp(value, Q7_MIN, Q7_MAX);
            }
        }
    }
    return OK;
}

WORD32 xa_nn_maxpool_8(WORD8 *__restrict__ p_out,
                       const WORD8 *__restrict__ p_inp,
                       WORD32 input_height,
                       WORD32 input_width,
                       WORD32 input_channels,
                       WORD32 kernel_height,
                       WORD32 kernel_width,
                       WORD32 x_stride,
                       WORD32 y_stride,
                       WORD32 x_padding,
                       WORD32 y_padding,
                       WORD32 out_height,
                       WORD32 out_width,
                       WORD32 inp_data_format,
                       WORD32 out_data_format,
                       VOID *p_scratch)
{
    return pool_8(1, p_out, p_inp, input_height, input_width, input_channels, kernel_height, kernel_width, x_stride,
                  y_stride, x_padding, y_padding, out_height, out_width, inp_data_format, out_data_format, p_scratch);
}

WORD32 xa_nn_avgpool_8(WORD8 *__restrict__ p_out,
                       const WORD8 *__restrict__ p_inp,
                       WORD32 input_height,
                       WORD32 input_width,
                       WORD32 input_channels,
                       WORD32 kernel_height,
                       WORD32 kernel_width,
                       WORD32 x_stride,
                       WORD32 y_stride,
                       WORD32 x_padding,
                       WORD32 y_padding,
                       WORD32 out_height,
                       WORD32 out_width,
                       WORD32 inp_data_format,
                       WORD32 out_data_format,
                       VOID *p_scratch)
{
    return pool_8(0, p_out, p_inp, input_height, input_width, input_channels, kernel_height, kernel_width, x_stride,
                  y_stride, x_padding, y_padding, out_height, out_width, inp_data_format, out_data_format, p_scratch);
}

/* ------------------------------------------------------------------ activation clamp */

/* p_out[i] = clamp(p_vec[i], activation_min, activation_max); may run in place (p_out ==
 * p_vec; the definition drops the prototype's restrict qualifiers for that).
 * -128 <= activation_min <= activation_max <= 127, vec_length >= 0. */
WORD32 xa_nn_vec_activation_min_max_8_8(WORD8 *p_out,
                                        const WORD8 *p_vec,
                                        int activation_min,
                                        int activation_max,
                                        WORD32 vec_length)
{
    if (p_out == NULL || p_vec == NULL || vec_length < 0 || !check_activation(activation_min, activation_max))
    {
        return BAD;
    }
    for (int32_t i = 0; i < vec_length; i++)
    {
        p_out[i] = (int8_t)clamp(p_vec[i], activation_min, activation_max);
    }
    return OK;
}

/* ------------------------------------------------------------------ softmax */

/*
 * Scratch rule of get_softmax_scratch_size: length * 4 + 8 = one int32 exp per element,
 * plus 8 bytes for aligning p_scratch; only inp_precision == out_precision == PREC_ASYM8S
 * and length >= 1 are supported, anything else returns -1.
 */
static int32_t softmax_scratch_bytes(int32_t length)
{
    return length * (int32_t)sizeof(int32_t) + ALIGNMENT;
}

int get_softmax_scratch_size(int inp_precision, int out_precision, int length)
{
    if (inp_precision != PREC_ASYM8S || out_precision != PREC_ASYM8S || length < 1)
    {
        return BAD;
    }
    return softmax_scratch_bytes(length);
}

/*
 * TFLite int8 softmax of ONE row of vec_length elements (= CMSIS-NN arm_softmax_s8 for one
 * row; softmax_row of ../tflite_int8.h), output scale 1/256 and zero point -128. With
 * diff = x - max(row): entries with diff < diffmin give -128; the others exp(diff) /
 * sum(exp), with the input difference scaled to Q5.26 as
 * doubling_high_mult(diff * 2^input_beta_left_shift, input_beta_multiplier) and
 * ACCUM_BITS = 12 fractional bits for the sum. The final rounding shift (12 - headroom + 23)
 * exceeds 31 only for rows whose sum reaches 2^28 (more than ~512 entries tied at the
 * maximum; undefined in C): there the exact rounded quotient is used.
 * The scratch holds the int32 exp of each element (-1 for entries below diffmin), so the
 * output pass does not read p_vec again and the function may run in place.
 * Requires input_beta_left_shift in [0, 30] (TFLite's QuantizeMultiplierGreaterThanOne),
 * input_beta_multiplier >= 0, diffmin <= 0, vec_length >= 1, p_scratch != NULL.
 */
WORD32 xa_nn_vec_softmax_asym8s_asym8s(WORD8 *p_out,
                                       const WORD8 *p_vec,
                                       WORD32 diffmin,
                                       WORD32 input_beta_left_shift,
                                       WORD32 input_beta_multiplier,
                                       WORD32 vec_length,
                                       pVOID p_scratch)
{
    if (p_out == NULL || p_vec == NULL || p_scratch == NULL || vec_length < 1 || diffmin > 0 ||
        !in_range(input_beta_left_shift, 0, 30) || input_beta_multiplier < 0)
    {
        return BAD;
    }
    memset(p_scratch, 0, (size_t)softmax_scratch_bytes(vec_length));
    int32_t *exps = (int32_t *)align_scratch(p_scratch);

    softmax_row(p_vec, p_out, vec_length, input_beta_multiplier, input_beta_left_shift, diffmin, exps);
    return OK;
}

/* ------------------------------------------------------------------ element-wise */

/*
 * TFLite int8 Add of num_elm elements (no broadcasting; may run in place):
 *   in_i = (x_i + inp_i_zero_bias) << left_shift, requantized with (inp_i_multiplier,
 *   inp_i_left_shift); sum; requantize with (out_multiplier, out_left_shift); + out_zero_bias;
 *   clamp to [out_activation_min, out_activation_max].
 * The *_left_shift arguments are QuantizeMultiplier shifts (<= 0 meaning a right shift; any
 * value in [-31, 30] is accepted); left_shift in [0, 23] (so that the shifted input fits in
 * int32; TFLite uses 20).
 */
WORD32 xa_nn_elm_add_asym8sxasym8s_asym8s(WORD8 *p_out,
                                          WORD32 out_zero_bias,
                                          WORD32 out_left_shift,
                                          WORD32 out_multiplier,
                                          WORD32 out_activation_min,
                                          WORD32 out_activation_max,
                                          const WORD8 *p_inp1,
                                          WORD32 inp1_zero_bias,
                                          WORD32 inp1_left_shift,
                                          WORD32 inp1_multiplier,
                                          const WORD8 *p_inp2,
                                          WORD32 inp2_zero_bias,
                                          WORD32 inp2_left_shift,
                                          WORD32 inp2_multiplier,
                                          WORD32 left_shift,
                                          WORD32 num_elm)
{
    if (p_out == NULL || p_inp1 == NULL || p_inp2 == NULL || num_elm < 0 || !check_output_zero_bias(out_zero_bias) ||
        !check_input_zero_bias(inp1_zero_bias) || !check_input_zero_bias(inp2_zero_bias) ||
        !check_requant(out_multiplier, out_left_shift) || !check_requant(inp1_multiplier, inp1_left_shift) ||
        !check_requant(inp2_multiplier, inp2_left_shift) || !in_range(left_shift, 0, 23) ||
        !check_activation(out_activation_min, out_activation_max))
    {
        return BAD;
    }
    for (int32_t i = 0; i < num_elm; i++)
    {
        const int32_t sum =
            wrap32((int64_t)add_input(p_inp1[i], inp1_zero_bias, left_shift, inp1_multiplier, inp1_left_shift) +
                   add_input(p_inp2[i], inp2_zero_bias, left_shift, inp2_multiplier, inp2_left_shift));
        p_out[i] = requantize_to_int8(sum, out_multiplier, out_left_shift, out_zero_bias, out_activation_min,
                                      out_activation_max);
    }
    return OK;
}

/* TFLite int8 Mul of num_elm elements (no broadcasting; may run in place):
 * (x1 + inp1_zero_bias) * (x2 + inp2_zero_bias), requantized with (out_multiplier,
 * out_shift), + out_zero_bias, clamped to [out_activation_min, out_activation_max]. */
WORD32 xa_nn_elm_mul_asym8sxasym8s_asym8s(WORD8 *p_out,
                                          WORD32 out_zero_bias,
                                          WORD32 out_shift,
                                          WORD32 out_multiplier,
                                          WORD32 out_activation_min,
                                          WORD32 out_activation_max,
                                          const WORD8 *p_inp1,
                                          WORD32 inp1_zero_bias,
                                          const WORD8 *p_inp2,
                                          WORD32 inp2_zero_bias,
                                          WORD32 num_elm)
{
    if (p_out == NULL || p_inp1 == NULL || p_inp2 == NULL || num_elm < 0 || !check_output_zero_bias(out_zero_bias) ||
        !check_input_zero_bias(inp1_zero_bias) || !check_input_zero_bias(inp2_zero_bias) ||
        !check_requant(out_multiplier, out_shift) || !check_activation(out_activation_min, out_activation_max))
    {
        return BAD;
    }
    for (int32_t i = 0; i < num_elm; i++)
    {
        const int32_t product = ((int32_t)p_inp1[i] + inp1_zero_bias) * ((int32_t)p_inp2[i] + inp2_zero_bias);
        p_out[i] = requantize_to_int8(product, out_multiplier, out_shift, out_zero_bias, out_activation_min,
                                      out_activation_max);
    }
    return OK;
}
