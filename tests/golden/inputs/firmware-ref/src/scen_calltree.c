/*
 * Call-tree scenario for stack sampling (issue 7): a known call structure whose inclusive
 * shares follow from the truth plugin's per-function counts alone.
 *
 *   main -> deep1 -> deep2 -> deep3 -> deep4 -> deep5 -> deep_leaf   a deep chain
 *   main -> recurse(6) -> recurse(5) ... -> recurse(0)               recursion
 *   main -> path_a -> shared (3 calls), main -> path_b -> shared (1) one function, two callers
 *   main -> big_frame -> frame_leaf                                   600-byte frame plus alloca
 *   main -> smash                        overwrites its own saved LR while it runs (a corrupted stack)
 *   SysTick_Handler -> isr_work          an interrupt preempting whatever runs
 *
 * Every function does its own work (a loop on a volatile) and calls nothing else, so a
 * function's self count is its own; `shared` costs the same on every call, so each caller's
 * part of it is its share of the calls (3/4 and 1/4). No call is in tail position (each is
 * followed by a store), so every caller keeps its frame at any optimization level.
 *
 *   ROUNDS (default 300), TICKS (SysTick period in core clocks, default 4001: 168 MHz on
 *   netduinoplus2, so 23815 instructions under -icount shift=0; no on-chip sampler is linked)
 */
#include "board.h"

#ifndef ROUNDS
#define ROUNDS 300u
#endif
#ifndef TICKS
#define TICKS 4001u
#endif

#define CALLEE __attribute__((noinline, noipa))

volatile uint32_t sink;
volatile uint32_t frame_bytes = 40u;   /* the alloca size, unknown to the compiler */

/* Inlined into each function, so that a function's work is its own (self) time. */
static inline __attribute__((always_inline)) void work(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        sink = sink + i;
}

CALLEE void deep_leaf(void) { work(60u); }
CALLEE void deep5(void) { work(10u); deep_leaf(); sink = 5u; }
CALLEE void deep4(void) { work(10u); deep5(); sink = 4u; }
CALLEE void deep3(void) { work(10u); deep4(); sink = 3u; }
CALLEE void deep2(void) { work(10u); deep3(); sink = 2u; }
CALLEE void deep1(void) { work(10u); deep2(); sink = 1u; }

CALLEE void recurse(uint32_t depth)
{
    work(15u);
    if (depth > 0u)
        recurse(depth - 1u);
    sink = depth;
}

CALLEE void shared(void) { work(40u); }
CALLEE void path_a(void) { work(20u); shared(); shared(); shared(); sink = 0xAu; }
CALLEE void path_b(void) { work(20u); shared(); sink = 0xBu; }

CALLEE void frame_leaf(volatile uint8_t *buffer) { work(30u); buffer[0] = (uint8_t)sink; }
CALLEE void big_frame(void)
{
    volatile uint8_t buffer[600];
    volatile uint8_t *extra = __builtin_alloca(frame_bytes);
    for (uint32_t i = 0; i < sizeof buffer; i += 60u)
        buffer[i] = (uint8_t)i;
    extra[0] = buffer[60];
    frame_leaf(buffer);
    frame_leaf(extra);
    sink = buffer[120];
}

/* smash: while it spins, the return address it saved reads 0xDEADBEEF; it puts the real
 * one back before returning. The call-frame information is exact, the stack is not: an
 * unwinder must end the chain there, marked truncated, and go on with the next sample. */
void smash(void);
__asm__(
    "    .text\n"
    "    .global smash\n"
    "    .type smash, %function\n"
    "    .thumb_func\n"
    "smash:\n"
    "    .cfi_startproc\n"
    "    push {r4, r5, lr}\n"
    "    .cfi_def_cfa_offset 12\n"
    "    .cfi_offset r4, -12\n"
    "    .cfi_offset r5, -8\n"
    "    .cfi_offset lr, -4\n"
    "    ldr r5, [sp, #8]\n"
    "    ldr r4, =0xDEADBEEF\n"
    "    str r4, [sp, #8]\n"
    "    movs r4, #150\n"
    "1:  subs r4, #1\n"
    "    bne 1b\n"
    "    str r5, [sp, #8]\n"
    "    pop {r4, r5, pc}\n"
    "    .cfi_endproc\n"
    "    .pool\n"
    "    .size smash, . - smash\n");

CALLEE void isr_work(void) { work(200u); }

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
        deep1();
        recurse(6u);
        path_a();
        path_b();
        big_frame();
        smash();
    }
    SYST_CSR = 0u;
    semihost_exit(0);
}
