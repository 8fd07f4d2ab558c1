/*
 * truth: the glue both plugin APIs share, compiled once in each API's file (truth_api1.c,
 * truth_api4.c) after that API's own qemu-plugin.h, so that each copy is checked against the
 * declarations of its API. Only the counting's storage and its inline add differ between the
 * two APIs; these calls are the same in both headers.
 */
#ifndef MCUPROF_TRUTH_GLUE_H
#define MCUPROF_TRUTH_GLUE_H

#include "truth.h"

_Static_assert(_Generic((qemu_plugin_id_t)0, uint64_t: 1, default: 0), "truth.h passes plugin ids as uint64_t");

static void on_tcb_load(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata)
{
    (void)vcpu;
    (void)info;
    (void)userdata;
    truth_tcb_load(vaddr);
}

/* Runs before the switch instruction executes (truth_task_switch says why the order is free). */
static void on_task_switch(unsigned int vcpu, void *userdata)
{
    (void)vcpu;
    truth_task_switch((size_t)(uintptr_t)userdata);
}

static void call_before(void *insn, size_t point)
{
    qemu_plugin_register_vcpu_insn_exec_cb(insn, on_task_switch, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)point);
}

static void call_on_load(void *insn)
{
    /* On QEMU 7.2, QEMU_PLUGIN_MEM_R alone never called back for the load (measured). */
    qemu_plugin_register_vcpu_mem_cb(insn, on_tcb_load, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
}

static void on_before_each(unsigned int vcpu, void *userdata)
{
    (void)vcpu;
    truth_before_each(userdata);
}

static void call_before_each(void *insn, struct counter *c)
{
    qemu_plugin_register_vcpu_insn_exec_cb(insn, on_before_each, QEMU_PLUGIN_CB_NO_REGS, c);
}

static void on_outs(const char *line)
{
    qemu_plugin_outs(line);
}

/* Called once per translation (not per execution). */
static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t k = 0; k < n; k++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, k);
        truth_instrument(insn, qemu_plugin_insn_vaddr(insn), qemu_plugin_insn_size(insn));
    }
}

static void on_plugin_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    truth_write();
}

/* The plugin's start under this API: its arguments, then the two callbacks. */
static int install(qemu_plugin_id_t id, const struct truth_api *api, int argc, char **argv)
{
    if (truth_start(api, argc, argv) != 0)
        return -1;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
    return 0;
}

#endif
