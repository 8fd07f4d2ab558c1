/*
 * Scenario "calls": an instrumented call graph (seed 003). Built with -finstrument-functions,
 * the hooks in calltrace.c write an entry and an exit record for every call. The calls are
 * known by construction:
 *
 *   main -> outer            ROUNDS times
 *   outer -> middle          3 per outer
 *   middle -> leaf           4 per middle
 *   outer -> leaf            1 per outer, after pending EXTI0
 *   EXTI0_IRQHandler         1 per outer (an exception entry, not a call), -> leaf once
 *   main -> recurse          once, recurse(DEPTH) -> recurse DEPTH times
 *
 *   ROUNDS (default 10), DEPTH (default 4)
 */
#include "board.h"

#ifndef ROUNDS
#define ROUNDS 10u
#endif
#ifndef DEPTH
#define DEPTH 4u
#endif

/* One function each in the graph: no inlining, no cloning (a clone has another name). */
#define CALLEE __attribute__((noinline, noclone))

CALLEE void leaf(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        __asm volatile("nop");
}

CALLEE void middle(void)
{
    for (uint32_t k = 0; k < 4u; k++)
        leaf(20u);
}

CALLEE void outer(void)
{
    for (uint32_t j = 0; j < 3u; j++)
        middle();
    NVIC_ISPR0 = 1u << IRQ_EXTI0; /* pend EXTI0: its handler runs right after this store */
    leaf(50u);
}

CALLEE uint32_t recurse(uint32_t depth)
{
    return depth == 0u ? 0u : 1u + recurse(depth - 1u);
}

void EXTI0_IRQHandler(void)
{
    leaf(10u);
}

volatile uint32_t recurse_result;

int main(void)
{
    nvic_enable(IRQ_EXTI0);
    for (uint32_t i = 0; i < ROUNDS; i++)
        outer();
    recurse_result = recurse(DEPTH);
    return 0;
}
