/* QEMU TCG plugin (API v1, QEMU 7.2): every executed translation block with its instructions,
 * for a cycle estimate (glowmlir.runtime.cycles) and per-function counts (`glow-run -profile`,
 * glowmlir.layer_profile). Declarations written by hand because Debian ships no qemu-plugin.h.
 *
 * args: ranges=FILE  optional: one "START END" line (hex, END exclusive) per range; range k
 *                    (from 1) is the k-th line
 *       flash=LO-HI  optional (hex, HI exclusive): also count the data reads from there, per
 *                    bucket ("flash reads: BUCKET COUNT" lines before the blocks)
 *       out=FILE     where the result goes (default: stderr):
 *                      insns: TOTAL
 *                      START BUCKET COUNT TAKEN ADDRESS:BYTES ADDRESS:BYTES ...
 *                    one line per translated block and bucket it ran in: the block's start
 *                    (hex), the bucket, how often it ran there, how often it was left by a
 *                    taken branch (the next block to run did not start where it ends), and
 *                    each instruction's address and bytes (hex, in memory order; the bytes
 *                    may run on into the next instruction's, see block_executed)
 *
 * Bucket: the range that ran last before the block (0: none yet; always 0 without ranges). An
 * instruction inside a range counts for that range, one outside every range for the range
 * that ran last (a soft-float helper, memcpy, libm: its cost lands on its caller), which the
 * host reconstructs from the block's bucket and its instructions' addresses. Counting is per
 * block as in insncount.c, so TOTAL is what insncount.c counts.                          */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb; struct qemu_plugin_insn; typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef uint32_t qemu_plugin_meminfo_t;
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int, qemu_plugin_meminfo_t, uint64_t, void *);
_Bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *, qemu_plugin_vcpu_mem_cb_t, enum qemu_plugin_cb_flags,
                                      enum qemu_plugin_mem_rw, void *);
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*udata_cb_t)(qemu_plugin_id_t, void *);
typedef void (*vcpu_udata_cb_t)(unsigned int, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb_t);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, vcpu_udata_cb_t, enum qemu_plugin_cb_flags,
                                          void *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, udata_cb_t, void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct range { uint64_t start, end; };
struct entry { int bucket; uint64_t count, taken; struct entry *next; };  /* a block's runs in one bucket */
struct block {
    uint64_t start, last, end;  /* last: its last instruction's address; end: after it */
    size_t instructions;
    int exit_range;       /* the range of its last instruction inside one (0: none) */
    char *text;           /* " ADDRESS:BYTES" per instruction */
    struct entry *entries;
    struct block *next;   /* every block translated */
};

static struct range *ranges;
static int range_count;
static struct block *blocks;
static struct block *previous;        /* the block that ran last, and the entry it ran in */
static struct entry *previous_entry;
static int last;                      /* the range that ran last (0: none yet) */
static char outpath[256];
static uint64_t flash_low, flash_high;  /* flash_high 0: not counting flash reads */
static uint64_t *flash_reads;           /* per bucket */

static void memory_read(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t address, void *data) {
    if (address >= flash_low && address < flash_high && !qemu_plugin_mem_is_store(info))
        flash_reads[last]++;  /* the bucket: the block's, or a range entered inside it (rare) */
}

static int range_of(uint64_t pc) {
    for (int k = 0; k < range_count; k++)
        if (pc >= ranges[k].start && pc < ranges[k].end)
            return k + 1;
    return 0;
}

static void block_executed(unsigned int vcpu, void *data) {
    struct block *block = data;
    struct entry *entry = block->entries;
    /* Not a fall-through: taken. QEMU's Thumb translator may read the half-word after a block's
     * last instruction near a page end (to see whether the next instruction crosses it), which
     * then shows in that instruction's bytes: the fall-through starts at most at `end`. */
    if (previous && (block->start <= previous->last || block->start > previous->end))
        previous_entry->taken++;
    while (entry && entry->bucket != last)
        entry = entry->next;
    if (!entry) {
        entry = calloc(1, sizeof *entry);
        entry->bucket = last;
        entry->next = block->entries;
        block->entries = entry;
    }
    entry->count++;
    if (block->exit_range)
        last = block->exit_range;
    previous = block;
    previous_entry = entry;
}

static void block_translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    size_t n = qemu_plugin_tb_n_insns(tb), length = 0;
    struct block *block = calloc(1, sizeof *block);  /* lives as long as QEMU */
    block->instructions = n;
    for (size_t i = 0; i < n; i++)
        length += 18 + 2 * qemu_plugin_insn_size(qemu_plugin_tb_get_insn(tb, i));
    block->text = malloc(length + 1);
    length = 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        size_t size = qemu_plugin_insn_size(insn);
        const uint8_t *bytes = qemu_plugin_insn_data(insn);
        int range = range_of(pc);
        if (i == 0)
            block->start = pc;
        block->last = pc;
        block->end = pc + size;
        if (range)
            block->exit_range = range;
        if (flash_high)
            /* every access, reads told apart in memory_read: QEMU 7.2 calls a MEM_R callback on stores */
            qemu_plugin_register_vcpu_mem_cb(insn, memory_read, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
        length += sprintf(block->text + length, " %llx:", (unsigned long long)pc);
        for (size_t b = 0; b < size; b++)
            length += sprintf(block->text + length, "%02x", bytes[b]);
    }
    block->next = blocks;
    blocks = block;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, block_executed, QEMU_PLUGIN_CB_NO_REGS, block);
}

static void at_exit(qemu_plugin_id_t id, void *p) {
    FILE *f = outpath[0] ? fopen(outpath, "w") : stderr;
    uint64_t total = 0;
    for (struct block *block = blocks; block; block = block->next)
        for (struct entry *entry = block->entries; entry; entry = entry->next)
            total += entry->count * block->instructions;
    fprintf(f, "insns: %llu\n", (unsigned long long)total);
    if (flash_high)
        for (int k = 0; k <= range_count; k++)
            fprintf(f, "flash reads: %d %llu\n", k, (unsigned long long)flash_reads[k]);
    for (struct block *block = blocks; block; block = block->next)
        for (struct entry *entry = block->entries; entry; entry = entry->next)
            fprintf(f, "%llx %d %llu %llu%s\n", (unsigned long long)block->start, entry->bucket,
                    (unsigned long long)entry->count, (unsigned long long)entry->taken, block->text);
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
    return 0;
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "ranges=", 7) && read_ranges(argv[i] + 7)) {
            fprintf(stderr, "blockcount: %s unreadable\n", argv[i] + 7);
            return -1;
        }
        if (!strncmp(argv[i], "out=", 4))
            strncpy(outpath, argv[i] + 4, sizeof outpath - 1);
        if (!strncmp(argv[i], "flash=", 6)) {
            char *end;
            flash_low = strtoull(argv[i] + 6, &end, 16);
            flash_high = strtoull(end + 1, 0, 16);
        }
    }
    flash_reads = calloc(range_count + 1, sizeof *flash_reads);
    qemu_plugin_register_vcpu_tb_trans_cb(id, block_translated);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
