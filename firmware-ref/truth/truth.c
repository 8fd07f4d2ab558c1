/*
 * truth: a QEMU TCG plugin that counts how many times every guest instruction executes.
 *
 * It is the exact reference that every mcuprof sampling method is checked against. Under
 * -icount shift=0 every instruction costs the same virtual time, so the share of executions
 * of a range of addresses is the share of time spent there.
 *
 *   qemu-system-arm ... -plugin build/firmware-ref/libtruth.so,outfile=counts.txt
 *
 * At exit the plugin writes one line per executed instruction, sorted by address:
 *   0x080002b4 3504
 * (address in hex, execution count in decimal). Without outfile= the lines go to stderr
 * through qemu_plugin_outs.
 *
 * Debian ships qemu-system-arm with plugin support but without qemu-plugin.h, so the few
 * declarations of the plugin C API (version 1, QEMU 7.2) used here are written by hand.
 *
 * Counting uses one inline "add 1" per translated instruction, which QEMU emits as host code
 * in front of the instruction: no helper call per instruction. Counts stay exact under
 * -icount, because when an I/O access forces QEMU to retranslate the tail of a block it
 * retranslates with instruction instrumentation off (CF_MEMI_ONLY), so nothing is counted
 * twice. The guest has one vCPU, so the non-atomic add is exact too.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- hand-written subset of the QEMU plugin API, version 1 (include/qemu/qemu-plugin.h) ---- */
#define PLUGIN_EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t; /* only passed through, never read */
struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_op {
    QEMU_PLUGIN_INLINE_ADD_U64 = 0,
};

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn, enum qemu_plugin_op op,
                                                void *ptr, uint64_t imm);
void qemu_plugin_outs(const char *string);

PLUGIN_EXPORT int qemu_plugin_version = 1;
PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv);

/* ---- per-address counters ----
 * A counter's address is baked into translated code, so counters never move: they live in
 * fixed-size slabs. Only the lookup table of pointers is rehashed when it grows. */
struct counter {
    uint64_t addr;
    uint64_t count;
};

enum { SLAB_COUNTERS = 4096 };

struct slab {
    struct slab *next;
    size_t used;
    struct counter items[SLAB_COUNTERS];
};

static struct slab *slabs;
static struct counter **table; /* open addressing, linear probing, power-of-two size */
static size_t table_size;
static size_t n_counters;
static char *out_path;

static size_t hash_addr(uint64_t addr, size_t mask)
{
    /* Thumb instructions sit at even addresses: drop bit 0 before mixing. */
    uint64_t h = (addr >> 1) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & mask;
}

static void table_insert(struct counter *c)
{
    size_t mask = table_size - 1;
    size_t i = hash_addr(c->addr, mask);
    while (table[i] != NULL)
        i = (i + 1) & mask;
    table[i] = c;
}

static void table_grow(void)
{
    struct counter **old = table;
    size_t old_size = table_size;
    table_size = old_size ? old_size * 2 : 4096;
    table = calloc(table_size, sizeof *table);
    if (table == NULL) {
        fprintf(stderr, "truth: out of memory\n");
        abort();
    }
    for (size_t i = 0; i < old_size; i++)
        if (old[i] != NULL)
            table_insert(old[i]);
    free(old);
}

static struct counter *counter_for(uint64_t addr)
{
    if (table_size == 0 || (n_counters + 1) * 2 > table_size)
        table_grow();
    size_t mask = table_size - 1;
    size_t i = hash_addr(addr, mask);
    while (table[i] != NULL) {
        if (table[i]->addr == addr)
            return table[i];
        i = (i + 1) & mask;
    }
    if (slabs == NULL || slabs->used == SLAB_COUNTERS) {
        struct slab *s = calloc(1, sizeof *s);
        if (s == NULL) {
            fprintf(stderr, "truth: out of memory\n");
            abort();
        }
        s->next = slabs;
        slabs = s;
    }
    struct counter *c = &slabs->items[slabs->used++];
    c->addr = addr;
    c->count = 0;
    table[i] = c;
    n_counters++;
    return c;
}

/* Called once per translation (not per execution): attach "count += 1" to each instruction. */
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t k = 0; k < n; k++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
        struct counter *c = counter_for(qemu_plugin_insn_vaddr(insn));
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &c->count, 1);
    }
}

static int by_address(const void *a, const void *b)
{
    const struct counter *x = *(const struct counter *const *)a;
    const struct counter *y = *(const struct counter *const *)b;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

static void write_counts(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    struct counter **list = malloc((n_counters ? n_counters : 1) * sizeof *list);
    if (list == NULL)
        return;
    size_t n = 0;
    for (struct slab *s = slabs; s != NULL; s = s->next)
        for (size_t k = 0; k < s->used; k++)
            if (s->items[k].count != 0) /* translated but never executed: leave out */
                list[n++] = &s->items[k];
    qsort(list, n, sizeof *list, by_address);

    FILE *f = NULL;
    if (out_path != NULL) {
        f = fopen(out_path, "w");
        if (f == NULL)
            fprintf(stderr, "truth: cannot write %s\n", out_path);
    }
    char line[64];
    for (size_t k = 0; k < n; k++) {
        snprintf(line, sizeof line, "0x%08" PRIx64 " %" PRIu64 "\n", list[k]->addr, list[k]->count);
        if (f != NULL)
            fputs(line, f);
        else
            qemu_plugin_outs(line);
    }
    if (f != NULL)
        fclose(f);
    free(list);
}

int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int k = 0; k < argc; k++) {
        if (strncmp(argv[k], "outfile=", 8) == 0) {
            out_path = strdup(argv[k] + 8);
        } else {
            fprintf(stderr, "truth: unknown argument '%s' (expected outfile=PATH)\n", argv[k]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, write_counts, NULL);
    return 0;
}
