/*
 * Sleep: timer-driven work with WFI between (issue 31, CPU load).
 *
 * TIM4 raises its update interrupt every TICK of its counts; its handler counts the tick. main
 * sleeps in WFI until the count moves, then runs work() for WORK_N loop passes, and sleeps again. The
 * on-chip sampler (TIM3, jittered period) interrupts at instants of virtual time, asleep or
 * not: a sample that finds the core asleep has the address just past the WFI as its stacked PC
 * (ARMv7-M ARM B1.5.6), which the host counts as "(sleep)". Every wake-up comes from TIM4 or
 * the sampler, each on its own timer, so the work never starts in step with the samples. Both
 * are the STM32 timers TIM2 measures time with: QEMU 7.2's SysTick, under -icount sleep=off,
 * runs slower than its timers while the core sleeps (4000 samples of 3547 SysTick ticks took
 * 139 ms of TIM2 time where 168 MHz makes them 84.5 ms; QEMU 10: 83.6 ms), which would make
 * the sampler see too little sleep.
 *
 * The dump is preceded by "awake=A" and "span=N", both in TIM2 counts of virtual time: N from
 * the start of sampling to its end, A the time spent in work() (TIM2 read before and after each
 * run, so the sampler's interrupts inside it count as awake too). The truth of the sleep share
 * is 1 - A / N, in the timer's own units whatever its rate: virtual time is what the samples
 * are drawn from. What A leaves out is awake too, but small: the loop around the WFI and the
 * handlers that wake the core (under 0.3 % of the time; tests/integration/test_sleep.py).
 * Run it with -icount shift=0,sleep=off: the virtual clock then jumps to the next timer's
 * deadline when the core sleeps, so the run is the same on any host; with sleep=on it follows
 * the host's clock while the core sleeps.
 *
 *   TICK=T      work period in TIM4 counts (auto-reload + 1, at most 65536; default 20000)
 *   WORK_N=W    work() loop passes per tick (default 15000: about 60 000 instructions)
 *   PERIOD=P    sampling period in TIM3 counts (default 15000, plus PROF_JITTER's jitter)
 */
#include "board.h"
#include "sampler.h"

#ifndef SAMPLES
#define SAMPLES 4000u
#endif
#ifndef TICK
#define TICK 20000u
#endif
#ifndef WORK_N
#define WORK_N 15000u
#endif
#ifndef PERIOD
#define PERIOD 15000u
#endif

const volatile uint32_t cfg_samples = SAMPLES;   /* in flash: the code does not depend on it */
static volatile uint32_t ticks;

void TIM4_IRQHandler(void)
{
    TIM_SR(TIM4_BASE) = ~TIM_SR_UIF;   /* clear UIF first, or the interrupt fires again */
    ticks++;
}

static void tick_start(uint32_t period)
{
    RCC_APB1ENR |= RCC_APB1_TIM4EN;
    TIM_CR1(TIM4_BASE) = 0u;
    TIM_PSC(TIM4_BASE) = 0u;
    TIM_ARR(TIM4_BASE) = period - 1u;
    TIM_EGR(TIM4_BASE) = TIM_EGR_UG;   /* load prescaler and period now */
    TIM_SR(TIM4_BASE) = 0u;            /* drop the UIF the UG just raised */
    TIM_DIER(TIM4_BASE) = TIM_DIER_UIE;
    nvic_set_priority(IRQ_TIM4, 0x80u); /* below the sampler's 0: the sampler sees into it */
    nvic_enable(IRQ_TIM4);
    TIM_CR1(TIM4_BASE) = TIM_CR1_CEN;
}

static void tick_stop(void)
{
    TIM_CR1(TIM4_BASE) = 0u;
    TIM_DIER(TIM4_BASE) = 0u;
}

/* Sleeps until the tick count differs from `seen`. A tick that comes between the test and the
 * WFI is slept through until the next interrupt, as on any core: the truth measures it. */
__attribute__((noinline)) void sleep_until_tick(uint32_t seen)
{
    while (ticks == seen)
        __asm volatile("wfi");
}

__attribute__((noinline)) void work(void)
{
    for (uint32_t i = 0; i < WORK_N; i++)
        __asm volatile("nop");
}

int main(void)
{
    uint32_t limit = cfg_samples;
    con_init();
    clock_start();
    tick_start(TICK);
    prof_start(PERIOD, limit);
    uint32_t t0 = clock_now();
    uint32_t seen = ticks, awake = 0;
    while (prof_taken < limit) {
        sleep_until_tick(seen);
        seen = ticks;
        uint32_t started = clock_now();
        work();
        awake += clock_now() - started;
    }
    uint32_t span = clock_now() - t0;
    tick_stop();
    con_puts("awake=");
    con_dec(awake);
    con_puts("\n");
    con_puts("span=");
    con_dec(span);
    con_puts("\n");
    prof_dump();
    return 0;
}
