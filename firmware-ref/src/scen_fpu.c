/*
 * FPU task scenario: two preempted tasks doing floating-point work at -O2 under minirtos,
 * with a higher-priority interrupt that uses the FPU too.
 *
 *   task_fir -> fir_block -> fir_tap_sum       a float FIR filter over a block
 *   task_iir -> iir_cascade -> biquad          a cascade of float biquad sections, then a
 *                                              yield (PendSV from Thread mode)
 *   SysTick_Handler -> tick_smooth             float smoothing at every tick (about a tenth
 *                                              of the time); every SLICE
 *                                              ticks it pends PendSV: a time slice ends
 *
 * Tasks run in Thread mode on PSP. Both use s0-s31, so an exception taken in a task has an
 * active FP context (CONTROL.FPCA): the frame is the extended one (EXC_RETURN bit 4 clear),
 * with s0-s15 and FPSCR reserved lazily (FPCCR.LSPEN, the reset value) and written only when
 * the handler itself uses the FPU, as tick_smooth does. PendSV saves s16-s31 of such a task
 * beside r4-r11 (minirtos.c). SysTick is more urgent than PendSV, so it also preempts PendSV
 * in the middle of a switch.
 *
 * Each task checks every block against the first block's result (the same inputs give the
 * same bits): a context switch or a debugger that corrupted a register, FP or not, makes the
 * run end with "fpu MISMATCH" and status 1. At the end: "fpu ok TICKS".
 *
 *   TICKS (SysTick period in core clocks, default 3001), SLICE (ticks per time slice,
 *   default 3), RUN_TICKS (ticks until the end, default 900; 0: forever)
 */
#include "board.h"
#include "minirtos.h"

#ifndef TICKS
#define TICKS 3001u
#endif
#ifndef SLICE
#define SLICE 3u
#endif
#ifndef RUN_TICKS
#define RUN_TICKS 900u
#endif

#define CALLEE __attribute__((noinline, noipa))
#define TAPS 24u
#define BLOCK 32u
#define SECTIONS 6u

static TCB_t fir_tcb, iir_tcb;
static uint32_t fir_stack[512] __attribute__((aligned(8)));
static uint32_t iir_stack[512] __attribute__((aligned(8)));

static float coefficients[TAPS];
static float input[BLOCK + TAPS];
static float fir_out[BLOCK];
static float iir_state[SECTIONS][2];
volatile float smoothed;
volatile uint32_t mismatches;
static volatile uint32_t ticks;

CALLEE float fir_tap_sum(const float *x, const float *h, uint32_t taps)
{
    float acc = 0.0f;
    for (uint32_t k = 0; k < taps; k++)
        acc += x[k] * h[k];
    return acc;
}

CALLEE float fir_block(void)
{
    float energy = 0.0f;
    for (uint32_t n = 0; n < BLOCK; n++) {
        fir_out[n] = fir_tap_sum(&input[n], coefficients, TAPS);
        energy += fir_out[n] * fir_out[n];
    }
    return energy;
}

CALLEE float biquad(float x, float *state, float b0, float a1, float a2)
{
    const float y = b0 * x + state[0];
    state[0] = state[1] - a1 * y;
    state[1] = -a2 * y + 0.5f * x;
    return y;
}

CALLEE float iir_cascade(void)
{
    float last = 0.0f;
    for (uint32_t s = 0; s < SECTIONS; s++)
        iir_state[s][0] = iir_state[s][1] = 0.0f;
    for (uint32_t n = 0; n < BLOCK; n++) {
        float x = input[n];
        for (uint32_t s = 0; s < SECTIONS; s++)
            x = biquad(x, iir_state[s], 0.25f + 0.01f * (float)s, -0.5f, 0.125f);
        last = x;
    }
    return last;
}

/* The same block again and again: its result must never change. */
static void task_fir(void *arg)
{
    (void)arg;
    systick_start(TICKS); /* here, not in main: a time slice needs a running task */
    const float first = fir_block();
    for (;;)
        if (fir_block() != first)
            mismatches = mismatches + 1u;
}

static void task_iir(void *arg)
{
    (void)arg;
    const float first = iir_cascade();
    for (;;) {
        if (iir_cascade() != first)
            mismatches = mismatches + 1u;
        rtos_yield(); /* gives the rest of its slice to task_fir: the two shares differ */
    }
}

/* About a tenth of the time, so that many samples land in Handler mode. */
CALLEE void tick_smooth(uint32_t n)
{
    float s = smoothed;
    for (uint32_t k = 0; k < 200u; k++)
        s = 0.875f * s + 0.125f * (float)((n + k) & 63u);
    smoothed = s;
}

void SysTick_Handler(void)
{
    const uint32_t n = ticks + 1u;
    ticks = n;
    tick_smooth(n);
    if (RUN_TICKS != 0u && n == RUN_TICKS) {
        SYST_CSR = 0u;
        con_puts(mismatches == 0u ? "fpu ok " : "fpu MISMATCH ");
        con_dec(n);
        con_puts("\n");
        semihost_exit(mismatches == 0u ? 0 : 1);
    }
    if (n % SLICE == 0u)
        SCB_ICSR = SCB_ICSR_PENDSVSET;
}

int main(void)
{
    con_init();
    for (uint32_t k = 0; k < TAPS; k++)
        coefficients[k] = 1.0f / (float)(k + 2u);
    for (uint32_t n = 0; n < BLOCK + TAPS; n++)
        input[n] = (float)((n * 7u) % 13u) - 6.0f;
    rtos_task_create(&fir_tcb, task_fir, 0, fir_stack, 512u, "fir");
    rtos_task_create(&iir_tcb, task_iir, 0, iir_stack, 512u, "iir");
    SCB_SHPR3 = (SCB_SHPR3 & 0x00FFFFFFu) | (0x40u << 24); /* SysTick more urgent than PendSV */
    rtos_start();
}
