/* Bare-metal harness for one Glow bundle, written the way a Glow bundle user writes main.c:
 * static GLOW_MEM_ALIGN buffers, the weights #included from <name>.weights.txt, inputs and
 * outputs through GLOW_GET_ADDR. harness.h (generated per run) names the bundle and holds
 * the input data; outputs are printed as IEEE-754 bit patterns over semihosting so the
 * host reads them back exactly.
 *
 *   WEIGHTS_IN_RAM     copy the weights from flash into a RAM buffer before inference
 *   BIG_BSS            (from harness.h) puts the large RAM buffers in the board's big RAM
 *   INFERENCES         how many times the entry point runs (instruction counting runs
 *                      1 and 2 and takes the difference)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "harness.h"

GLOW_MEM_ALIGN(BUNDLE_MEM_ALIGN) __attribute__((section(".weights")))
static const uint8_t constantWeightFlash[BUNDLE_CONSTANT_MEM_SIZE] = {
#include BUNDLE_WEIGHTS_TXT
};
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
    for (unsigned i = 0; i < NUM_INPUTS; i++)
        memcpy(GLOW_GET_ADDR(mutableWeight, inputs[i].offset), inputs[i].data, inputs[i].size);
    for (int run = 0; run < INFERENCES; run++) {
        if (BUNDLE_ENTRY(constantWeight, mutableWeight, activations) != GLOW_SUCCESS) {
            printf("error: the bundle returned an error\n");
            return 1;
        }
    }
    for (unsigned i = 0; i < NUM_OUTPUTS; i++) {
        const uint32_t *bits = (const uint32_t *)GLOW_GET_ADDR(mutableWeight, outputs[i].offset);
        printf("output %s", outputs[i].name);
        for (unsigned k = 0; k < outputs[i].size / 4; k++)
            printf(" %08lx", (unsigned long)bits[k]);
        printf("\n");
    }
    return 0;
}
