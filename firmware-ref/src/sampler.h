/*
 * sampler.h: the on-chip PC sampler (issue 3).
 *
 * A timer interrupt at priority 0 takes the interrupted PC from word 6 of the exception frame
 * and stores it in a ring of raw addresses or in saturating histogram buckets over the code.
 * Everything is chosen at build time with -D:
 *
 *   PROF_HIST=0|1     0: ring of raw PCs (default); 1: 16-bit saturating buckets
 *   PROF_RING=N       ring size in samples, a power of two (default 16384)
 *   PROF_SHIFT=S      bucket size 2^S bytes (default 2)
 *   PROF_HIST_SPAN=B  bytes of code covered by the buckets from __text_start (default 4096)
 *   PROF_JITTER=MASK  add (xorshift32 & MASK) timer ticks to the base period after each
 *                     sample; 0 (default) keeps the period fixed. MASK is 2^k - 1.
 *   PROF_TAG=SYMBOL   also store the 32-bit value of the pointer variable SYMBOL per sample
 *                     (ring builds), e.g. -DPROF_TAG=pxCurrentTCB
 *   PROF_TIM3=1       drive sampling from TIM3 instead of SysTick
 *   PROF_TIM3_PSC=P   TIM3 prescaler (default 0)
 *   PROF_FORCE_MSP=1  deliberately wrong prologue that always reads the frame from MSP
 *                     (shows the "all samples are garbage on PSP" pitfall)
 *
 * The dump (prof_dump) is the text interface read by mcuprof and by prof75a.py:
 *   prof raw n=N                 then "p" lines of 8 lowercase 8-digit hex PCs
 *   g ...                        tags, one per sample, parallel to the "p" lines
 *   prof hist base=0xB shift=S n=N out=K   then "h" lines of 16 4-digit hex counts
 *   end
 */
#ifndef SAMPLER_H
#define SAMPLER_H

#include <stdint.h>

#ifndef PROF_HIST
#define PROF_HIST 0
#endif
#ifndef PROF_RING
#define PROF_RING 16384u
#endif
#ifndef PROF_SHIFT
#define PROF_SHIFT 2u
#endif
#ifndef PROF_HIST_SPAN
#define PROF_HIST_SPAN 4096u
#endif
#define PROF_BINS (PROF_HIST_SPAN >> PROF_SHIFT)
#ifndef PROF_JITTER
#define PROF_JITTER 0u
#endif
#ifndef PROF_TIM3
#define PROF_TIM3 0
#endif
#ifndef PROF_TIM3_PSC
#define PROF_TIM3_PSC 0u
#endif

#if (PROF_RING & (PROF_RING - 1u)) != 0
#error "PROF_RING must be a power of two"
#endif
#if (PROF_JITTER & (PROF_JITTER + 1u)) != 0
#error "PROF_JITTER must be a mask 2^k - 1"
#endif

/* Samples taken so far; the scenarios loop until it reaches their target. */
extern volatile uint32_t prof_taken;

/* Start sampling every `period` timer ticks (SysTick: core clock ticks, at most 2^24; TIM3:
 * prescaled ticks, at most 2^16) and stop by itself after `limit` samples (0: never stop,
 * the ring then keeps the last PROF_RING samples). */
void prof_start(uint32_t period, uint32_t limit);
void prof_stop(void);

/* Write the collected samples to the console in the dump format above. */
void prof_dump(void);

#endif
