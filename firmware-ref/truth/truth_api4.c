/*
 * truth: the glue for QEMU's plugin API 4 (QEMU 9.2 on: Debian 13's QEMU 10.0). API 2 replaced
 * the inline add on a plain address by one on a scoreboard, an array with one entry per vCPU
 * that QEMU owns: here one scoreboard per slab of counters, whose entry is the slab's counts.
 */
#include <stdbool.h>
#include <stdint.h>

#include "api4/qemu-plugin.h"

/* New in API 2 (QEMU 9.0): weak references, null under QEMU 7.2. */
#pragma weak qemu_plugin_scoreboard_new
#pragma weak qemu_plugin_scoreboard_find
#pragma weak qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu

#include "truth_glue.h"

bool truth_api4_present(void)
{
    return qemu_plugin_scoreboard_new != NULL && qemu_plugin_scoreboard_find != NULL &&
           qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu != NULL;
}

/* The counts are vCPU 0's entry, each other vCPU's its own entry. QEMU moves a scoreboard's
 * entries only when a vCPU beyond those it allocated for (16 at first, plugins/core.c) comes
 * up, so with the few vCPUs of our machines the counts never move, as the translated code's
 * adds need. */
static uint64_t *new_counts(size_t n, void **storage)
{
    struct qemu_plugin_scoreboard *score = qemu_plugin_scoreboard_new(n * sizeof(uint64_t));
    *storage = score;
    return score != NULL ? qemu_plugin_scoreboard_find(score, 0) : NULL;
}

static void count_each(void *insn, const struct counter *c)
{
    qemu_plugin_u64 entry = {c->storage, c->slot * sizeof(uint64_t)};
    qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn, QEMU_PLUGIN_INLINE_ADD_U64, entry, 1);
}

static uint64_t count_of(const struct counter *c, unsigned vcpu)
{
    const uint64_t *entry = qemu_plugin_scoreboard_find(c->storage, vcpu);
    return entry[c->slot];
}

static const struct truth_api api4 = {new_counts, count_each, count_of, call_before, call_on_load, call_before_each, on_outs};

int truth_install_api4(qemu_plugin_id_t id, const void *info, int argc, char **argv)
{
    return install(id, info, &api4, argc, argv);
}
