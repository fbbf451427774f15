/* Bare-metal harness for one Glow bundle, written the way a Glow bundle user writes main.c:
 * static GLOW_MEM_ALIGN buffers, inputs and outputs through GLOW_GET_ADDR. The weights are
 * the bytes of <name>.weights.bin, pulled in with .incbin rather than compiled from
 * weights.txt (same bytes, and a 100 MB network still links in seconds). harness.h (generated per run) names the bundle and holds
 * the input data; outputs are printed as hex bytes over semihosting so the host reads them
 * back exactly, whatever their element type.
 *
 *   WEIGHTS_IN_RAM     copy the weights from flash into a RAM buffer before inference
 *   BIG_BSS            (from harness.h) puts the large RAM buffers in the board's big RAM
 *   INFERENCES         how many times the entry point runs on a frame (instruction counting
 *                      runs 1 and 2 and takes the difference)
 *   NUM_FRAMES         (from harness.h) the frames of inputs, run in order with one
 *                      mutableWeight (a streaming model's state goes on), each one's outputs printed
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "harness.h"

extern const uint8_t constantWeightFlash[BUNDLE_CONSTANT_MEM_SIZE];
__asm__(".section .weights,\"a\"\n.balign 64\n.global constantWeightFlash\nconstantWeightFlash:\n"
        ".incbin \"" BUNDLE_WEIGHTS_BIN "\"\n.previous\n");
#ifdef WEIGHTS_IN_RAM
BIG_BSS
GLOW_MEM_ALIGN(BUNDLE_MEM_ALIGN) static uint8_t constantWeightRam[BUNDLE_CONSTANT_MEM_SIZE];
#endif
GLOW_MEM_ALIGN(BUNDLE_MEM_ALIGN) static uint8_t mutableWeight[BUNDLE_MUTABLE_MEM_SIZE];
BIG_BSS
GLOW_MEM_ALIGN(BUNDLE_MEM_ALIGN) static uint8_t activations[BUNDLE_ACTIVATIONS_MEM_SIZE + 1];

#ifndef INFERENCES
#define INFERENCES 1
#endif

int main(void) {
    uint8_t *constantWeight = (uint8_t *)constantWeightFlash;
#ifdef WEIGHTS_IN_RAM
    memcpy(constantWeightRam, constantWeightFlash, sizeof constantWeightRam);
    constantWeight = constantWeightRam;
#endif
    for (unsigned frame = 0; frame < NUM_FRAMES; frame++) {
        for (unsigned i = 0; i < NUM_INPUTS; i++)
            memcpy(GLOW_GET_ADDR(mutableWeight, inputs[i].offset), inputs[i].data + frame * inputs[i].size,
                   inputs[i].size);
        for (int run = 0; run < INFERENCES; run++) {
            if (BUNDLE_ENTRY(constantWeight, mutableWeight, activations) != GLOW_SUCCESS) {
                printf("error: the bundle returned an error\n");
                return 1;
            }
        }
        for (unsigned i = 0; i < NUM_OUTPUTS; i++) {
            const uint8_t *bytes = GLOW_GET_ADDR(mutableWeight, outputs[i].offset);
            printf("output %s ", outputs[i].name);
            for (unsigned k = 0; k < outputs[i].size; k++)
                printf("%02x", bytes[k]);
            printf("\n");
        }
    }
    return 0;
}
