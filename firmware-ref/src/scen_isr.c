/*
 * Scenario 4: work inside another interrupt handler.
 *
 * main raises EXTI0 by software (NVIC_ISPR) before each hot_a(700); the EXTI0 handler runs
 * isr_work(300). With ISR_PRIO equal to the sampler's (0), SysTick can not preempt the handler:
 * the sample waits, tail-chains after it, and finds the frame of main, so isr_work is invisible
 * and its time lands on main's instruction after the store to ISPR. With a less urgent
 * ISR_PRIO (0x80) the sampler preempts the handler and isr_work gets its share.
 *
 *   ISR_PRIO (default 0), PERIOD (SysTick ticks, default 1681)
 */
#include "board.h"
#include "sampler.h"
#include "work.h"

#ifndef ISR_PRIO
#define ISR_PRIO 0u
#endif
#ifndef PERIOD
#define PERIOD 1681u
#endif

__attribute__((noinline)) void isr_work(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        __asm volatile("nop");
}

void EXTI0_IRQHandler(void)
{
    isr_work(300u);
}

int main(void)
{
    uint32_t limit = cfg_samples;
    con_init();
    clock_start();
    nvic_set_priority(IRQ_EXTI0, ISR_PRIO);
    nvic_enable(IRQ_EXTI0);
    prof_start(PERIOD, limit);
    while (prof_taken < limit) {
        NVIC_ISPR0 = 1u << IRQ_EXTI0; /* pend EXTI0: its handler runs right after this store */
        hot_a(700u);
    }
    prof_dump();
    return 0;
}
