/* QEMU TCG plugin (API v1, QEMU 7.2): executed guest instructions per address range, for
 * `glow-run -profile` (glowmlir.layer_profile). Declarations written by hand because Debian
 * ships no qemu-plugin.h.
 *
 * args: ranges=FILE  one "START END" line (hex, END exclusive) per range; range k (from 1)
 *                    is the k-th line
 *       out=FILE     where the counts go: "insns: TOTAL", then one "K COUNT" line per
 *                    bucket (0: before any range ran)
 *
 * Rule: an instruction inside a range counts for that range; one outside every range
 * (a soft-float helper such as __aeabi_fmul, memcpy, libm) counts for the range that ran
 * last, so a helper's cost lands on the layer that called it. Every instruction counts
 * exactly once, so the buckets sum to the total, which is what insncount.c counts.
 * Counting is per translation block, as in insncount.c: a block that spans ranges (it
 * should not: kernels are functions) is split into runs of one range each.             */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb; struct qemu_plugin_insn; typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*udata_cb_t)(qemu_plugin_id_t, void *);
typedef void (*vcpu_udata_cb_t)(unsigned int, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb_t);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, vcpu_udata_cb_t, enum qemu_plugin_cb_flags,
                                          void *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, udata_cb_t, void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct range { uint64_t start, end; };
struct run { int range; uint64_t instructions; };  /* range 0: outside every range */
struct block { size_t runs; struct run run[]; };

static struct range *ranges;
static int range_count;
static uint64_t *counts;  /* per bucket: 0 (before any range ran), then each range */
static int last;          /* the range that ran last (0: none yet) */
static char outpath[256];

static int range_of(uint64_t pc) {
    for (int k = 0; k < range_count; k++)
        if (pc >= ranges[k].start && pc < ranges[k].end)
            return k + 1;
    return 0;
}

static void block_executed(unsigned int vcpu, void *data) {
    const struct block *block = data;
    for (size_t i = 0; i < block->runs; i++) {
        if (block->run[i].range)
            last = block->run[i].range;
        counts[last] += block->run[i].instructions;
    }
}

static void block_translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    size_t n = qemu_plugin_tb_n_insns(tb);
    struct block *block = calloc(1, sizeof *block + n * sizeof block->run[0]);  /* lives as long as QEMU */
    for (size_t i = 0; i < n; i++) {
        int range = range_of(qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i)));
        if (block->runs == 0 || block->run[block->runs - 1].range != range)
            block->run[block->runs++].range = range;
        block->run[block->runs - 1].instructions++;
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, block_executed, QEMU_PLUGIN_CB_NO_REGS, block);
}

static void at_exit(qemu_plugin_id_t id, void *p) {
    FILE *f = outpath[0] ? fopen(outpath, "w") : stderr;
    uint64_t total = 0;
    for (int k = 0; k <= range_count; k++)
        total += counts[k];
    fprintf(f, "insns: %llu\n", (unsigned long long)total);
    for (int k = 0; k <= range_count; k++)
        fprintf(f, "%d %llu\n", k, (unsigned long long)counts[k]);
    if (f != stderr) fclose(f);
}

static int read_ranges(const char *path) {
    FILE *f = fopen(path, "r");
    unsigned long long start, end;
    int capacity = 64;
    if (!f)
        return -1;
    ranges = malloc(capacity * sizeof *ranges);
    while (fscanf(f, "%llx %llx", &start, &end) == 2) {
        if (range_count == capacity)
            ranges = realloc(ranges, (capacity *= 2) * sizeof *ranges);
        ranges[range_count++] = (struct range){start, end};
    }
    fclose(f);
    counts = calloc(range_count + 1, sizeof *counts);
    return 0;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    const char *range_file = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "ranges=", 7)) range_file = argv[i] + 7;
        else if (!strncmp(argv[i], "out=", 4)) strncpy(outpath, argv[i] + 4, sizeof outpath - 1);
    }
    if (!range_file || read_ranges(range_file)) {
        fprintf(stderr, "layercount: ranges=FILE missing or unreadable\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, block_translated);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
