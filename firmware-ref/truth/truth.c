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
 * Task mode splits the same counts by RTOS task, exactly, at each task switch:
 *
 *   -plugin libtruth.so,outfile=counts.txt,taskfile=tasks.txt,tcbload=0x0800041a,taskswitch=0x08000428
 *
 * tcbload= names an instruction that loads the first word of the incoming task's control
 * block (the kernel's "pxCurrentTCB->pxTopOfStack"): the address it reads is that block's,
 * which names the task. taskswitch= names the instruction from which the incoming task owns
 * the CPU (in minirtos, the one after "msr psp": from there on a debugger unwinding through
 * the exception return lands in the new task's stack). Both may be given several times
 * (a scheduler's first start and its switches). Every instruction executed up to a switch
 * belongs to the task that ran before it, handlers included; those before the first switch to
 * no task. taskfile lines, sorted by task then address:
 *   0x200001a0 0x080002b4 3504    (control block, address, count; "none" before any task)
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
enum qemu_plugin_cb_flags {
    QEMU_PLUGIN_CB_NO_REGS = 0,
};
enum qemu_plugin_mem_rw {
    QEMU_PLUGIN_MEM_RW = 3, /* on QEMU 7.2, MEM_R (1) alone never called back for the load (measured) */
};
typedef uint32_t qemu_plugin_meminfo_t;

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
                                          void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn, enum qemu_plugin_op op,
                                                void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw, void *userdata);
void qemu_plugin_outs(const char *string);

PLUGIN_EXPORT int qemu_plugin_version = 1;
PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv);

/* ---- per-address counters ----
 * A counter's address is baked into translated code, so counters never move: they live in
 * fixed-size slabs. Only the lookup table of pointers is rehashed when it grows. */
enum { MAX_TASKS = 8 }; /* task 0 is "none": before the first switch */

struct counter {
    uint64_t addr;
    uint64_t count;
    uint64_t split;               /* task mode: the part of count already given to a task */
    uint64_t by_task[MAX_TASKS];
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
    c->split = 0;
    memset(c->by_task, 0, sizeof c->by_task);
    table[i] = c;
    n_counters++;
    return c;
}

/* ---- task mode ---- */
enum { MAX_POINTS = 8 };
static char *task_path;
static uint64_t tcb_loads[MAX_POINTS], task_switches[MAX_POINTS];
static uint64_t switch_calls[MAX_POINTS]; /* executions of each switch instruction seen so far */
static size_t n_tcb_loads, n_task_switches;
static uint64_t tasks[MAX_TASKS]; /* control block addresses; tasks[0] unused ("none") */
static size_t n_tasks = 1, current_task, incoming_task;
static bool too_many_tasks;

static bool listed(const uint64_t *list, size_t n, uint64_t addr)
{
    for (size_t k = 0; k < n; k++)
        if (list[k] == addr)
            return true;
    return false;
}

/* Everything counted since the last switch, except `keep` executions of `held`, belongs to the
 * task that ran. */
static void split_counts(const struct counter *held, uint64_t keep)
{
    for (struct slab *s = slabs; s != NULL; s = s->next)
        for (size_t k = 0; k < s->used; k++) {
            struct counter *c = &s->items[k];
            uint64_t upto = c->count - (c == held ? keep : 0);
            c->by_task[current_task] += upto - c->split;
            c->split = upto;
        }
}

static void on_tcb_load(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata)
{
    (void)vcpu;
    (void)info;
    (void)userdata;
    for (incoming_task = 1; incoming_task < n_tasks; incoming_task++)
        if (tasks[incoming_task] == vaddr)
            return;
    if (n_tasks == MAX_TASKS) {
        too_many_tasks = true;
        incoming_task = 0;
        return;
    }
    tasks[n_tasks] = vaddr;
    incoming_task = n_tasks++;
}

/* Runs before the switch instruction executes; its inline "count += 1" may have run already
 * (QEMU does not promise an order), and that execution is the incoming task's. */
static void on_task_switch(unsigned int vcpu, void *userdata)
{
    (void)vcpu;
    size_t point = (size_t)(uintptr_t)userdata;
    struct counter *c = counter_for(task_switches[point]);
    uint64_t calls = ++switch_calls[point];
    split_counts(c, c->count == calls ? 1 : 0);
    current_task = incoming_task;
}

/* Called once per translation (not per execution): attach "count += 1" to each instruction. */
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t k = 0; k < n; k++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
        uint64_t addr = qemu_plugin_insn_vaddr(insn);
        struct counter *c = counter_for(addr);
        for (size_t point = 0; point < n_task_switches; point++)
            if (task_switches[point] == addr)
                qemu_plugin_register_vcpu_insn_exec_cb(insn, on_task_switch, QEMU_PLUGIN_CB_NO_REGS,
                                                       (void *)(uintptr_t)point);
        if (listed(tcb_loads, n_tcb_loads, addr))
            qemu_plugin_register_vcpu_mem_cb(insn, on_tcb_load, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
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

    if (task_path != NULL) {
        split_counts(NULL, 0);
        f = fopen(task_path, "w");
        if (f == NULL)
            fprintf(stderr, "truth: cannot write %s\n", task_path);
        for (size_t t = 0; f != NULL && t < n_tasks; t++)
            for (size_t k = 0; k < n; k++)
                if (list[k]->by_task[t] != 0) {
                    if (t == 0)
                        fprintf(f, "none");
                    else
                        fprintf(f, "0x%08" PRIx64, tasks[t]);
                    fprintf(f, " 0x%08" PRIx64 " %" PRIu64 "\n", list[k]->addr, list[k]->by_task[t]);
                }
        if (f != NULL)
            fclose(f);
        if (too_many_tasks)
            fprintf(stderr, "truth: more than %d tasks: the rest counted as none\n", MAX_TASKS - 1);
    }
    free(list);
}

static bool add_point(uint64_t *list, size_t *n, const char *text)
{
    char *end = NULL;
    uint64_t addr = strtoull(text, &end, 0);
    if (end == text || *end != '\0' || *n == MAX_POINTS)
        return false;
    list[(*n)++] = addr & ~(uint64_t)1; /* a Thumb symbol's bit 0 is not part of the address */
    return true;
}

int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    for (int k = 0; k < argc; k++) {
        if (strncmp(argv[k], "outfile=", 8) == 0) {
            out_path = strdup(argv[k] + 8);
        } else if (strncmp(argv[k], "taskfile=", 9) == 0) {
            task_path = strdup(argv[k] + 9);
        } else if (strncmp(argv[k], "tcbload=", 8) == 0 && add_point(tcb_loads, &n_tcb_loads, argv[k] + 8)) {
        } else if (strncmp(argv[k], "taskswitch=", 11) == 0 && add_point(task_switches, &n_task_switches, argv[k] + 11)) {
        } else {
            fprintf(stderr, "truth: bad argument '%s' (expected outfile=PATH, taskfile=PATH, tcbload=ADDR, "
                            "taskswitch=ADDR; at most %d addresses each)\n", argv[k], MAX_POINTS);
            return -1;
        }
    }
    if (task_path != NULL && (n_tcb_loads == 0 || n_task_switches == 0)) {
        fprintf(stderr, "truth: taskfile= needs tcbload= and taskswitch=\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, write_counts, NULL);
    return 0;
}
