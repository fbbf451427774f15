/* The clock of a host layer-profiling build (`lower-glowll-to-llvm{layer-profile=timed}`):
 * the entry point calls glow_layer_mark(0) first and glow_layer_mark(k) after instruction
 * k - 1; each call stores CLOCK_MONOTONIC in nanoseconds at glow_layer_marks[k], an array
 * of one slot per mark that the host runner (glowmlir.runtime.host) provides while it
 * times the layers (NULL otherwise: the marks are not taken).                             */
#include <stdint.h>
#include <time.h>

uint64_t *glow_layer_marks;

void glow_layer_mark(int32_t k) {
    struct timespec now;
    if (!glow_layer_marks)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    glow_layer_marks[k] = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
