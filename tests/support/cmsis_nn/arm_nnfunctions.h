/*
 * Our own declaration of the documented CMSIS-NN int8 ("s8") API (CMSIS-NN v7 /
 * arm_nnfunctions.h V.18, arm_nn_types.h V.3.5), FOR TESTS ONLY.
 *
 * This is not Arm's header: it declares, with the documented type names, field names,
 * field order and function signatures, just the structs and functions glowmlir's
 * CMSIS-NN backend calls, so that generated bundles can be compiled and linked on the
 * host against our reference stand-ins (standins.c in this directory). The real
 * library is not part of this project.
 *
 * Conventions (see standins.c for the exact arithmetic):
 *   - activations int8 NHWC, per-tensor zero point: input_offset = -input_zero_point,
 *     output_offset = +output_zero_point;
 *   - conv filter OHWI [C_OUT, KH, KW, C_IN / groups], depthwise filter [1, KH, KW, C_OUT]
 *     (C_OUT = C_IN * ch_mult), fully-connected weights [C_OUT][accum_depth];
 *   - bias int32 (may be NULL), per-channel (conv) or per-tensor (FC) multiplier/shift,
 *     shift > 0 meaning a left shift;
 *   - padding = TFLite's top/left padding, the bottom/right padding is implied by the
 *     output size.
 */
#ifndef GLOWMLIR_TESTS_CMSIS_NN_ARM_NNFUNCTIONS_H
#define GLOWMLIR_TESTS_CMSIS_NN_ARM_NNFUNCTIONS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ arm_nn_types.h */

/** Function return codes. */
typedef enum
{
    ARM_CMSIS_NN_SUCCESS = 0,        /**< No error */
    ARM_CMSIS_NN_ARG_ERROR = -1,     /**< One or more arguments are incorrect */
    ARM_CMSIS_NN_NO_IMPL_ERROR = -2, /**< No implementation available */
    ARM_CMSIS_NN_FAILURE = -3,       /**< Logical error */
} arm_cmsis_nn_status;

/** Width and height of a tile (stride, padding, dilation). */
typedef struct
{
    int32_t w; /**< Width */
    int32_t h; /**< Height */
} cmsis_nn_tile;

/** Function context: the caller-allocated scratch buffer. */
typedef struct
{
    void *buf;    /**< Scratch buffer (size from the *_get_buffer_size functions) */
    int32_t size; /**< Its size in bytes */
} cmsis_nn_context;

/** Tensor dimensions; n is the batch size or the output channels, depending on the tensor. */
typedef struct
{
    int32_t n;
    int32_t h;
    int32_t w;
    int32_t c;
} cmsis_nn_dims;

/** Per-channel requantization parameters (one entry per output channel). */
typedef struct
{
    int32_t *multiplier;
    int32_t *shift;
} cmsis_nn_per_channel_quant_params;

/** Per-tensor requantization parameters. */
typedef struct
{
    int32_t multiplier;
    int32_t shift;
} cmsis_nn_per_tensor_quant_params;

/** Fused activation: clamp bounds in the output's quantized domain. */
typedef struct
{
    int32_t min;
    int32_t max;
} cmsis_nn_activation;

/** Convolution parameters. */
typedef struct
{
    int32_t input_offset;  /**< -input_zero_point, range [-127, 128] */
    int32_t output_offset; /**< +output_zero_point, range [-128, 127] */
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_conv_params;

/** Depthwise convolution parameters. */
typedef struct
{
    int32_t input_offset;  /**< -input_zero_point */
    int32_t output_offset; /**< +output_zero_point */
    int32_t ch_mult;       /**< Channel multiplier: ch_mult * in_ch = out_ch */
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_tile dilation;
    cmsis_nn_activation activation;
} cmsis_nn_dw_conv_params;

/** Pooling parameters. */
typedef struct
{
    cmsis_nn_tile stride;
    cmsis_nn_tile padding;
    cmsis_nn_activation activation;
} cmsis_nn_pool_params;

/** Fully-connected parameters. */
typedef struct
{
    int32_t input_offset;  /**< -input_zero_point */
    int32_t filter_offset; /**< -filter_zero_point */
    int32_t output_offset; /**< +output_zero_point */
    cmsis_nn_activation activation;
} cmsis_nn_fc_params;

/* ------------------------------------------------------------------ arm_nnfunctions.h */

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
                                            int8_t *output_data);

int32_t arm_convolve_wrapper_s8_get_buffer_size(const cmsis_nn_conv_params *conv_params,
                                                const cmsis_nn_dims *input_dims,
                                                const cmsis_nn_dims *filter_dims,
                                                const cmsis_nn_dims *output_dims);

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
                                                  int8_t *output_data);

int32_t arm_depthwise_conv_wrapper_s8_get_buffer_size(const cmsis_nn_dw_conv_params *dw_conv_params,
                                                      const cmsis_nn_dims *input_dims,
                                                      const cmsis_nn_dims *filter_dims,
                                                      const cmsis_nn_dims *output_dims);

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
                                           int8_t *output_data);

int32_t arm_fully_connected_s8_get_buffer_size(const cmsis_nn_dims *filter_dims);

arm_cmsis_nn_status arm_max_pool_s8(const cmsis_nn_context *ctx,
                                    const cmsis_nn_pool_params *pool_params,
                                    const cmsis_nn_dims *input_dims,
                                    const int8_t *input_data,
                                    const cmsis_nn_dims *filter_dims,
                                    const cmsis_nn_dims *output_dims,
                                    int8_t *output_data);

arm_cmsis_nn_status arm_avgpool_s8(const cmsis_nn_context *ctx,
                                   const cmsis_nn_pool_params *pool_params,
                                   const cmsis_nn_dims *input_dims,
                                   const int8_t *input_data,
                                   const cmsis_nn_dims *filter_dims,
                                   const cmsis_nn_dims *output_dims,
                                   int8_t *output_data);

int32_t arm_avgpool_s8_get_buffer_size(const int dim_dst_width, const int ch_src);

void arm_softmax_s8(const int8_t *input,
                    const int32_t num_rows,
                    const int32_t row_size,
                    const int32_t mult,
                    const int32_t shift,
                    const int32_t diff_min,
                    int8_t *output);

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
                                           const int32_t block_size);

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
                                           const int32_t block_size);

#ifdef __cplusplus
}
#endif

#endif /* GLOWMLIR_TESTS_CMSIS_NN_ARM_NNFUNCTIONS_H */
