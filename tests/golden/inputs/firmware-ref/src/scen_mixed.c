/*
 * Mixed workload for host-side sampling (no on-chip sampler runs): loads and stores,
 * divisions, data-dependent branches and calls, so that instructions differ in what they
 * cost QEMU to emulate. A halting sampler paced by wall-clock time is biased by that cost;
 * one paced by instruction count (record/replay) is not: the live tests compare both with
 * the truth plugin.
 *
 *   ROUNDS=R   passes over the workload before the semihosting exit
 */
#include "board.h"

#ifndef ROUNDS
#define ROUNDS 400u
#endif

#define WORDS 256u
static uint32_t source[WORDS];
static uint32_t target[WORDS];
volatile uint32_t sink;

/* Loads and stores: copy and scale a buffer. */
__attribute__((noinline)) void copy_scale(uint32_t factor)
{
    for (uint32_t i = 0; i < WORDS; i++)
        target[i] = source[i] * factor + target[(i + 7u) % WORDS];
}

/* Hardware divisions (udiv, sdiv). */
__attribute__((noinline)) uint32_t divide_all(uint32_t divisor)
{
    uint32_t acc = 0;
    for (uint32_t i = 1; i < 200u; i++)
        acc += (source[i] + 1000u) / (divisor + i) + (uint32_t)((int32_t)target[i] / (int32_t)(i | 1u));
    return acc;
}

/* Data-dependent branches. */
__attribute__((noinline)) uint32_t classify(void)
{
    uint32_t small = 0, odd = 0, big = 0;
    for (uint32_t i = 0; i < WORDS; i++) {
        uint32_t v = target[i];
        if (v < 1000u)
            small++;
        else if (v & 1u)
            odd++;
        else if (v > 100000u)
            big++;
    }
    return small + 2u * odd + 3u * big;
}

/* Calls: a recursion and a leaf called from two places. */
__attribute__((noinline)) uint32_t leaf(uint32_t x)
{
    return (x ^ (x >> 3)) + 1u;
}

__attribute__((noinline)) uint32_t recurse(uint32_t depth)
{
    if (depth == 0)
        return leaf(depth);
    return leaf(depth) + recurse(depth - 1u);
}

int main(void)
{
    for (uint32_t i = 0; i < WORDS; i++)
        source[i] = i * 2654435761u;
    uint32_t acc = 0;
    for (uint32_t round = 0; round < ROUNDS; round++) {
        copy_scale(round | 1u);
        acc += divide_all(round);
        acc += classify();
        for (uint32_t k = 0; k < 8u; k++)
            acc += recurse(12u) + leaf(acc);
    }
    sink = acc;
    semihost_exit(0);
}
