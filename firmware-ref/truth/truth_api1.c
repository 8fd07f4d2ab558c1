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

static uint64_t *new_counts(size_t n, void **storage)
{
    *storage = NULL;
    return calloc(n, sizeof(uint64_t));
}

static void count_each(void *insn, const struct counter *c)
{
    qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, c->count, 1);
}

static const struct truth_api api1 = {new_counts, count_each, call_before, call_on_load, call_before_each, on_outs};

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    (void)info;
    if (qemu_plugin_version == 4)
        return truth_install_api4(id, argc, argv);
    if (qemu_plugin_register_vcpu_insn_exec_inline == NULL) {
        fprintf(stderr, "truth: this QEMU has neither plugin API 1 nor API 4\n");
        return -1;
    }
    return install(id, &api1, argc, argv);
}
