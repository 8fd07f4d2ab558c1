/*
 * Scenario 2: a timer-driven main loop, the lockstep trap.
 *
 * Every TICK instructions (TIM2 counts) the loop runs control() and filter(); the rest of the
 * tick is spent polling in wait_tick(). Truth: about 60 / 30 / 10 %. Sampled with a period equal
 * to TICK (PERIOD=1680 SysTick ticks is 9999 ns in QEMU), every sample lands on the same phase
 * of the loop: the profile gives ~100 % to whichever function that phase is in.
 *
 *   TICK=T      loop period in instructions (default 9999)
 *   PHASE=D     first tick D instructions after sampling starts (default 1000)
 *   PERIOD=P    sampling period in SysTick ticks (default 1680)
 */
#include "board.h"
#include "sampler.h"
#ifndef SAMPLES
#define SAMPLES 1000u /* the seed's tick experiment takes 1000 samples */
#endif
#include "work.h"

#ifndef TICK
#define TICK 9999u
#endif
#ifndef PHASE
#define PHASE 1000u
#endif
#ifndef PERIOD
#define PERIOD 1680u
#endif

static uint32_t next_tick;

__attribute__((noinline)) void wait_tick(void)
{
    while ((int32_t)(clock_now() - next_tick) < 0) {
    }
    next_tick += TICK;
}

__attribute__((noinline)) void control(void)
{
    for (uint32_t i = 0; i < 1000u; i++)
        __asm volatile("nop");
}

__attribute__((noinline)) void filter(void)
{
    for (uint32_t i = 0; i < 333u; i++)
        __asm volatile("nop");
}

int main(void)
{
    uint32_t limit = cfg_samples;
    con_init();
    clock_start();
    prof_start(PERIOD, limit);
    next_tick = clock_now() + PHASE;
    while (prof_taken < limit) {
        wait_tick();
        control();
        filter();
    }
    prof_dump();
    return 0;
}
