/*
 * sampler.h: the on-chip PC sampler (issue 3).
 *
 * A timer interrupt at priority 0 takes the interrupted PC from word 6 of the exception frame
 * and stores it in a ring of raw addresses or in saturating histogram buckets over the code.
 * Everything is chosen at build time with -D:
 *
 *   PROF_HIST=0|1     0: ring of raw PCs (default); 1: 16-bit saturating buckets
 *   PROF_TOPN=N       instead: a table of the N hottest blocks with decay (seeds 002/004):
 *                     +2 per hit, -1 on one entry per sample in turn, a bubble step, the
 *                     coldest entry replaced when full, an ignore list (prof_ignore)
 *   PROF_TOPN_SHIFT=S block size 2^S bytes for PROF_TOPN (default 5)
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
 *   prof topn n=N shift=S total=W ignored=I entries=E   then E "t BLOCK HITS PERMILLE" lines
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

#ifndef PROF_TOPN
#define PROF_TOPN 0
#endif
#ifndef PROF_TOPN_SHIFT
#define PROF_TOPN_SHIFT 5u
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

#if PROF_TOPN
/* The top-N table, read by the host through its DWARF layout (mcuprof record --read-onchip):
 * member names and the array length are the interface, not the order or the sizes. */
typedef struct {
    uint32_t block;    /* block start: the sampled PC with its low PROF_TOPN_SHIFT bits cleared */
    uint32_t hits;     /* +2 per sample in the block, -1 at each decay turn; 0 = free entry */
    uint32_t permille; /* hits * 1000 / total when the entry was last hit */
} prof_entry_t;

typedef struct {
    prof_entry_t entries[PROF_TOPN]; /* kept roughly sorted, hottest first (bubble step) */
    uint32_t decay_next;             /* the entry the next decay turn takes 1 from */
    uint32_t total;                  /* weight given (+2 per counted sample) minus weight decayed */
    uint32_t shift;                  /* block size 2^shift bytes */
    uint32_t ignored;                /* samples that fell in the ignore list */
} prof_table_t;

extern prof_table_t prof_table;

/* Code ranges [start, end) whose samples are not counted: the idle loop. A scenario fills
 * them before prof_start; `end` 0 marks an unused slot. */
typedef struct {
    uint32_t start;
    uint32_t end;
} prof_range_t;
#define PROF_IGNORE_MAX 2u
extern prof_range_t prof_ignore[PROF_IGNORE_MAX];
#endif

/* Write the collected samples to the console in the dump format above. */
void prof_dump(void);

#endif
