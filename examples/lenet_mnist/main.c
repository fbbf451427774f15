/*
 * Classifies handwritten digits with the AOT-compiled `lenet_mnist` bundle.
 *
 * This is a plain C99 user of the static bundle API (the same API as Glow's
 * static bundles): the bundle directory holds `lenet_mnist.h`,
 * `lenet_mnist.o` and `lenet_mnist.weights.txt`, and is put on the include
 * path:
 *
 *   gcc -std=c99 -O2 -I build main.c build/lenet_mnist.o -lpng -lm
 *   ./a.out images/4901_9.png images/400_0.png
 *
 * Each argument must be a 28x28 8-bit grayscale PNG (white digit on black,
 * as in MNIST). Pixels are scaled to [0,1], the model input `data` is
 * [1,1,28,28] float and its output `softmax` is [1,10] float.
 *
 * For every image one line is printed:
 *
 *   <path>: predicted <digit> (p=<probability>)
 *
 * and, when the file name has the form <index>_<label>.png, the true label
 * followed by `ok` or `WRONG`. A final line `<k>/<n> correct` counts the
 * labeled images. The exit status is non-zero only for errors (unreadable
 * or unsupported image, bundle failure), not for wrong predictions.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "lenet_mnist.h"

#define IMAGE_SIDE 28
#define IMAGE_PIXELS (IMAGE_SIDE * IMAGE_SIDE)
#define NUM_CLASSES 10

/* Model weights, compiled into the executable. */
GLOW_MEM_ALIGN(LENET_MNIST_MEM_ALIGN)
static uint8_t constantWeight[LENET_MNIST_CONSTANT_MEM_SIZE] = {
#include "lenet_mnist.weights.txt"
};

/* Model inputs and outputs. */
GLOW_MEM_ALIGN(LENET_MNIST_MEM_ALIGN)
static uint8_t mutableWeight[LENET_MNIST_MUTABLE_MEM_SIZE];

/* Scratch memory for intermediate results. */
GLOW_MEM_ALIGN(LENET_MNIST_MEM_ALIGN)
static uint8_t activations[LENET_MNIST_ACTIVATIONS_MEM_SIZE];

/*
 * Reads a 28x28 8-bit grayscale PNG into `pixels` (row-major).
 * Returns 0 on success; prints the reason and returns -1 otherwise.
 */
static int readDigitPng(const char *path, uint8_t pixels[IMAGE_PIXELS])
{
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "%s: cannot open: %s\n", path, strerror(errno));
        return -1;
    }

    png_byte signature[8];
    if (fread(signature, 1, sizeof(signature), file) != sizeof(signature) ||
        png_sig_cmp(signature, 0, sizeof(signature)) != 0) {
        fprintf(stderr, "%s: not a PNG file\n", path);
        fclose(file);
        return -1;
    }

    png_structp png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        fprintf(stderr, "%s: out of memory\n", path);
        png_destroy_read_struct(&png, NULL, NULL);
        fclose(file);
        return -1;
    }

    /* libpng reports decoding errors (after printing them) by jumping here. */
    if (setjmp(png_jmpbuf(png))) {
        fprintf(stderr, "%s: cannot decode PNG\n", path);
        png_destroy_read_struct(&png, &info, NULL);
        fclose(file);
        return -1;
    }

    png_init_io(png, file);
    png_set_sig_bytes(png, sizeof(signature));
    png_read_info(png, info);

    png_uint_32 width = png_get_image_width(png, info);
    png_uint_32 height = png_get_image_height(png, info);
    int bitDepth = png_get_bit_depth(png, info);
    int colorType = png_get_color_type(png, info);
    if (width != IMAGE_SIDE || height != IMAGE_SIDE || bitDepth != 8 ||
        colorType != PNG_COLOR_TYPE_GRAY) {
        fprintf(stderr,
                "%s: unsupported image (%ux%u, %d-bit, PNG color type %d); "
                "expected a %dx%d 8-bit grayscale PNG\n",
                path, (unsigned)width, (unsigned)height, bitDepth, colorType,
                IMAGE_SIDE, IMAGE_SIDE);
        png_destroy_read_struct(&png, &info, NULL);
        fclose(file);
        return -1;
    }

    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    png_bytep rows[IMAGE_SIDE];
    for (int y = 0; y < IMAGE_SIDE; y++) {
        rows[y] = pixels + y * IMAGE_SIDE;
    }
    png_read_image(png, rows);
    png_read_end(png, NULL);

    png_destroy_read_struct(&png, &info, NULL);
    fclose(file);
    return 0;
}

/*
 * Returns the true digit encoded in a file name of the form
 * <index>_<label>.png (e.g. "images/400_0.png" -> 0), or -1 if the name does
 * not have that form.
 */
static int labelFromFileName(const char *path)
{
    const char *name = strrchr(path, '/');
    const char *p = name ? name + 1 : path;

    if (!isdigit((unsigned char)*p)) {
        return -1;
    }
    while (isdigit((unsigned char)*p)) {
        p++;
    }
    if (*p++ != '_' || !isdigit((unsigned char)*p)) {
        return -1;
    }
    int label = *p++ - '0';
    return strcmp(p, ".png") == 0 ? label : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIGIT.png...\n", argv[0]);
        return EXIT_FAILURE;
    }

    float *input = (float *)GLOW_GET_ADDR(mutableWeight, LENET_MNIST_data);
    const float *probabilities =
        (const float *)GLOW_GET_ADDR(mutableWeight, LENET_MNIST_softmax);

    int labeled = 0;
    int correct = 0;
    for (int i = 1; i < argc; i++) {
        const char *path = argv[i];

        uint8_t pixels[IMAGE_PIXELS];
        if (readDigitPng(path, pixels) != 0) {
            return EXIT_FAILURE;
        }
        for (int p = 0; p < IMAGE_PIXELS; p++) {
            input[p] = pixels[p] / 255.0f;
        }

        int status = lenet_mnist(constantWeight, mutableWeight, activations);
        if (status != GLOW_SUCCESS) {
            fprintf(stderr, "%s: lenet_mnist failed with error %d\n", path,
                    status);
            return EXIT_FAILURE;
        }

        int predicted = 0;
        for (int c = 1; c < NUM_CLASSES; c++) {
            if (probabilities[c] > probabilities[predicted]) {
                predicted = c;
            }
        }
        printf("%s: predicted %d (p=%.4f)", path, predicted,
               probabilities[predicted]);

        int label = labelFromFileName(path);
        if (label >= 0) {
            labeled++;
            correct += predicted == label;
            printf(" label %d %s", label, predicted == label ? "ok" : "WRONG");
        }
        printf("\n");
    }

    printf("%d/%d correct\n", correct, labeled);
    return EXIT_SUCCESS;
}
