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
 * Uniform-cost mode makes wall-clock time proportional to instructions, so that a sampler
 * that halts or reads the PC at wall-clock instants (gdbstub, OpenOCD through the vprobe) can
 * be held against an exact count:
 *
 *   -plugin libtruth.so,outfile=counts.txt,cost=500,snapshots=requests.fifo
 *
 * cost=NS: a callback before every instruction waits until NS host nanoseconds have passed
 * since the previous instruction's turn, so each instruction occupies the same host time. The
 * turns are kept on a running deadline: an instruction that QEMU itself takes longer than NS
 * to emulate (an I/O access, a translation) borrows from the next ones, so the time stays
 * proportional over a run; a pause longer than PAUSE_NS (the vCPU stopped by a debugger's
 * halt, or the host running something else) starts the deadline afresh instead of being
 * caught up in a burst. Best with one instruction per translation block (-singlestep or
 * -accel tcg,one-insn-per-tb=on), where QEMU checks for a halt request between instructions.
 *
 * snapshots=FIFO: a named pipe (made by the requester) from which the plugin reads, between two
 * instructions, lines that each name a file; it writes there the counts so far, in outfile's
 * format (and in task mode the task lines so far to FILE.tasks), first to FILE.part and then
 * renamed, so a file that exists is whole. The difference of two snapshots is the exact count
 * of the window between them, to within the instruction being executed when each was taken.
 * A halted vCPU runs no instructions: a request made while it is halted is served when it
 * runs again. In uniform-cost mode a snapshot also writes FILE.time (before FILE): the time
 * census, the host nanoseconds in which a wall-clock halt would have stopped at each address
 * ("0xADDRESS NS LONG", LONG the part of NS given in single stretches over 20 us, stalls; see
 * charge_time). entry=ADDR (up to 64, the exception handlers' first
 * instructions: the runner gives the vector table's) tells that census where an interrupt
 * begins. On a loaded host it is the reference for wall-clock halts, which the counts are not.
 *
 * pcfile=PATH: a PC read that does not stop the vCPU, for the virtual probe's DWT_PCSR
 * (mcuprof vprobe --pc-file PATH, docs/vprobe.md). The plugin makes PATH a small file mapped
 * shared: the 32-bit word PC_FILE_MAGIC, the number of vCPUs, then one aligned 32-bit slot per
 * vCPU, to which each vCPU stores, with a plain atomic store and no lock, the address of the
 * instruction it is about to execute, once that instruction's turn has come (after its wait in
 * uniform-cost mode). So at any instant a slot holds the instruction executing or the last one
 * executed, what DDI 0403 (C1.8.9, DWT_PCSR) lets the register return: "the address of a
 * recently executed instruction". A slot reads 0xFFFFFFFF before its vCPU's first instruction.
 * Reading it costs the vCPU nothing: no halt, no exit from the translated code. In uniform-cost
 * mode a snapshot also writes FILE.pcsr, the census of such reads: the host nanoseconds each
 * address was in its slot (see charge_shown for how it differs from the halts' FILE.time).
 *
 * One plugin serves QEMU 7.2 (plugin API 1) and QEMU 10 (API 4): this file is the counting,
 * free of QEMU's types; truth_api1.c and truth_api4.c are the glue, each compiled against its
 * API's own qemu-plugin.h (third_party/qemu-plugin/, from Debian's QEMU source packages), so
 * no declaration can disagree with a version's layout. truth_api1.c says how the API is chosen
 * when QEMU loads the plugin.
 *
 * Counting uses one inline "add 1" per translated instruction, which QEMU emits as host code
 * in front of the instruction: no helper call per instruction. Counts stay exact under
 * -icount, because when an I/O access forces QEMU to retranslate the tail of a block it
 * retranslates with instruction instrumentation off (CF_MEMI_ONLY), so nothing is counted
 * twice.
 *
 * A machine of several cores (mps2-an521's two Cortex-M33) is counted per vCPU: QEMU runs each
 * vCPU in a thread of its own (MTTCG), and each vCPU adds only to its own counts (API 1: a
 * callback given the vCPU's index; API 4: its entry of a scoreboard), so the non-atomic adds
 * stay exact. The files then carry one line per address and core, "0xADDRESS COUNT CORE",
 * after a line "# vcpus N"; uniform cost keeps one deadline per vCPU, so each core's own
 * instructions are paced alike, and the time census, the machine's, is added to atomically.
 * MTTCG also translates on every vCPU thread at once: the counters are made under a lock, at
 * translation only (each instruction's successor in sequence included), never per execution. Task mode follows one core's tasks only: it refuses a machine
 * of several.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "truth.h"

static const struct truth_api *api;

/* ---- per-address counters ----
 * A counter's address is baked into translated code, so counters never move: they live in
 * fixed-size slabs. Only the lookup table of pointers is rehashed when it grows.
 * Under MTTCG each vCPU thread translates its own code, at the same time as the others (system
 * mode has no translation lock: mmap_lock is a no-op there), so the table and the slabs are
 * guarded by counters_lock: counter_for() and the walks of the slabs (a task switch's split, a
 * snapshot, the output) run under it, at translation, at a task switch or at the end, never once
 * per instruction, so the lock costs nothing on the hot path. */
struct slab {
    struct slab *next;
    size_t used;
    void *storage;    /* the API's handle of counts (API 4: its scoreboard) */
    uint64_t *counts; /* SLAB_COUNTERS execution counts, where the API's inline add writes */
    struct counter items[SLAB_COUNTERS];
};

static struct slab *slabs;
static struct counter **table; /* open addressing, linear probing, power-of-two size */
static size_t table_size;
static size_t n_counters;
static char *out_path;
static char *pc_path;
static unsigned n_vcpus = 1;
static pthread_mutex_t counters_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* The counter of addr, made when new; the caller holds counters_lock. */
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
        s->counts = api->new_counts(SLAB_COUNTERS, &s->storage);
        if (s->counts == NULL) {
            fprintf(stderr, "truth: out of memory\n");
            abort();
        }
        s->next = slabs;
        slabs = s;
    }
    size_t slot = slabs->used++;
    struct counter *c = &slabs->items[slot];
    c->addr = addr;
    c->count = &slabs->counts[slot];
    c->storage = slabs->storage;
    c->slot = slot;
    c->split = 0;
    c->time_ns = 0;
    c->long_ns = 0;
    c->shown_ns = 0;
    c->next = NULL;
    memset(c->by_task, 0, sizeof c->by_task);
    table[i] = c;
    n_counters++;
    return c;
}

/* ---- uniform cost and snapshots ---- */
enum { PAUSE_NS = 20000 };   /* longer than any instruction QEMU emulates; shorter than a halt */
enum { POLL_EVERY = 4096 };  /* instructions between two looks at the snapshot pipe */
static uint64_t cost_ns;
static uint64_t deadline_ns[MAX_VCPUS];
static int snapshot_fd = -1;
static char *snapshot_fifo;
static uint64_t until_poll[MAX_VCPUS];
/* One vCPU at a time serves the pipe; the others go on running meanwhile. */
static pthread_mutex_t snapshot_lock = PTHREAD_MUTEX_INITIALIZER;
static char request[4096];
static size_t request_len;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void write_snapshot(const char *path);

/* Reads what the pipe holds without waiting; serves each whole line. */
static void poll_snapshot_requests(void)
{
    for (;;) {
        ssize_t got = read(snapshot_fd, request + request_len, sizeof request - 1 - request_len);
        if (got <= 0)
            return;   /* 0: no writer now; -1 with EAGAIN: nothing written yet */
        request_len += (size_t)got;
        char *line_end;
        while ((line_end = memchr(request, '\n', request_len)) != NULL) {
            *line_end = '\0';
            if (line_end != request)
                write_snapshot(request);
            size_t used = (size_t)(line_end - request) + 1;
            memmove(request, line_end + 1, request_len - used);
            request_len -= used;
        }
        if (request_len == sizeof request - 1) {
            fprintf(stderr, "truth: a snapshot request of over %zu bytes: dropped\n", sizeof request - 1);
            request_len = 0;
        }
    }
}

/* The time census (uniform-cost mode): for each instruction, the host time in which a halt
 * requested by wall clock would have stopped the vCPU there. With one instruction a
 * translation block, TCG checks for an exit request at each block's start, before the
 * instruction's callbacks; so a request made while instruction P waits its turn, or while P
 * executes, stops the vCPU at the next instruction N. Between P's wait and N's callback is
 * QEMU's own time (the gap), counted by what it was:
 *  - short (under PAUSE_NS): N's, as the wait;
 *  - before an exception entry (N is one of entries=, reached from a P that does not precede
 *    it): QEMU's work at a timer event, the event's interrupt taken only after it. A halt
 *    requested then stops at the interrupted instruction, P's successor in sequence (QEMU
 *    delivers the pending interrupt once the main loop has run the timer; measured: a
 *    loaded host's timer stalls were seen by halts in the interrupted code, not the handler);
 *  - any other long gap: left out. It is a debugger's halt (the vCPU stopped between two
 *    blocks: counting it would weigh the census by the very samples it is to check) or the
 *    host's scheduler between two blocks, which falls nowhere in particular.
 * Preemption of the vCPU thread in a wait is in that wait: uniform over the instructions.
 * Stretches longer than PAUSE_NS given at once (a wait in which the host preempted the vCPU
 * thread, a gap moved before an entry) are also summed apart (long_ns, FILE.time's third
 * column). They are true time, but a sampler that waits for its own halt finds such a stall at
 * most once, however long it is, where the census expects it as often as its length holds the
 * sampler's interval: for halts every 100 ms a stall of 300 ms is one sample, not three, and for
 * reads back to back one, not hundreds. (A PC read from the PC file does not wait, and the
 * PC-read census needs no such column.) A gap before an entry may also be a debugger's halt
 * that QEMU ended with the interrupt's delivery, which the census misplaces. A test so knows
 * how much of its reference rests on stalls. */
/* Per vCPU (a multi-core machine's vCPUs each run in a thread of its own); the census itself is
 * the machine's, added to by every vCPU. */
static uint64_t last_turn_ns[MAX_VCPUS], last_wait_end_ns[MAX_VCPUS];
static struct counter *last_counter[MAX_VCPUS];
enum { MAX_ENTRIES = 64 };
static uint64_t entries[MAX_ENTRIES];
static size_t n_entries;

/* Adds to the census from any vCPU: two cores may run the same code at once. */
static void add_time(struct counter *c, uint64_t ns)
{
    __atomic_fetch_add(&c->time_ns, ns, __ATOMIC_RELAXED);
    if (ns > PAUSE_NS)   /* one stretch longer than any instruction takes: a stall */
        __atomic_fetch_add(&c->long_ns, ns, __ATOMIC_RELAXED);
}

static void charge_time(unsigned vcpu, struct counter *c, uint64_t now)
{
    struct counter *p = last_counter[vcpu];
    if (p == NULL)
        return;
    uint64_t own = last_wait_end_ns[vcpu] - last_turn_ns[vcpu];
    const uint64_t gap = now - last_wait_end_ns[vcpu];
    if (gap <= PAUSE_NS)
        own += gap;
    else if (c->entry && p->next != c && p->next != NULL)   /* P's successor in sequence: resolved at translation */
        add_time(p->next, gap);
    add_time(c, own);
}

/* The PC file (pcfile=): header words, then a slot per vCPU. The layout is shared with the
 * vprobe's reader (src/vprobe/pc_file.cc), which checks the magic and the count. */
enum { PC_FILE_MAGIC = 0x31464350 };   /* "PCF1" in the file's little-endian bytes */
enum { PC_FILE_HEADER_WORDS = 2 };
static uint32_t *pc_slots;

/* The census of non-intrusive PC reads: the host time each address was in its vCPU's slot.
 * Called on instruction N's turn after its wait: P, the instruction before it on this vCPU, was
 * in the slot from the end of P's wait (`last_wait_end_ns`) to the end of N's (`wait_end`):
 * P's own execution, QEMU's time between the two (the gap) and N's wait. A halt census
 * (charge_time) gives the same time to the instruction a halt would stop at, N; a read of the
 * slot gives P, so here P is charged, and every gap with it, long ones included: whatever
 * QEMU does between two instructions (its work at a timer event, a wait for its main loop, the
 * host's scheduler), a read meanwhile gives P. The halt census leaves long gaps out, or moves
 * them, by a model of where a halt would land; a read needs no model, and back-to-back reads
 * do land in those gaps more than elsewhere (the reader gets the CPU when the vCPU thread
 * blocks: measured, docs/vprobe.md). Only the plugin's own snapshot writing is left out. So
 * this census is the reference for windows in which no debugger halts the core (while halted,
 * the vprobe answers 0xFFFFFFFF; a halt inside the window would be counted to P): PCSR
 * recordings and OpenOCD's `profile`. */
static uint64_t not_shown_ns[MAX_VCPUS];   /* per vCPU: snapshot writing since its last turn */

static void charge_shown(unsigned vcpu, uint64_t wait_end)
{
    struct counter *p = last_counter[vcpu];
    if (p == NULL) {
        /* The vCPU's first instruction: nothing was shown before it. Snapshot writing done in
         * its turn (the first poll comes at the first instruction, and a request made while QEMU
         * was still stopped is served there) lies before any interval of a later charge, so it is
         * dropped here, not subtracted from the next: that made the next charge wrap below zero
         * and gave the first instruction 2^64 ns less a few ms (seen once, the first window of a
         * run whose first snapshot was asked for before the guest started). */
        not_shown_ns[vcpu] = 0;
        return;
    }
    const uint64_t shown = wait_end - last_wait_end_ns[vcpu] - not_shown_ns[vcpu];
    not_shown_ns[vcpu] = 0;
    __atomic_fetch_add(&p->shown_ns, shown, __ATOMIC_RELAXED);
}

/* The address vcpu is about to execute, for a PC read from another process: one aligned word,
 * stored atomically so a reader never sees half of two addresses. */
static void publish_pc(unsigned vcpu, const struct counter *c)
{
    if (pc_slots != NULL)
        __atomic_store_n(&pc_slots[PC_FILE_HEADER_WORDS + vcpu], (uint32_t)c->addr, __ATOMIC_RELAXED);
}

void truth_before_each(unsigned vcpu, struct counter *c)
{
    if (vcpu >= n_vcpus)
        vcpu = 0;   /* a vCPU QEMU did not announce: paced with the first */
    if (snapshot_fd >= 0 && until_poll[vcpu]-- == 0) {
        until_poll[vcpu] = POLL_EVERY;
        if (pthread_mutex_trylock(&snapshot_lock) == 0) {
            const uint64_t started = cost_ns != 0 ? now_ns() : 0;
            poll_snapshot_requests();
            pthread_mutex_unlock(&snapshot_lock);
            if (cost_ns != 0)
                not_shown_ns[vcpu] += now_ns() - started;
        }
    }
    if (cost_ns == 0) {
        publish_pc(vcpu, c);
        return;
    }
    const uint64_t turn = now_ns();
    uint64_t now = turn;
    charge_time(vcpu, c, now);
    uint64_t *deadline = &deadline_ns[vcpu];
    if (now > *deadline + PAUSE_NS)
        *deadline = now;   /* after a pause: start afresh, no burst to catch up */
    *deadline += cost_ns;
    while (now < *deadline)
        now = now_ns();
    /* The slot moves to this instruction only now: during its wait the last one executed, P,
     * is the recently executed instruction a PC read gives. */
    publish_pc(vcpu, c);
    charge_shown(vcpu, now);
    last_turn_ns[vcpu] = turn;
    last_counter[vcpu] = c;
    last_wait_end_ns[vcpu] = now;
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
 * task that ran. The caller holds counters_lock. */
static void split_counts(const struct counter *held, uint64_t keep)
{
    for (struct slab *s = slabs; s != NULL; s = s->next)
        for (size_t k = 0; k < s->used; k++) {
            struct counter *c = &s->items[k];
            uint64_t upto = *c->count - (c == held ? keep : 0);
            c->by_task[current_task] += upto - c->split;
            c->split = upto;
        }
}

void truth_tcb_load(uint64_t vaddr)
{
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
 * (QEMU does not promise an order), and that execution is the incoming task's. The walk of the
 * slabs is under counters_lock, as every other walk of them is: translation adds counters and
 * slabs under it, and the walk must not meet one half made. (truth_start also refuses task mode
 * on a machine of several vCPUs, whose tasks one split could not tell apart; the lock keeps the
 * walk right whatever thread translates.) */
void truth_task_switch(size_t point)
{
    pthread_mutex_lock(&counters_lock);
    struct counter *c = counter_for(task_switches[point]);
    uint64_t calls = ++switch_calls[point];
    split_counts(c, *c->count == calls ? 1 : 0);
    current_task = incoming_task;
    pthread_mutex_unlock(&counters_lock);
}

void truth_instrument(void *insn, uint64_t addr, size_t size)
{
    pthread_mutex_lock(&counters_lock);
    struct counter *c = counter_for(addr);
    c->size = (uint32_t)size;
    c->entry = listed(entries, n_entries, addr);
    /* The successor in sequence, for charge_time: found here, once, not per instruction. A
     * counter made for it but never executed is in no output (executed()). */
    if (cost_ns != 0)
        c->next = counter_for(addr + size);
    pthread_mutex_unlock(&counters_lock);
    for (size_t point = 0; point < n_task_switches; point++)
        if (task_switches[point] == addr)
            api->call_before(insn, point);
    if (listed(tcb_loads, n_tcb_loads, addr))
        api->call_on_load(insn);
    api->count_each(insn, c);
    if (cost_ns != 0 || snapshot_fd >= 0 || pc_slots != NULL)
        api->call_before_each(insn, c);
}

static int by_address(const void *a, const void *b)
{
    const struct counter *x = *(const struct counter *const *)a;
    const struct counter *y = *(const struct counter *const *)b;
    return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The executions of c on every vCPU. */
static uint64_t total_of(const struct counter *c)
{
    uint64_t total = 0;
    for (unsigned k = 0; k < n_vcpus; k++)
        total += api->count_of(c, k);
    return total;
}

/* The counters executed at least once, sorted by address; NULL when out of memory. */
static struct counter **executed(size_t *n)
{
    /* A snapshot runs on one vCPU while another may be translating: the slabs stand still. */
    pthread_mutex_lock(&counters_lock);
    struct counter **list = malloc((n_counters ? n_counters : 1) * sizeof *list);
    if (list == NULL) {
        pthread_mutex_unlock(&counters_lock);
        return NULL;
    }
    *n = 0;
    for (struct slab *s = slabs; s != NULL; s = s->next)
        for (size_t k = 0; k < s->used; k++)
            if (total_of(&s->items[k]) != 0) /* translated but never executed: leave out */
                list[(*n)++] = &s->items[k];
    pthread_mutex_unlock(&counters_lock);
    qsort(list, *n, sizeof *list, by_address);
    return list;
}

/* The "0xADDR COUNT" lines to path, or through QEMU's log when path is NULL. */
static void write_counts(const char *path, struct counter **list, size_t n)
{
    FILE *f = NULL;
    if (path != NULL) {
        f = fopen(path, "w");
        if (f == NULL) {
            fprintf(stderr, "truth: cannot write %s\n", path);
            return;
        }
    }
    char line[64];
    if (n_vcpus > 1) {
        snprintf(line, sizeof line, "# vcpus %u\n", n_vcpus);
        if (f != NULL)
            fputs(line, f);
        else
            api->outs(line);
    }
    for (size_t k = 0; k < n; k++)
        for (unsigned vcpu = 0; vcpu < n_vcpus; vcpu++) {
            uint64_t count = api->count_of(list[k], vcpu);
            if (n_vcpus == 1)
                snprintf(line, sizeof line, "0x%08" PRIx64 " %" PRIu64 "\n", list[k]->addr, count);
            else if (count != 0)
                snprintf(line, sizeof line, "0x%08" PRIx64 " %" PRIu64 " %u\n", list[k]->addr, count, vcpu);
            else
                continue;
            if (f != NULL)
                fputs(line, f);
            else
                api->outs(line);
        }
    if (f != NULL)
        fclose(f);
}

/* The task lines so far: everything counted since the last switch goes to the running task. */
static void write_tasks(const char *path, struct counter **list, size_t n)
{
    pthread_mutex_lock(&counters_lock);
    split_counts(NULL, 0);
    pthread_mutex_unlock(&counters_lock);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "truth: cannot write %s\n", path);
        return;
    }
    for (size_t t = 0; t < n_tasks; t++)
        for (size_t k = 0; k < n; k++)
            if (list[k]->by_task[t] != 0) {
                if (t == 0)
                    fprintf(f, "none");
                else
                    fprintf(f, "0x%08" PRIx64, tasks[t]);
                fprintf(f, " 0x%08" PRIx64 " %" PRIu64 "\n", list[k]->addr, list[k]->by_task[t]);
            }
    fclose(f);
}

/* A census of host nanoseconds, the counter's field at `field`, as "0xADDRESS NS" lines. */
static void write_ns_lines(const char *path, struct counter **list, size_t n, size_t field)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "truth: cannot write %s\n", path);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        uint64_t ns;
        memcpy(&ns, (const char *)list[k] + field, sizeof ns);
        if (ns != 0)
            fprintf(f, "0x%08" PRIx64 " %" PRIu64 "\n", list[k]->addr, ns);
    }
    fclose(f);
}

/* Uniform-cost mode: the time census (charge_time), "0xADDRESS NS LONG": the host nanoseconds
 * of each instruction and, of those, the ones given in stretches over PAUSE_NS (add_time). */
static void write_times(const char *path, struct counter **list, size_t n)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "truth: cannot write %s\n", path);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        const uint64_t ns = __atomic_load_n(&list[k]->time_ns, __ATOMIC_RELAXED);
        const uint64_t stalls = __atomic_load_n(&list[k]->long_ns, __ATOMIC_RELAXED);
        if (ns != 0)
            fprintf(f, "0x%08" PRIx64 " %" PRIu64 " %" PRIu64 "\n", list[k]->addr, ns, stalls);
    }
    fclose(f);
}

/* Uniform-cost mode: the host nanoseconds each address was in its vCPU's PC slot (charge_shown). */
static void write_shown(const char *path, struct counter **list, size_t n)
{
    write_ns_lines(path, list, n, offsetof(struct counter, shown_ns));
}

/* FILE with `suffix` (FILE itself for ""), written by `write` under that name plus ".part",
 * then renamed, so that it appears whole. */
static void write_whole(const char *path, const char *suffix, void (*write)(const char *, struct counter **, size_t),
                        struct counter **list, size_t n)
{
    size_t size = strlen(path) + strlen(suffix) + sizeof ".part";
    char *part = malloc(size), *whole = malloc(size);
    if (part == NULL || whole == NULL) {
        fprintf(stderr, "truth: out of memory for the snapshot %s%s\n", path, suffix);
    } else {
        snprintf(whole, size, "%s%s", path, suffix);
        snprintf(part, size, "%s%s.part", path, suffix);
        write(part, list, n);
        if (rename(part, whole) != 0)
            fprintf(stderr, "truth: cannot rename %s to %s\n", part, whole);
    }
    free(part);
    free(whole);
}

/* A snapshot: FILE appears whole, and last (FILE.tasks in task mode, FILE.time and FILE.pcsr in
 * uniform-cost mode before it). */
static void write_snapshot(const char *path)
{
    size_t n = 0;
    struct counter **list = executed(&n);
    if (list == NULL) {
        fprintf(stderr, "truth: out of memory for the snapshot %s\n", path);
        return;
    }
    if (task_path != NULL)
        write_whole(path, ".tasks", write_tasks, list, n);
    if (cost_ns != 0) {
        write_whole(path, ".time", write_times, list, n);
        write_whole(path, ".pcsr", write_shown, list, n);
    }
    write_whole(path, "", write_counts, list, n);
    free(list);
}

void truth_write(void)
{
    size_t n = 0;
    struct counter **list = executed(&n);
    if (list == NULL)
        return;
    write_counts(out_path, list, n);
    if (task_path != NULL) {
        write_tasks(task_path, list, n);
        if (too_many_tasks)
            fprintf(stderr, "truth: more than %d tasks: the rest counted as none\n", MAX_TASKS - 1);
    }
    free(list);
}

static bool parse_count(const char *text, uint64_t *value)
{
    char *end = NULL;
    errno = 0;
    *value = strtoull(text, &end, 10);
    return end != text && *end == '\0' && errno == 0 && *value <= 1000000000u; /* at most 1 s an instruction */
}

/* The PC file: made (or emptied) at PATH, its header written, every slot 0xFFFFFFFF until its
 * vCPU runs. Mapped shared, so the stores reach a reader that maps the same file. */
static int open_pc_file(const char *path)
{
    const size_t words = PC_FILE_HEADER_WORDS + n_vcpus;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)(words * sizeof(uint32_t))) != 0) {
        fprintf(stderr, "truth: cannot make the PC file %s: %s\n", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    void *map = mmap(NULL, words * sizeof(uint32_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);   /* the mapping stays */
    if (map == MAP_FAILED) {
        fprintf(stderr, "truth: cannot map the PC file %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint32_t *words_of = map;
    for (unsigned k = 0; k < n_vcpus; k++)
        words_of[PC_FILE_HEADER_WORDS + k] = 0xFFFFFFFFu;
    words_of[1] = n_vcpus;
    /* The magic last: a reader that sees it sees the rest. */
    __atomic_store_n(&words_of[0], (uint32_t)PC_FILE_MAGIC, __ATOMIC_RELEASE);
    pc_slots = words_of;
    return 0;
}

static bool add_point(uint64_t *list, size_t *n, size_t most, const char *text)
{
    char *end = NULL;
    uint64_t addr = strtoull(text, &end, 0);
    if (end == text || *end != '\0' || *n == most)
        return false;
    list[(*n)++] = addr & ~(uint64_t)1; /* a Thumb symbol's bit 0 is not part of the address */
    return true;
}

int truth_start(const struct truth_api *chosen, unsigned vcpus, int argc, char **argv)
{
    api = chosen;
    if (vcpus < 1 || vcpus > MAX_VCPUS) {
        fprintf(stderr, "truth: the machine has %u vCPUs; the plugin counts 1 to %d\n", vcpus, MAX_VCPUS);
        return -1;
    }
    n_vcpus = vcpus;
    for (int k = 0; k < argc; k++) {
        if (strncmp(argv[k], "outfile=", 8) == 0) {
            out_path = strdup(argv[k] + 8);
        } else if (strncmp(argv[k], "taskfile=", 9) == 0) {
            task_path = strdup(argv[k] + 9);
        } else if (strncmp(argv[k], "cost=", 5) == 0 && parse_count(argv[k] + 5, &cost_ns)) {
        } else if (strncmp(argv[k], "snapshots=", 10) == 0) {
            snapshot_fifo = strdup(argv[k] + 10);
        } else if (strncmp(argv[k], "pcfile=", 7) == 0) {
            pc_path = strdup(argv[k] + 7);
        } else if (strncmp(argv[k], "tcbload=", 8) == 0 && add_point(tcb_loads, &n_tcb_loads, MAX_POINTS, argv[k] + 8)) {
        } else if (strncmp(argv[k], "taskswitch=", 11) == 0 && add_point(task_switches, &n_task_switches, MAX_POINTS, argv[k] + 11)) {
        } else if (strncmp(argv[k], "entry=", 6) == 0 && add_point(entries, &n_entries, MAX_ENTRIES, argv[k] + 6)) {
        } else {
            fprintf(stderr, "truth: bad argument '%s' (expected outfile=PATH, taskfile=PATH, tcbload=ADDR, "
                            "taskswitch=ADDR, at most %d addresses each; cost=NS, snapshots=FIFO, entry=ADDR up to %d, "
                            "pcfile=PATH)\n",
                    argv[k], MAX_POINTS, MAX_ENTRIES);
            return -1;
        }
    }
    if (task_path != NULL && n_vcpus > 1) {
        fprintf(stderr, "truth: taskfile= follows the tasks of one core; this machine has %u\n", n_vcpus);
        return -1;
    }
    if (task_path != NULL && (n_tcb_loads == 0 || n_task_switches == 0)) {
        fprintf(stderr, "truth: taskfile= needs tcbload= and taskswitch=\n");
        return -1;
    }
    if (pc_path != NULL && open_pc_file(pc_path) != 0)
        return -1;
    if (snapshot_fifo != NULL) {
        /* Non-blocking: the open succeeds with no writer yet, and a read never waits. */
        snapshot_fd = open(snapshot_fifo, O_RDONLY | O_NONBLOCK);
        if (snapshot_fd < 0) {
            fprintf(stderr, "truth: cannot open the snapshot pipe %s: %s\n", snapshot_fifo, strerror(errno));
            return -1;
        }
    }
    return 0;
}
