/*
 * Two cores, each with work of its own (issue 29): mps2-an521, QEMU's SSE-200 with two
 * Cortex-M33. Core 0 boots through the vector table of startup.c; core 1 is held in reset by
 * the SSE-200's CPUWAIT register until core 0 gives it a vector table (INITSVTOR1) and clears
 * its wait bit. The system control block is at 0x50021000 in the Secure alias (QEMU
 * hw/arm/armsse.c; INITSVTOR1 at 0x114 and CPUWAIT at 0x118, hw/misc/iotkit-sysctl.c, where a
 * bit that goes from 1 to 0 powers its core up through arm_set_cpu_on_and_reset). mps2-an521
 * starts with CPUWAIT = 2: core 1 waits.
 *
 *   core 0:  main -> core0_round -> c0_heavy (3 parts) / c0_light (1 part) / shared_step(60)
 *   core 1:  core1_reset -> core1_round -> c1_alpha (1 part) / c1_beta (2 parts) / shared_step(180)
 *
 * No function but shared_step runs on both cores, so a sample given to the wrong core shows
 * at once; shared_step runs on both with different weights, so only a split by core gets
 * both its shares right. Neither core takes an interrupt.
 *
 *   ROUNDS: core 1's rounds before it says it is done (0: both forever); core 0 runs the same
 *   number, waits for core 1 in core0_wait_core1, and ends the run (semihosting).
 */
#include <stdint.h>

#ifndef ROUNDS
#define ROUNDS 400u
#endif

#define CALLEE __attribute__((noinline, noipa))
#define REG32(addr) (*(volatile uint32_t *)(addr))

/* SSE-200 system control registers (Secure alias). */
#define SYSCTL_BASE 0x50021000u
#define SYSCTL_INITSVTOR1 REG32(SYSCTL_BASE + 0x114u)
#define SYSCTL_CPUWAIT REG32(SYSCTL_BASE + 0x118u)
#define CPUWAIT_CPU1 (1u << 1)

volatile uint32_t sink0, sink1;
volatile uint32_t core1_rounds;   /* written by core 1 only */
volatile uint32_t core1_done;

static inline __attribute__((always_inline)) void spin(volatile uint32_t *where, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        *where = *where + i;
}

/* Both cores: each passes its own sink, so the cores never write the same word. */
CALLEE void shared_step(volatile uint32_t *where, uint32_t n) { spin(where, n); }

CALLEE void c0_heavy(void) { spin(&sink0, 90u); }
CALLEE void c0_light(void) { spin(&sink0, 30u); }
CALLEE void c1_alpha(void) { spin(&sink1, 40u); }
CALLEE void c1_beta(void) { spin(&sink1, 80u); }

CALLEE void core0_round(void)
{
    c0_heavy();
    c0_light();
    shared_step(&sink0, 60u);
}

CALLEE void core1_round(void)
{
    c1_alpha();
    c1_beta();
    shared_step(&sink1, 180u);
}

CALLEE void core0_wait_core1(void)
{
    while (core1_done == 0u) {
    }
}

__attribute__((noreturn)) void core1_main(void)
{
    for (uint32_t round = 0;; round++) {
        if (ROUNDS != 0u && round == ROUNDS)
            break;
        core1_round();
        core1_rounds = round + 1u;
    }
    core1_done = 1u;
    for (;;) {
    }
}

/* Core 1's vector table: its stack and reset only (it takes no exception; a fault would
 * lock it up, which core 0's wait would show as a run that never ends). INITSVTOR1 holds
 * bits 31:7 of the table's address. */
static uint32_t core1_stack[256] __attribute__((aligned(8)));
void core1_reset(void) { core1_main(); }
__attribute__((aligned(128), used)) static void (*const core1_vectors[16])(void) = {
    [0] = (void (*)(void))(uintptr_t)&core1_stack[256],
    [1] = core1_reset,
};

__attribute__((noreturn)) void semihost_exit(int status);

int main(void)
{
    SYSCTL_INITSVTOR1 = (uint32_t)(uintptr_t)core1_vectors;
    SYSCTL_CPUWAIT = SYSCTL_CPUWAIT & ~CPUWAIT_CPU1;
    for (uint32_t round = 0;; round++) {
        if (ROUNDS != 0u && round == ROUNDS)
            break;
        core0_round();
    }
    core0_wait_core1();
    semihost_exit(0);
}
