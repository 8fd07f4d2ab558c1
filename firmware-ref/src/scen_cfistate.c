/*
 * Call-frame state scenario: -O2 code whose call-frame information uses
 * DW_CFA_remember_state / DW_CFA_restore_state (DWARF 5, 6.4.2.4). GCC emits the pair around
 * an epilogue in the middle of a function (an early return, a tail call on a likely path,
 * shrink-wrapping): the epilogue's rows drop the frame, and restore_state brings the frame's
 * rows back, CFA rule included, for the code after it. An unwinder that forgets the CFA on
 * restore_state loses every chain through that code.
 *
 *   main -> early_exit -> leaf_work        early return with its own pop {.., pc}
 *   main -> two_tails -> leaf_work         two tail calls, each after a pop {.., lr}
 *   main -> shrink -> leaf_work            fast path without a frame, slow path with one
 *   main -> likely_tail -> leaf_work       the likely path tail-calls; the rest (a loop and a
 *                                          call) comes after restore_state
 *   (tail_a, tail_b run in the frame of whoever tail-called them: their caller is main)
 *   SysTick_Handler -> isr_work            an interrupt preempting whatever runs
 *
 *   ROUNDS (default 400; 0: forever), TICKS (SysTick period in core clocks, default 4001)
 */
#include "board.h"

#ifndef ROUNDS
#define ROUNDS 400u
#endif
#ifndef TICKS
#define TICKS 4001u
#endif

#define CALLEE __attribute__((noinline, noipa))

volatile uint32_t sink;
volatile uint32_t knob = 3u;

static inline __attribute__((always_inline)) void work(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        sink = sink + i;
}

CALLEE uint32_t leaf_work(uint32_t n) { work(n + 8u); return sink; }
CALLEE uint32_t tail_a(uint32_t n) { work((n & 15u) + 8u); return n + 1u; }
CALLEE uint32_t tail_b(uint32_t n) { work((n & 7u) + 8u); return n + 2u; }

CALLEE uint32_t early_exit(uint32_t n)
{
    uint32_t a = leaf_work(n & 15u);
    if (a & 1u)
        return a + n;
    uint32_t b = leaf_work((n + 2u) & 15u);
    sink = a ^ b;
    return a * b + leaf_work(3u);
}

CALLEE uint32_t two_tails(uint32_t n)
{
    uint32_t a = leaf_work(n & 15u);
    if (a & 1u)
        return tail_a(a);
    if (a & 2u)
        return tail_b(a);
    uint32_t b = leaf_work(a & 15u);
    sink = b;
    return a + b;
}

CALLEE uint32_t shrink(uint32_t n, uint32_t m)
{
    if (n < 4u)
        return tail_b(m);
    uint32_t a = leaf_work(n & 31u);
    if (a == m)
        return tail_a(m);
    uint32_t b = leaf_work(a & 7u);
    return a + b + m;
}

CALLEE uint32_t likely_tail(uint32_t n)
{
    uint32_t a = leaf_work(n & 15u);
    if (__builtin_expect((a & knob) != 0u, 1))
        return tail_a(a);
    work(20u);
    uint32_t b = leaf_work(a & 15u);
    sink = b;
    return a + b;
}

CALLEE void isr_work(void) { work(150u); }

void SysTick_Handler(void)
{
    isr_work();
}

int main(void)
{
    systick_start(TICKS);
    for (uint32_t round = 0; ; round++) {
        if (ROUNDS != 0u && round == ROUNDS)   /* ROUNDS 0: forever */
            break;
        sink = early_exit(round);
        sink = two_tails(round * 7u);
        sink = shrink(round & 7u, round);
        sink = likely_tail(round);
    }
    SYST_CSR = 0u;
    semihost_exit(0);
}
