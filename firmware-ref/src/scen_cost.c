/*
 * Scenario 5: the cost of one sample, in instructions.
 *
 * The same work, hot_a(WORK_N), is timed with TIM2 (one count per instruction) without and with
 * the sampler running. The difference divided by the number of samples is the number of
 * instructions the sampler executes per sample; under -icount the remainder is 0. Prints
 *   cost off=A on=B samples=N per_sample=K rem=R
 *
 *   WORK_N (default 250000), PERIOD (SysTick ticks, default 1681)
 */
#include "board.h"
#include "sampler.h"
#include "work.h"

#ifndef WORK_N
#define WORK_N 250000u
#endif
#ifndef PERIOD
#define PERIOD 1681u
#endif

/* Both measurements run this same code, so they differ only by the sampler's instructions. */
__attribute__((noinline)) static uint32_t timed_work(void)
{
    uint32_t t0 = clock_now();
    hot_a(WORK_N);
    return clock_now() - t0;
}

int main(void)
{
    con_init();
    clock_start();
    uint32_t off = timed_work();

    prof_start(PERIOD, 0u); /* no limit: the ring keeps the newest samples */
    uint32_t before = prof_taken;
    uint32_t on = timed_work();
    uint32_t n = prof_taken - before;
    prof_stop();

    con_puts("cost off=");
    con_dec(off);
    con_puts(" on=");
    con_dec(on);
    con_puts(" samples=");
    con_dec(n);
    con_puts(" per_sample=");
    con_dec(n ? (on - off) / n : 0u);
    con_puts(" rem=");
    con_dec(n ? (on - off) % n : 0u);
    con_puts("\n");
    return 0;
}
