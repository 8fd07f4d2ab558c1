/*
 * Scenario 3: a region with interrupts disabled.
 *
 * locked(LOCK_N) runs LOCK_N nop iterations between cpsid i (irq_off) and cpsie i (irq_on),
 * then hot_a(OPEN_N) runs with interrupts open. A sample that falls due inside the region is
 * taken right after cpsie i, so the profile gives locked's time to irq_on. When the region is
 * longer than the sampling period (LOCK_N=7500), the timer fires more than once while masked,
 * but a pending exception is only remembered once: the region also loses share.
 *
 *   LOCK_N (default 300), OPEN_N (default 700), PERIOD (SysTick ticks, default 1681).
 *   The long build uses LOCK_N=7500 OPEN_N=17500: the same 30 % locked, in regions of about
 *   two sampling periods.
 */
#include "board.h"
#include "sampler.h"
#include "work.h"

#ifndef LOCK_N
#define LOCK_N 300u
#endif
#ifndef OPEN_N
#define OPEN_N 700u
#endif
#ifndef PERIOD
#define PERIOD 1681u
#endif

__attribute__((noinline)) void irq_off(void)
{
    __asm volatile("cpsid i" ::: "memory");
}

__attribute__((noinline)) void irq_on(void)
{
    __asm volatile("cpsie i" ::: "memory");
}

__attribute__((noinline)) void locked(uint32_t n)
{
    irq_off();
    for (uint32_t i = 0; i < n; i++)
        __asm volatile("nop");
    irq_on();
}

int main(void)
{
    uint32_t limit = cfg_samples;
    con_init();
    clock_start();
    uint32_t t0 = clock_now();
    prof_start(PERIOD, limit);
    while (prof_taken < limit) {
        locked(LOCK_N);
        hot_a(OPEN_N);
    }
    uint32_t span = clock_now() - t0;
    con_puts("span=");
    con_dec(span);
    con_puts("\n");
    prof_dump();
    return 0;
}
