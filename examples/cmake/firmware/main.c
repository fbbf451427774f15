/*
 * LeNet on a Cortex-M7 (QEMU's mps2-an500 board): classifies the digits compiled into the
 * firmware and prints, over semihosting, one line per digit:
 *
 *   <name>: predicted <digit> (p=<probability>)
 *
 * The bundle comes from glowmlir_add_bundle(... WEIGHTS LINK) in CMakeLists.txt: its header
 * lenet_mnist.h (offsets, memory sizes, the entry point) and lenet_mnist_weights.h (the
 * constant weights, linked into flash). digits.h is generated from digits/*.pgm at configure
 * time (28x28 8-bit grayscale, white on black as in MNIST).
 */
#include <stdint.h>
#include <stdio.h>

#include "digits.h"
#include "lenet_mnist.h"
#include "lenet_mnist_weights.h"

#define NUM_CLASSES 10

/* Inputs and outputs, at the offsets the header gives. */
GLOW_MEM_ALIGN(LENET_MNIST_MEM_ALIGN)
static uint8_t mutableWeight[LENET_MNIST_MUTABLE_MEM_SIZE];

/* Scratch memory for intermediate results. */
GLOW_MEM_ALIGN(LENET_MNIST_MEM_ALIGN)
static uint8_t activations[LENET_MNIST_ACTIVATIONS_MEM_SIZE];

int main(void)
{
    float *data = (float *)GLOW_GET_ADDR(mutableWeight, LENET_MNIST_data);
    const float *softmax = (const float *)GLOW_GET_ADDR(mutableWeight, LENET_MNIST_softmax);

    for (unsigned d = 0; d < NUM_DIGITS; d++) {
        for (unsigned i = 0; i < DIGIT_PIXELS; i++)
            data[i] = digits[d].pixels[i] / 255.0f; /* -image-mode=0to1 */
        /* The weights stay in flash: the bundle only reads them. */
        if (lenet_mnist((uint8_t *)lenet_mnist_weights, mutableWeight, activations) != GLOW_SUCCESS) {
            printf("%s: the bundle returned an error\n", digits[d].name);
            return 1;
        }
        unsigned best = 0;
        for (unsigned k = 1; k < NUM_CLASSES; k++)
            if (softmax[k] > softmax[best])
                best = k;
        printf("%s: predicted %u (p=%.6f)\n", digits[d].name, best, (double)softmax[best]);
    }
    return 0;
}
