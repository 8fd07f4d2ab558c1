/*
 * truth: the glue for QEMU's plugin API 1 (QEMU 6.0 to 8.2: Debian 12's QEMU 7.2), and the
 * plugin's entry points, whose declarations API 4 keeps as they were.
 *
 * One plugin for both APIs. QEMU reads qemu_plugin_version once it has loaded the plugin
 * (plugins/loader.c) and refuses a version outside its range: QEMU 7.2 takes 1 at most,
 * QEMU 10 takes 2 to 4. It loads the plugin with every symbol bound at once (no lazy binding),
 * so the functions of one API that the other QEMU lacks are weak references, null there; a
 * constructor, which runs while QEMU loads the plugin and so before QEMU reads the version,
 * sets the version from what the running QEMU exports: API 4's scoreboards where QEMU has
 * them, else API 1.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "api1/qemu-plugin.h"

/* Gone in API 2 (QEMU 9.0): a weak reference, null under QEMU 10. */
#pragma weak qemu_plugin_register_vcpu_insn_exec_inline

#include "truth_glue.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

__attribute__((constructor)) static void choose_api(void)
{
    if (truth_api4_present())
        qemu_plugin_version = 4;
}

/* One array of counts per vCPU, each SLAB_COUNTERS long: vCPU k's count of a counter is
 * SLAB_COUNTERS * k after vCPU 0's. */
static uint64_t *new_counts(size_t n, void **storage)
{
    *storage = NULL;
    return calloc(n * glue_vcpus, sizeof(uint64_t));
}

/* API 1's inline add has no vCPU index: one vCPU adds inline, several by a callback that knows
 * whose count to add to. */
static void on_count(unsigned int vcpu, void *userdata)
{
    const struct counter *c = userdata;
    if (vcpu < glue_vcpus)
        c->count[(size_t)vcpu * SLAB_COUNTERS] += 1;
}

static void count_each(void *insn, const struct counter *c)
{
    if (glue_vcpus == 1)
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, c->count, 1);
    else
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_count, QEMU_PLUGIN_CB_NO_REGS, (void *)c);
}

static uint64_t count_of(const struct counter *c, unsigned vcpu)
{
    return c->count[(size_t)vcpu * SLAB_COUNTERS];
}

static const struct truth_api api1 = {new_counts, count_each, count_of, call_before, call_on_load, call_before_each, on_outs};

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    if (qemu_plugin_version == 4)
        return truth_install_api4(id, info, argc, argv);
    if (qemu_plugin_register_vcpu_insn_exec_inline == NULL) {
        fprintf(stderr, "truth: this QEMU has neither plugin API 1 nor API 4\n");
        return -1;
    }
    return install(id, info, &api1, argc, argv);
}
