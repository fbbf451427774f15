/*
 * Our own declaration of the documented Cadence HiFi 4 NN library API (xa_nnlib 4.x,
 * `xa_nnlib_kernels_api.h`, `xa_type_def.h`, `xa_nnlib_standards.h`), FOR TESTS ONLY.
 *
 * This is not Cadence's header (the library is not part of this project and its license
 * restricts it to Cadence cores): it declares, with the documented type names, precision
 * codes and exact parameter lists, just the functions glowmlir's HiFi 4 backend calls, so
 * that generated bundles can be compiled and linked on the host against our reference
 * stand-ins (standins.c in this directory).
 *
 * Conventions (see standins.c for the exact arithmetic and the scratch-size rules):
 *   - activations int8 NHWC ("asym8s"), per-tensor zero point: input_zero_bias / inpN_zero_bias
 *     = -input zero point (in [-127, 128]), out_zero_bias = +output zero point ([-128, 127]);
 *   - weights int8 symmetric ("sym8s"): conv kernel OHWI [out_channels][kh][kw][input_channels],
 *     depthwise kernel [kh][kw][input_channels * channels_multiplier], fully-connected weights
 *     [out_depth][weight_depth];
 *   - bias int32 (NULL is accepted as zero), per-channel (conv) or per-tensor (FC)
 *     multiplier/shift pairs of TFLite's QuantizeMultiplier, shift > 0 meaning a left shift;
 *   - padding arguments are TFLite's top/left pads, the bottom/right pads are implied by the
 *     output size; out_data_format / inp_data_format 0 = NHWC (the only one supported here);
 *   - kernels return 0 on success and -1 on bad arguments; *_getsize return a byte count
 *     or -1; the caller allocates p_scratch of exactly that size (any alignment).
 */
#ifndef GLOWMLIR_TESTS_HIFI4_XA_NNLIB_KERNELS_API_H
#define GLOWMLIR_TESTS_HIFI4_XA_NNLIB_KERNELS_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ xa_type_def.h */

typedef int8_t WORD8;
typedef uint8_t UWORD8;
typedef int16_t WORD16;
typedef uint16_t UWORD16;
typedef int32_t WORD32;
typedef uint32_t UWORD32;
typedef int64_t WORD64;
typedef uint64_t UWORD64;
typedef float FLOAT32;
typedef WORD8 *pWORD8;
typedef void VOID;
typedef void *pVOID;

/* ------------------------------------------------------------------ xa_nnlib_standards.h */

/** Precision codes (xa_nnlib_prec_t). */
typedef enum
{
    PREC_8 = 8,
    PREC_16 = 16,
    PREC_32 = 32,
    PREC_F32 = -1,
    PREC_F16 = -2,
    PREC_ASYM8U = -3,
    PREC_ASYM8S = -4,
    PREC_SYM8S = -5,
    PREC_ASYM16U = -6,
    PREC_ASYM16S = -7,
    PREC_SYM16S = -8,
    PREC_ASYM32U = -9,
    PREC_ASYM32S = -10,
    PREC_SYM32S = -11,
    PREC_SYM4S = -12,
    PREC_ASYM8 = PREC_ASYM8U
} xa_nnlib_prec_t;

/* ------------------------------------------------------------------ convolution */

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
                                              VOID *p_scratch);

/* v4.0.0+ argument list (18 arguments; note y before x here). */
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
                                WORD32 out_data_format);

/* Note the argument order: p_out, p_kernel, p_inp, p_bias. */
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
                                                    pVOID p_scratch);

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
                                      WORD32 inp_data_format);

/* ------------------------------------------------------------------ fully connected */

WORD32 xa_nn_fully_connected_sym8sxasym8s_asym8s(pWORD8 __restrict__ p_out,
                                                 const WORD8 *__restrict__ p_weight,
                                                 const WORD8 *__restrict__ p_inp,
                                                 const WORD32 *__restrict__ p_bias,
                                                 WORD32 weight_depth,
                                                 WORD32 out_depth,
                                                 WORD32 input_zero_bias,
                                                 WORD32 out_multiplier,
                                                 WORD32 out_shift,
                                                 WORD32 out_zero_bias);

/* ------------------------------------------------------------------ pooling */

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
                       VOID *p_scratch);

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
                       VOID *p_scratch);

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
                             WORD32 out_data_format);

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
                             WORD32 out_data_format);

/* ------------------------------------------------------------------ activations / softmax */

WORD32 xa_nn_vec_activation_min_max_8_8(WORD8 *__restrict__ p_out,
                                        const WORD8 *__restrict__ p_vec,
                                        int activation_min,
                                        int activation_max,
                                        WORD32 vec_length);

WORD32 xa_nn_vec_softmax_asym8s_asym8s(WORD8 *__restrict__ p_out,
                                       const WORD8 *__restrict__ p_vec,
                                       WORD32 diffmin,
                                       WORD32 input_beta_left_shift,
                                       WORD32 input_beta_multiplier,
                                       WORD32 vec_length,
                                       pVOID p_scratch);

int get_softmax_scratch_size(int inp_precision, int out_precision, int length);

/* ------------------------------------------------------------------ element-wise */

WORD32 xa_nn_elm_add_asym8sxasym8s_asym8s(WORD8 *__restrict__ p_out,
                                          WORD32 out_zero_bias,
                                          WORD32 out_left_shift,
                                          WORD32 out_multiplier,
                                          WORD32 out_activation_min,
                                          WORD32 out_activation_max,
                                          const WORD8 *__restrict__ p_inp1,
                                          WORD32 inp1_zero_bias,
                                          WORD32 inp1_left_shift,
                                          WORD32 inp1_multiplier,
                                          const WORD8 *__restrict__ p_inp2,
                                          WORD32 inp2_zero_bias,
                                          WORD32 inp2_left_shift,
                                          WORD32 inp2_multiplier,
                                          WORD32 left_shift,
                                          WORD32 num_elm);

WORD32 xa_nn_elm_mul_asym8sxasym8s_asym8s(WORD8 *__restrict__ p_out,
                                          WORD32 out_zero_bias,
                                          WORD32 out_shift,
                                          WORD32 out_multiplier,
                                          WORD32 out_activation_min,
                                          WORD32 out_activation_max,
                                          const WORD8 *__restrict__ p_inp1,
                                          WORD32 inp1_zero_bias,
                                          const WORD8 *__restrict__ p_inp2,
                                          WORD32 inp2_zero_bias,
                                          WORD32 num_elm);

#ifdef __cplusplus
}
#endif

#endif /* GLOWMLIR_TESTS_HIFI4_XA_NNLIB_KERNELS_API_H */
