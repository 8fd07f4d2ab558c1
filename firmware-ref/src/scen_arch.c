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
 * With ARCH_NONSECURE (mps2-an505, secure_boot.c): this is the Non-secure application. Our own
 * Secure boot hands over to ns_reset through NSVTOR and BLXNS; the application runs on its own
 * SysTick (the Non-secure one: SysTick is banked by security state) and run_round calls the
 * Secure state's non-secure-callable entry secure_scramble_entry (an SG in the NSC region).
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
volatile uint32_t divisor;        /* 7, set at run time: unknown to the compiler, a real division */
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

#if ARCH_NONSECURE
uint32_t secure_scramble_entry(uint32_t value);   /* secure_boot.c: a non-secure-callable entry */
#endif

CALLEE void run_round(void)
{
    work(20u);
    stage_filter();
    stage_checksum();
    stage_divide();
#if ARCH_NONSECURE
    sink = secure_scramble_entry(sink);
#endif
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

#if ARCH_NONSECURE
/* The Non-secure side calls no Secure function but its entries: its own semihosting exit. */
__attribute__((noreturn)) static void exit_run(void)
{
    register uint32_t op __asm__("r0") = 0x18u;         /* SYS_EXIT, ADP_Stopped_ApplicationExit */
    register uint32_t reason __asm__("r1") = 0x20026u;
    for (;;)
        __asm volatile("bkpt 0xab" : : "r"(op), "r"(reason) : "memory");
}
#define main ns_main
#else
__attribute__((noreturn)) void semihost_exit(int status);
#define exit_run() semihost_exit(0)
#endif

int main(void)
{
    divisor = 7u;
    SYST_RVR = TICKS - 1u;
    SYST_CVR = 0u;
    SYST_CSR = 0x7u;   /* ENABLE, TICKINT, CLKSOURCE = the processor clock */
    for (uint32_t round = 0;; round++) {
        if (ROUNDS != 0u && round == ROUNDS)
            break;
        run_round();
    }
    SYST_CSR = 0u;
    exit_run();
}

#if ARCH_NONSECURE
/* The Non-secure vector table (NSVTOR points here) and reset: the Secure boot has set MSP_NS
 * to word 0 and calls word 1 by BLXNS, so ns_reset's LR is FNC_RETURN. The Non-secure RAM's
 * .bss is the Non-secure side's to clear. */
extern uint32_t __ns_stack_top, __ns_bss_start, __ns_bss_end;
void ns_reset(void);
static void ns_unexpected(void) { exit_run(); }

__attribute__((section(".ns_vectors"), used)) void (*const ns_vector_table[16])(void) = {
    [0] = (void (*)(void))(uintptr_t)&__ns_stack_top,
    [1] = ns_reset,
    [2] = ns_unexpected, [3] = ns_unexpected, [4] = ns_unexpected, [5] = ns_unexpected,
    [6] = ns_unexpected, [11] = ns_unexpected, [14] = ns_unexpected,
    [15] = SysTick_Handler,
};

void ns_reset(void)
{
    for (uint32_t *p = &__ns_bss_start; p < &__ns_bss_end;)
        *p++ = 0u;
#if defined(__ARM_FP)
    REG32(0xE000ED88u) |= 0xFu << 20;   /* CPACR_NS: CP10, CP11 (the Secure boot allowed them in NSACR) */
    __asm volatile("dsb\n isb" ::: "memory");
#endif
    ns_main();
}
#endif
