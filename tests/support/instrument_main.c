/* A bundle user in the manner of Glow's examples/bundles/bundle_instrument: runs a bundle built
 * with -instrument-debug -instrument-debug-format=rawbin -instrument-ir once on the input in
 * INPUT_FILE (raw float32), and writes from the glow_instrument_before/after callbacks the same
 * files the bundle's own dumps are (dataNNNN.bin, each instruction's output first, then its
 * inputs) into IR_DIR, so that the two sets can be compared. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include BUNDLE_HEADER

static uint8_t constant_weight[BUNDLE_CONSTANT] __attribute__((aligned(64)));
static uint8_t mutable_weight[BUNDLE_MUTABLE] __attribute__((aligned(64)));
static uint8_t activations[BUNDLE_ACTIVATIONS] __attribute__((aligned(64)));

static int next_file = 0, instructions = 0, dumps = 0;

static void dump(const uint8_t *data, int size, int index) {
  char path[1024];
  snprintf(path, sizeof path, "%s/data%04d.bin", IR_DIR, index);
  FILE *file = fopen(path, "wb");
  fwrite(data, 1, (size_t)size, file);
  fclose(file);
  dumps++;
}

void glow_instrument_before(int id, int kind, int inputs, int outputs, uint8_t **address, int *size) {
  (void)kind;
  if (id != instructions) printf("ERROR: instruction id %d, expected %d\n", id, instructions);
  for (int k = 0; k < inputs; k++) dump(address[k], size[k], next_file + outputs + k);
}

void glow_instrument_after(int id, int kind, int inputs, int outputs, uint8_t **address, int *size) {
  (void)id;
  (void)kind;
  for (int k = 0; k < outputs; k++) dump(address[inputs + k], size[inputs + k], next_file + k);
  next_file += inputs + outputs;
  instructions++;
}

static void read_file(const char *path, uint8_t *into, size_t size) {
  FILE *file = fopen(path, "rb");
  if (!file || fread(into, 1, size, file) != size) { printf("ERROR: cannot read %s\n", path); exit(1); }
  fclose(file);
}

int main(void) {
  read_file(WEIGHTS_FILE, constant_weight, BUNDLE_CONSTANT);
  read_file(INPUT_FILE, mutable_weight + BUNDLE_INPUT_OFFSET, BUNDLE_INPUT_SIZE);
  if (BUNDLE_ENTRY(constant_weight, mutable_weight, activations) != 0) return 1;
  printf("instructions %d dumps %d\n", instructions, dumps);
  return 0;
}
