/*
 * Scenario 1: three nop loops sharing the time about 70 / 20 / 10 %.
 *
 * run() calls hot_a(700), hot_b(200), hot_c(100) until the sampler has taken cfg_samples
 * samples, prints "span=" (instructions of the sampled window, from TIM2) and the dump. The
 * truth per loop pass is hot_a 3504, hot_b 1004, hot_c 504 and run 10 instructions.
 *
 *   PERIOD=P    sampling period in SysTick ticks (core clock)
 *   CHUNKS=C    repeat window+dump C times (the ring restarts each time)
 *   USE_PSP=1   run the loops on the process stack (CONTROL.SPSEL=1), as an RTOS task would
 *   WORK_INLINE=1 with -O2: hot_a inlines into run, run into main (the inline-chain build)
 */
#include "board.h"
#include "sampler.h"
#include "work.h"

#ifndef PERIOD
#define PERIOD 2014u
#endif
#ifndef CHUNKS
#define CHUNKS 1u
#endif

#if defined(USE_PSP) && USE_PSP
static uint32_t process_stack[256] __attribute__((aligned(8)));

/* Move Thread mode onto PSP: load PSP with the top of process_stack, then set CONTROL.SPSEL.
 * The return address is in lr, so nothing on the old stack is needed afterwards. MSP is first
 * lowered by 32 bytes: the deliberately wrong sampler prologue (PROF_FORCE_MSP) reads frame
 * word 6 at MSP + 24, and with main's small frame that lies past the end of RAM, which QEMU 10
 * (like silicon) answers with a BusFault and QEMU 7.2 with 0; 32 bytes lower it reads main's
 * abandoned frame, the garbage the scenario is about. */
__attribute__((naked, noinline)) static void switch_to_psp(__attribute__((unused)) uint32_t *top)
{
    __asm volatile(
        "sub   sp, sp, #32 \n"
        "msr   psp, r0     \n"
        "movs  r0, #2      \n"
        "msr   control, r0 \n"
        "isb               \n"
        "bx    lr          \n");
}
#endif

#if defined(FOREVER) && FOREVER
WORK_FN static void run(void)
{
    for (;;) {
        hot_a(700);
        hot_b(200);
        hot_c(100);
    }
}
#else
WORK_FN static void run(void)
{
    uint32_t limit = cfg_samples;
    for (uint32_t chunk = 0; chunk < CHUNKS; chunk++) {
        uint32_t t0 = clock_now();
        prof_start(PERIOD, limit);
        while (prof_taken < limit) {
            hot_a(700);
            hot_b(200);
            hot_c(100);
        }
        uint32_t span = clock_now() - t0;
        con_puts("span=");
        con_dec(span);
        con_puts("\n");
        prof_dump();
    }
}
#endif

int main(void)
{
    con_init();
    clock_start();
#if defined(USE_PSP) && USE_PSP
    switch_to_psp(&process_stack[256]);
#endif
    run();
    semihost_exit(0); /* not return: on PSP, main's own frame is on the other stack */
}
