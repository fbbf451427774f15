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
 * Scratch buffers. Each *_getsize returns what Cadence's NNLib 4.1.0 returns for the same
 * arguments on a HiFi 4 (4-byte pointers), by NNLib's own size rules restated below (the
 * library keeps a state struct and circular buffers there; these stand-ins do not need the
 * memory): tests/support/hifi4/nnlib_scratch_sizes.json holds the sizes the library itself
 * returned, and the tests require these getsize functions to equal it. Every kernel with a
 * scratch requires p_scratch != NULL and fills exactly that many bytes from p_scratch with
 * its bits flipped, so the planned size is really exercised and a NULL scratch fails. As
 * in NNLib, the depthwise convolution and the pools require p_scratch 8-byte aligned (-1
 * otherwise); the standard convolution aligns it itself (its size has 8 bytes of slack);
 * softmax aligns it itself without slack in NNLib, so here it requires it aligned too.
 *
 * Aliasing: every data pointer of these functions is __restrict__ in NNLib, so an output
 * overlapping any input (or the scratch) is undefined there; here it is -1.
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

/* ------------------------------------------------------------------ NNLib's scratch sizes */

#define XTENSA_POINTER 4 /* bytes of a pointer on the HiFi 4: NNLib's state structs hold pointers */

static int32_t round_up(int32_t value, int32_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

/* xa_nn_conv2d_std_getsize: ALIGNMENT + (state of 6 pointers + 7) + (circular buffer + 7) +
 * 8 bytes of bus width (+ padded filter + 7 when the channels get padded, except for 16-bit
 * data). The circular buffer holds every padded input row by kernel_width columns by the
 * channels padded to 4 (to 2 for float), grown by whole columns to a multiple of 16 bytes. A
 * height-1 input, kernel and output is sized as a width-1 one. */
static int32_t nnlib_conv2d_std_size(int32_t input_height, int32_t input_width, int32_t input_channels,
                                     int32_t kernel_height, int32_t kernel_width, int32_t kernel_channels,
                                     int32_t y_stride, int32_t y_padding, int32_t x_stride, int32_t x_padding,
                                     int32_t out_height, int32_t out_width, int32_t output_channels,
                                     int32_t input_precision)
{
    if (input_height <= 0 || input_channels <= 0 || kernel_height <= 0 || kernel_width <= 0 || kernel_channels <= 0 ||
        y_stride <= 0 || y_padding < 0 || x_stride <= 0 || x_padding < 0 || out_height <= 0 || out_width <= 0 ||
        output_channels <= 0 || input_channels % kernel_channels != 0 ||
        output_channels % (input_channels / kernel_channels) != 0)
    {
        return BAD;
    }
    int32_t element, channel_multiple;
    switch (input_precision)
    {
    case PREC_8: case PREC_ASYM8U: case PREC_ASYM8S: element = 1; channel_multiple = 4; break;
    case PREC_16: case PREC_ASYM16S: case PREC_SYM16S: element = 2; channel_multiple = 4; break;
    case PREC_F32: element = 4; channel_multiple = 2; break;
    default: return BAD;
    }
    int32_t rows = input_height, kernel_rows = kernel_height, columns = kernel_width, stride = y_stride;
    int32_t pad = y_padding, out_rows = out_height;
    if (input_height == 1 && kernel_height == 1 && out_height == 1)
    {
        rows = input_width; kernel_rows = kernel_width; columns = kernel_height; stride = x_stride;
        pad = x_padding; out_rows = out_width;
    }
    int32_t bottom_pad = kernel_rows + (out_rows - 1) * stride - (pad + rows);
    bottom_pad = bottom_pad < 0 ? 0 : bottom_pad;
    const int32_t padded_channels = round_up(kernel_channels, channel_multiple);
    const int32_t column = columns * padded_channels * element;
    int32_t circular = (pad + rows + bottom_pad) * column;
    while (circular % 16 != 0)
    {
        circular += column;
    }
    int32_t total = ALIGNMENT + (6 * XTENSA_POINTER + ALIGNMENT - 1) + (circular + ALIGNMENT - 1) + ALIGNMENT;
    if (input_precision != PREC_16 && padded_channels != kernel_channels)
    {
        total += kernel_height * kernel_width * padded_channels * output_channels * element + ALIGNMENT - 1;
    }
    return total;
}

/* xa_nn_conv2d_depthwise_getsize (NHWC): state (3 pointers, 3 int32, 1 pointer) + circular
 * buffer of max(every row the windows cover, the padded input's height) rows by
 * kernel_width columns by the output channels padded to 4 (2 for float) + for 8/16-bit data
 * the filter with its depth padded to 4; each part rounded up to ALIGNMENT. */
static int32_t nnlib_depthwise_size(int32_t input_height, int32_t input_channels, int32_t kernel_height,
                                    int32_t kernel_width, int32_t channels_multiplier, int32_t y_stride,
                                    int32_t y_padding, int32_t output_height, int32_t circ_buf_precision)
{
    int32_t element;
    switch (circ_buf_precision)
    {
    case PREC_8: case PREC_ASYM8U: case PREC_ASYM8S: case PREC_SYM8S: element = 1; break;
    case PREC_16: case PREC_SYM16S: element = 2; break;
    case PREC_F32: element = 4; break;
    default: return BAD;
    }
    int32_t rows = kernel_height + (output_height - 1) * y_stride;
    rows = rows > y_padding + input_height ? rows : y_padding + input_height;
    const int32_t channels = round_up(input_channels * channels_multiplier, element == 4 ? 2 : 4);
    const int32_t kernel = element == 4 ? 0 : ALIGN_UP(element * kernel_height * kernel_width * 4);
    return ALIGN_UP(3 * XTENSA_POINTER + 3 * 4 + XTENSA_POINTER) + ALIGN_UP(element * rows * channels * kernel_width) +
        kernel;
}

/* The one-channel pools: state + two rows of accumulators as wide as the padded input row
 * (rounded to 4) plus kernel_width, rounded to 4. The average pool rounds the left padding
 * to 2 first. */
static int32_t nnlib_pool_rows_size(int32_t input_width, int32_t kernel_width, int32_t x_stride, int32_t x_padding,
                                    int32_t out_width, int32_t accumulator, int32_t state)
{
    int32_t row = kernel_width + (out_width - 1) * x_stride;
    row = row > x_padding + input_width ? row : x_padding + input_width;
    return state + 2 * round_up(round_up(row, 4) + kernel_width, 4) * accumulator;
}

static int pool_rows_valid(int32_t input_width, int32_t kernel_height, int32_t kernel_width, int32_t x_stride,
                           int32_t y_stride, int32_t x_padding, int32_t out_width)
{
    return input_width > 0 && kernel_height > 0 && kernel_width > 0 && kernel_width <= input_width && x_stride > 0 &&
        y_stride > 0 && x_padding >= 0 && out_width > 0;
}

/* xa_nn_maxpool_getsize (NHWC). One channel: state (a pointer) + two rows of int16 (8/16-bit
 * data) or int32 accumulators. More channels: an int16 row of every channel (int32 for
 * float) + an int16 per channel, each rounded to ALIGNMENT; 0 for other precisions. */
static int32_t nnlib_maxpool_size(int32_t input_channels, int32_t inp_precision, int32_t input_width,
                                  int32_t kernel_height, int32_t kernel_width, int32_t x_stride, int32_t y_stride,
                                  int32_t x_padding, int32_t out_width)
{
    if (input_channels == 1)
    {
        if (!pool_rows_valid(input_width, kernel_height, kernel_width, x_stride, y_stride, x_padding, out_width))
        {
            return BAD;
        }
        const int32_t accumulator = inp_precision == PREC_8 || inp_precision == PREC_16 ? 2
            : inp_precision == PREC_F32 || inp_precision == PREC_ASYM8U ? 4 : 0;
        return accumulator == 0 ? BAD : nnlib_pool_rows_size(input_width, kernel_width, x_stride, x_padding, out_width,
                                                             accumulator, ALIGN_UP(XTENSA_POINTER));
    }
    switch (inp_precision)
    {
    case PREC_F32: return ALIGN_UP(input_channels * input_width * 4);
    case PREC_8: case PREC_ASYM8U: return ALIGN_UP(input_channels * input_width * 2) + ALIGN_UP(input_channels * 2);
    case PREC_16: return ALIGN_UP(input_channels * (input_width + 1) * 2);
    default: return 0;
    }
}

/* xa_nn_avgpool_getsize (NHWC). One channel: state (3 pointers) + the reciprocal window
 * sizes per output row and column (not for float) + two rows of int32 accumulators. More
 * channels: int32 window sizes per output row and per output column + an accumulator row of
 * every channel (int16 for 8-bit data and windows of at most 127 rows, else int32) + an
 * int32 per channel + max(an int8 row of every channel, an accumulator per channel); float:
 * two float rows of every channel + the window size of every output. */
static int32_t nnlib_avgpool_size(int32_t input_channels, int32_t inp_precision, int32_t input_width,
                                  int32_t kernel_height, int32_t kernel_width, int32_t x_stride, int32_t y_stride,
                                  int32_t x_padding, int32_t out_height, int32_t out_width)
{
    if (inp_precision != PREC_F32 && (kernel_height > 1024 || kernel_width > 1024))
    {
        return BAD;
    }
    if (input_channels == 1)
    {
        if (!pool_rows_valid(input_width, kernel_height, kernel_width, x_stride, y_stride, x_padding, out_width) ||
            out_height <= 0 || (inp_precision != PREC_8 && inp_precision != PREC_16 && inp_precision != PREC_F32 &&
                                inp_precision != PREC_ASYM8U))
        {
            return BAD;
        }
        const int32_t reciprocals = inp_precision == PREC_F32 ? 0 : ALIGN_UP((out_height + out_width) * 4);
        return nnlib_pool_rows_size(input_width, kernel_width, x_stride, round_up(x_padding, 2), out_width, 4,
                                    ALIGN_UP(3 * XTENSA_POINTER) + reciprocals);
    }
    const int32_t plane = input_width * input_channels;
    if (inp_precision == PREC_F32)
    {
        return ALIGN_UP(2 * ALIGN_UP(4 * plane) + ALIGN_UP(4 * out_width * out_height));
    }
    int32_t accumulator, zeros;
    if (inp_precision == PREC_8 || inp_precision == PREC_ASYM8U)
    {
        accumulator = kernel_height <= 127 ? 2 : 4;
        zeros = plane > accumulator * input_channels ? plane : accumulator * input_channels;
    }
    else if (inp_precision == PREC_16)
    {
        accumulator = 4;
        zeros = 2 * plane > 4 * input_channels ? 2 * plane : 4 * input_channels;
    }
    else
    {
        return BAD;
    }
    return ALIGN_UP(ALIGN_UP(4 * out_height) + ALIGN_UP(4 * out_width) + ALIGN_UP(accumulator * plane) +
                    ALIGN_UP(4 * input_channels) + zeros);
}

/* The kernels' use of their scratch: every bit of its `size` bytes flipped, so that each
 * byte changes whatever the caller left there. */
static void fill_scratch(void *scratch, int32_t size)
{
    uint8_t *bytes = (uint8_t *)scratch;
    for (int32_t i = 0; i < size; i++)
    {
        bytes[i] = (uint8_t)~bytes[i];
    }
}

/* [a, a + a_size) and [b, b + b_size) share no byte (NULL or empty overlaps nothing). */
static int disjoint(const void *a, int64_t a_size, const void *b, int64_t b_size)
{
    const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return a == NULL || b == NULL || a_size <= 0 || b_size <= 0 || x + (uintptr_t)a_size <= y ||
        y + (uintptr_t)b_size <= x;
}

static int is_aligned(const void *pointer)
{
    return ((uintptr_t)pointer & (ALIGNMENT - 1)) == 0;
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

/* NNLib's rule (nnlib_conv2d_std_size); kernel_precision, dilations and out_data_format do not enter it. */
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
    (void)input_width;
    (void)kernel_precision;
    (void)dilation_height;
    (void)dilation_width;
    (void)out_data_format;
    return nnlib_conv2d_std_size(input_height, input_width, input_channels, kernel_height, kernel_width,
                                 kernel_channels, y_stride, y_padding, x_stride, x_padding, out_height, out_width,
                                 output_channels, input_precision);
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
    const int64_t out_bytes = (int64_t)out_height * out_width * out_channels;
    if (!disjoint(p_out, out_bytes, p_inp, (int64_t)input_height * input_width * input_channels) ||
        !disjoint(p_out, out_bytes, p_kernel, (int64_t)out_channels * kernel_height * kernel_width * input_channels) ||
        !disjoint(p_out, out_bytes, p_bias, (int64_t)out_channels * 4) ||
        !disjoint(p_out, out_bytes, p_scratch, nnlib_conv2d_std_size(input_height, input_width, input_channels,
                                                                     kernel_height, kernel_width, input_channels,
                                                                     y_stride, y_padding, x_stride, x_padding,
                                                                     out_height, out_width, out_channels,
                                                                     PREC_ASYM8S)))
    {
        return BAD; /* __restrict__ pointers that overlap */
    }
    fill_scratch(p_scratch, nnlib_conv2d_std_size(input_height, input_width, input_channels, kernel_height,
                                                  kernel_width, input_channels, y_stride, y_padding, x_stride,
                                                  x_padding, out_height, out_width, out_channels, PREC_ASYM8S));
    const int32_t patch_length = kernel_height * kernel_width * input_channels;

    for (int32_t oy = 0; oy < out_height; oy++)
    {
        for (int32_t ox = 0; ox < out_width; ox++)
        {
            const int32_t y0 = oy * y_stride - y_padding;
            const int32_t x0 = ox * x_stride - x_padding;
            for (int32_t oc = 0; oc < out_channels; oc++)
            {
                const int8_t *weights = p_kernel + (int64_t)oc * patch_length;
                int64_t acc = p_bias != NULL ? p_bias[oc] : 0;
                for (int32_t ky = 0; ky < kernel_height; ky++)
                {
                    for (int32_t kx = 0; kx < kernel_width; kx++)
                    {
                        for (int32_t ic = 0; ic < input_channels; ic++)
                        {
                            acc += (int64_t)conv_tap(p_inp, input_height, input_width, input_channels, y0 + ky,
                                                     x0 + kx, ic, input_zero_bias) *
                                weights[(ky * kernel_width + kx) * input_channels + ic];
                        }
                    }
                }
                p_out[((int64_t)oy * out_width + ox) * out_channels + oc] = requantize_to_int8(
                    wrap32(acc), p_out_multiplier[oc], p_out_shift[oc], out_zero_bias, Q7_MIN, Q7_MAX);
            }
        }
    }
    return OK;
}

/* ------------------------------------------------------------------ depthwise convolution */

/* NNLib's rule (nnlib_depthwise_size) after NNLib's checks; only inp_data_format 0 (NHWC) here. */
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
    if (input_height <= 0 || input_width <= 0 || input_channels <= 0 || kernel_height <= 0 || kernel_width <= 0 ||
        channels_multiplier <= 0 || x_stride <= 0 || y_stride <= 0 || x_padding < 0 || y_padding < 0 ||
        output_height <= 0 || output_width <= 0 || inp_data_format != 0)
    {
        return BAD;
    }
    return nnlib_depthwise_size(input_height, input_channels, kernel_height, kernel_width, channels_multiplier,
                                y_stride, y_padding, output_height, circ_buf_precision);
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
    const int32_t scratch_size = nnlib_depthwise_size(input_height, input_channels, kernel_height, kernel_width,
                                                      channels_multiplier, y_stride, y_padding, out_height,
                                                      PREC_ASYM8S);
    const int64_t out_bytes = (int64_t)out_height * out_width * out_channels;
    if (!is_aligned(p_scratch) ||
        !disjoint(p_out, out_bytes, p_inp, (int64_t)input_height * input_width * input_channels) ||
        !disjoint(p_out, out_bytes, p_kernel, (int64_t)kernel_height * kernel_width * out_channels) ||
        !disjoint(p_out, out_bytes, p_bias, (int64_t)out_channels * 4) ||
        !disjoint(p_out, out_bytes, p_scratch, scratch_size))
    {
        return BAD; /* NNLib wants p_scratch 8-byte aligned; __restrict__ pointers that overlap */
    }
    fill_scratch(p_scratch, scratch_size);

    for (int32_t oy = 0; oy < out_height; oy++)
    {
        for (int32_t ox = 0; ox < out_width; ox++)
        {
            const int32_t y0 = oy * y_stride - y_padding;
            const int32_t x0 = ox * x_stride - x_padding;
            for (int32_t oc = 0; oc < out_channels; oc++)
            {
                const int32_t ic = oc / channels_multiplier;
                int64_t acc = p_bias != NULL ? p_bias[oc] : 0;
                for (int32_t ky = 0; ky < kernel_height; ky++)
                {
                    for (int32_t kx = 0; kx < kernel_width; kx++)
                    {
                        acc += (int64_t)conv_tap(p_inp, input_height, input_width, input_channels, y0 + ky, x0 + kx,
                                                 ic, input_zero_bias) *
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
    if (!disjoint(p_out, out_depth, p_inp, weight_depth) ||
        !disjoint(p_out, out_depth, p_weight, (int64_t)out_depth * weight_depth) ||
        !disjoint(p_out, out_depth, p_bias, (int64_t)out_depth * 4))
    {
        return BAD; /* __restrict__ pointers that overlap */
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

/* NNLib's rules (nnlib_maxpool_size, nnlib_avgpool_size) for out_data_format 0 (NHWC); other formats -1 here. */
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
    (void)out_precision;
    (void)input_height;
    (void)out_height;
    (void)y_padding;
    (void)inp_data_format;
    return out_data_format != 0 ? BAD : nnlib_maxpool_size(input_channels, inp_precision, input_width, kernel_height, kernel_width,
                                                  x_stride, y_stride, x_padding, out_width);
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
    (void)out_precision;
    (void)input_height;
    (void)y_padding;
    (void)inp_data_format;
    return out_data_format != 0 ? BAD : nnlib_avgpool_size(input_channels, inp_precision, input_width, kernel_height, kernel_width,
                                                  x_stride, y_stride, x_padding, out_height, out_width);
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

/* The shared pooling loop: each output is the max (is_max) of the in-bounds taps of its
 * window, or their sum divided by their number rounding half away from zero (TFLite). */
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
    const int32_t scratch_size = is_max
        ? nnlib_maxpool_size(input_channels, PREC_8, input_width, kernel_height, kernel_width, x_stride, y_stride,
                             x_padding, out_width)
        : nnlib_avgpool_size(input_channels, PREC_8, input_width, kernel_height, kernel_width, x_stride, y_stride,
                             x_padding, out_height, out_width);
    const int64_t out_bytes = (int64_t)out_height * out_width * input_channels;
    if (scratch_size < 0 || !is_aligned(p_scratch) ||
        !disjoint(p_out, out_bytes, p_inp, (int64_t)input_height * input_width * input_channels) ||
        !disjoint(p_out, out_bytes, p_scratch, scratch_size))
    {
        return BAD; /* NNLib wants p_scratch 8-byte aligned; __restrict__ pointers that overlap */
    }
    fill_scratch(p_scratch, scratch_size);
    const int32_t channels = input_channels;

    for (int32_t oy = 0; oy < out_height; oy++)
    {
        int32_t y_start, y_end;
        window_bounds(oy, y_stride, y_padding, kernel_height, input_height, &y_start, &y_end);
        for (int32_t ox = 0; ox < out_width; ox++)
        {
            int32_t x_start, x_end;
            window_bounds(ox, x_stride, x_padding, kernel_width, input_width, &x_start, &x_end);
            const int32_t count = (y_end - y_start) * (x_end - x_start);
            for (int32_t c = 0; c < channels; c++)
            {
                int32_t acc = is_max ? Q7_MIN : 0;
                for (int32_t y = y_start; y < y_end; y++)
                {
                    for (int32_t x = x_start; x < x_end; x++)
                    {
                        const int32_t tap = p_inp[((int64_t)y * input_width + x) * channels + c];
                        acc = is_max ? (tap > acc ? tap : acc) : acc + tap;
                    }
                }
                const int32_t value = is_max ? acc : rounded_average(acc, count);
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

/* p_out[i] = clamp(p_vec[i], activation_min, activation_max); not in place (both
 * pointers are __restrict__ in NNLib: overlapping ones are -1 here).
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
    if (!disjoint(p_out, vec_length, p_vec, vec_length))
    {
        return BAD; /* __restrict__ pointers that overlap */
    }
    for (int32_t i = 0; i < vec_length; i++)
    {
        p_out[i] = (int8_t)clamp(p_vec[i], activation_min, activation_max);
    }
    return OK;
}

/* ------------------------------------------------------------------ softmax */

/* NNLib's rule of get_softmax_scratch_size: one int32 exp per element, rounded up to
 * ALIGNMENT; -1 for a length < 1 or a precision it has no softmax for. */
static int32_t softmax_scratch_bytes(int32_t length)
{
    return ALIGN_UP(length * (int32_t)sizeof(int32_t));
}

int get_softmax_scratch_size(int inp_precision, int out_precision, int length)
{
    (void)out_precision;
    if (length < 1 || (inp_precision != PREC_8 && inp_precision != PREC_16 && inp_precision != PREC_32 &&
                       inp_precision != PREC_F32 && inp_precision != PREC_ASYM8U && inp_precision != PREC_ASYM8S))
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
 * output pass does not read p_vec again.
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
    if (!is_aligned(p_scratch) || !disjoint(p_out, vec_length, p_vec, vec_length) ||
        !disjoint(p_out, vec_length, p_scratch, softmax_scratch_bytes(vec_length)))
    {
        return BAD; /* NNLib aligns p_scratch up without slack; __restrict__ pointers that overlap */
    }
    fill_scratch(p_scratch, softmax_scratch_bytes(vec_length));
    int32_t *exps = (int32_t *)p_scratch;

    softmax_row(p_vec, p_out, vec_length, input_beta_multiplier, input_beta_left_shift, diffmin, exps);
    return OK;
}

/* ------------------------------------------------------------------ element-wise */

/*
 * TFLite int8 Add of num_elm elements (no broadcasting; not in place: __restrict__):
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
    if (!disjoint(p_out, num_elm, p_inp1, num_elm) || !disjoint(p_out, num_elm, p_inp2, num_elm))
    {
        return BAD; /* __restrict__ pointers that overlap */
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

/* TFLite int8 Mul of num_elm elements (no broadcasting; not in place: __restrict__):
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
    if (!disjoint(p_out, num_elm, p_inp1, num_elm) || !disjoint(p_out, num_elm, p_inp2, num_elm))
    {
        return BAD; /* __restrict__ pointers that overlap */
    }
    for (int32_t i = 0; i < num_elm; i++)
    {
        const int32_t product = ((int32_t)p_inp1[i] + inp1_zero_bias) * ((int32_t)p_inp2[i] + inp2_zero_bias);
        p_out[i] = requantize_to_int8(product, out_multiplier, out_shift, out_zero_bias, out_activation_min,
                                      out_activation_max);
    }
    return OK;
}
