/*
 * One scenario for every Cortex-M architecture QEMU has (issue 28): the same call tree at -O2
 * on each board of the board table (firmware-ref/CMakeLists.txt), with the arithmetic the core
 * does in hardware or in libgcc:
 *
 *   main -> run_round -> stage_filter -> filter_step      FP: the FPU's (single or double
 *                                                         precision), or soft float (libgcc's
 *                                                         __aeabi_fmul, __aeabi_fadd) without one
 *   main -> run_round -> stage_checksum -> mix_word       integer work
 *   main -> run_round -> stage_divide -> divide_step      division: udiv, or __aeabi_uidiv on ARMv6-M
 *   SysTick_Handler -> tick_work -> tick_leaf             an interrupt doing real work
 *
 * Every function does its own work and the calls are not in tail position (each is followed by
 * a store), so every caller keeps its frame at -O2.
 *
 *   ROUNDS (default 400; 0: forever), TICKS (SysTick period in core clocks, default 499: about
 *   20 000 instructions at the MPS2 boards' 25 MHz under -icount shift=0)
 */
#include <stdint.h>

#ifndef ROUNDS
#define ROUNDS 400u
#endif
#ifndef TICKS
#define TICKS 499u
#endif

#define CALLEE __attribute__((noinline, noipa))

/* The widest floating-point type the core computes in hardware; float (soft) without an FPU. */
#if defined(__ARM_FP) && (__ARM_FP & 8)
typedef double real;
#else
typedef float real;
#endif

volatile uint32_t sink;
volatile real real_sink;
volatile uint32_t divisor = 7u;   /* unknown to the compiler: a real division */
volatile uint32_t ticks_seen;

static inline __attribute__((always_inline)) void work(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        sink = sink + i;
}

CALLEE real filter_step(real x, real state)
{
    work(5u);
    return state * (real)0.875 + x * (real)0.125;
}

CALLEE void stage_filter(void)
{
    real state = real_sink;
    for (uint32_t i = 0; i < 24u; i++)
        state = filter_step((real)i, state);
    real_sink = state;
    sink = 1u;
}

CALLEE uint32_t mix_word(uint32_t h, uint32_t w)
{
    work(4u);
    h ^= w;
    h *= 0x01000193u;
    return h ^ (h >> 15);
}

CALLEE void stage_checksum(void)
{
    uint32_t h = 0x811C9DC5u;
    for (uint32_t i = 0; i < 32u; i++)
        h = mix_word(h, i * 0x9E3779B9u);
    sink = h;
}

CALLEE uint32_t divide_step(uint32_t n)
{
    work(3u);
    return n / divisor + n % divisor;
}

CALLEE void stage_divide(void)
{
    uint32_t total = 0;
    for (uint32_t i = 1; i <= 24u; i++)
        total += divide_step(i * 1000003u);
    sink = total;
}

CALLEE void run_round(void)
{
    work(20u);
    stage_filter();
    stage_checksum();
    stage_divide();
    sink = 2u;
}

CALLEE void tick_leaf(void)
{
    work(300u);
}

CALLEE void tick_work(void)
{
    work(100u);
    tick_leaf();
    ticks_seen = ticks_seen + 1u;
}

void SysTick_Handler(void)
{
    tick_work();
}

/* SysTick (ARMv7-M ARM B3.3, ARMv6-M ARM B3.3): the core clock, interrupting. */
#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)
#define SYST_CVR REG32(0xE000E018u)
#define REG32(addr) (*(volatile uint32_t *)(addr))

__attribute__((noreturn)) void semihost_exit(int status);

int main(void)
{
    SYST_RVR = TICKS - 1u;
    SYST_CVR = 0u;
    SYST_CSR = 0x7u;   /* ENABLE, TICKINT, CLKSOURCE = the processor clock */
    for (uint32_t round = 0;; round++) {
        if (ROUNDS != 0u && round == ROUNDS)
            break;
        run_round();
    }
    SYST_CSR = 0u;
    semihost_exit(0);
}
