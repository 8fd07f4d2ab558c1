/*
 * truth: what the counting (truth.c) and the glue of each QEMU plugin API (truth_api1.c,
 * truth_api4.c) share. Nothing here names a QEMU type: an instruction is the glue's opaque
 * handle, passed through.
 */
#ifndef MCUPROF_TRUTH_H
#define MCUPROF_TRUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { MAX_TASKS = 8 }; /* task 0 is "none": before the first switch */
enum { MAX_VCPUS = 8 };  /* cores counted apart (mps2-an521 has 2) */
enum { SLAB_COUNTERS = 4096 };

struct counter {
    uint64_t addr;
    uint64_t *count;    /* vCPU 0's executions: the slot the API's inline add writes, never moved */
    void *storage;      /* the API's handle of the slab of counts this slot is in ... */
    size_t slot;        /* ... and its index there */
    uint64_t split;     /* task mode: the part of count already given to a task */
    uint64_t time_ns;   /* uniform-cost mode: host time in which a halt would have stopped here */
    uint64_t long_ns;   /* ... of which in single stretches longer than PAUSE_NS (add_time) */
    uint64_t shown_ns;  /* uniform-cost mode: host time in which a PC read (pcfile=) would have given this */
    uint32_t size;      /* bytes, so that the next address in sequence is known */
    struct counter *next; /* uniform-cost mode: the counter of addr + size, resolved at translation */
    bool entry;         /* an exception handler's first instruction (entries=) */
    uint64_t by_task[MAX_TASKS];
};

/* What the counting needs of QEMU, from the glue of the API the running QEMU speaks. */
struct truth_api {
    /* n zeroed counts that never move (their addresses are baked into translated code) */
    uint64_t *(*new_counts)(size_t n, void **storage);
    /* at translation: vCPU k's count of c plus 1 before each execution of insn on vCPU k */
    void (*count_each)(void *insn, const struct counter *c);
    /* vCPU k's executions of c */
    uint64_t (*count_of)(const struct counter *c, unsigned vcpu);
    /* at translation: truth_task_switch(point) before each execution of insn */
    void (*call_before)(void *insn, size_t point);
    /* at translation: truth_tcb_load(address) at each load insn makes */
    void (*call_on_load)(void *insn);
    /* at translation: truth_before_each(c) before each execution of insn */
    void (*call_before_each)(void *insn, struct counter *c);
    /* a line of output to QEMU's log (no outfile=) */
    void (*outs)(const char *line);
};

/* The plugin's arguments and the machine's vCPUs; 0, or -1 after a one-line message on stderr. */
int truth_start(const struct truth_api *api, unsigned vcpus, int argc, char **argv);
/* One translated instruction: its counter and, in task mode, its calls. */
void truth_instrument(void *insn, uint64_t addr, size_t size);
void truth_tcb_load(uint64_t vaddr);
void truth_task_switch(size_t point);
/* Uniform cost, snapshots and the PC file (cost=, snapshots=, pcfile=): before each execution of
 * every instruction. */
void truth_before_each(unsigned vcpu, struct counter *c);
/* At exit: the counts (and the task file). */
void truth_write(void);

/* API 4's glue (truth_api4.c), for the entry points in truth_api1.c: whether the running QEMU
 * has API 4's calls, and the plugin's start under it (id: QEMU's qemu_plugin_id_t). */
bool truth_api4_present(void);
/* info: QEMU's qemu_info_t, whose layout API 1 and API 4 share */
int truth_install_api4(uint64_t id, const void *info, int argc, char **argv);

#endif
