/*
 * work.h: the busy loops shared by the scenarios. Each scenario file includes it once, so the
 * loops sit in the same translation unit as their callers (the -O2 scenario needs that to
 * inline them).
 *
 * A call hot_x(n) executes 5n + 4 instructions at -Os (Cortex-M3/M4): the truth plugin and the
 * seed's log agree on 3504, 1004 and 504 for n = 700, 200, 100.
 */
#ifndef WORK_H
#define WORK_H

#include <stdint.h>

/* WORK_INLINE=1 lets the compiler inline the loops (the -O2 scenario); otherwise every loop
 * stays a function of its own, so each has its own address range in the profile. */
#if defined(WORK_INLINE) && WORK_INLINE
#define WORK_FN
#else
#define WORK_FN __attribute__((noinline))
#endif

/* Identical bodies: keep GCC's identical-code folding from merging them (-fno-ipa-icf is also
 * set for every build). */
WORK_FN void hot_a(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        __asm volatile("nop");
}

WORK_FN void hot_b(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        __asm volatile("nop");
}

WORK_FN void hot_c(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        __asm volatile("nop");
}

/* How many samples to take. A const volatile in flash rather than a literal in the code, so the
 * code (and so the addresses) of a build does not depend on the sample count. */
#ifndef SAMPLES
#define SAMPLES 10000u
#endif
const volatile uint32_t cfg_samples = SAMPLES;

#endif
