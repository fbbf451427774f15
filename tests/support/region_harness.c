/* Runs a bundle once with its three regions on the heap at exactly their sizes, for valgrind.
 *
 *   cc region_harness.c bundle.o -DENTRY=lenet -DCONSTANT_SIZE=.. -DMUTABLE_SIZE=.. -DACTIVATIONS_SIZE=..
 *   valgrind --error-exitcode=99 ./harness constant.bin mutable.bin mutable-after.bin
 *
 * The constant and mutable regions are read from files (the mutable one with the inputs
 * already at their offsets); the activations are left uninitialised, so memcheck reports a
 * kernel that reads scratch before writing it. The mutable region is written back after
 * the call. Exit status: the entry point's, or 2 for a harness error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

extern int ENTRY(uint8_t *constantWeight, uint8_t *mutableWeight, uint8_t *activations);

static uint8_t *region(size_t size) {
    void *memory = NULL;
    /* posix_memalign(0) may return NULL: a 1-byte block still lets memcheck flag any access. */
    if (posix_memalign(&memory, 64, size ? size : 1) != 0) {
        fprintf(stderr, "harness: out of memory for %zu bytes\n", size);
        exit(2);
    }
    return memory;
}

static void transfer(const char *path, uint8_t *data, size_t size, const char *mode) {
    FILE *file = fopen(path, mode);
    size_t done = 0;
    if (file) {
        done = mode[0] == 'r' ? fread(data, 1, size, file) : fwrite(data, 1, size, file);
        fclose(file);
    }
    if (!file || done != size) {
        fprintf(stderr, "harness: %s: expected %zu bytes\n", path, size);
        exit(2);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s constant.bin mutable.bin mutable-after.bin\n", argv[0]);
        return 2;
    }
    uint8_t *constant = region(CONSTANT_SIZE), *mutable = region(MUTABLE_SIZE);
    uint8_t *activations = region(ACTIVATIONS_SIZE);
    transfer(argv[1], constant, CONSTANT_SIZE, "rb");
    transfer(argv[2], mutable, MUTABLE_SIZE, "rb");
    int status = ENTRY(constant, mutable, activations);
    transfer(argv[3], mutable, MUTABLE_SIZE, "wb");
    free(constant);
    free(mutable);
    free(activations);
    return status;
}
