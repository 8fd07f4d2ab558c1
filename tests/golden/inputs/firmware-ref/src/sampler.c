/*
 * sampler.c: the on-chip PC sampler. See sampler.h for the build options and the dump format.
 *
 * On exception entry the core pushes r0-r3, r12, lr, pc, xpsr onto the stack the interrupted
 * code was using; word 6 (offset 24) is the address of the next instruction to execute. Bit 2
 * of EXC_RETURN (in lr on entry) says which stack: 0 = MSP, 1 = PSP (ARMv7-M ARM B1.5.8).
 * The naked entry finds the frame, loads that word into r0 and tail-calls sample_record(pc);
 * lr still holds EXC_RETURN, so sample_record's ordinary return ends the exception.
 */
#include "sampler.h"
#include "board.h"

#if PROF_TIM3
#define SAMPLER_VECTOR TIM3_IRQHandler
#else
#define SAMPLER_VECTOR SysTick_Handler
#endif

extern uint32_t __text_start; /* linker script: first byte of .text, the bucket base */

volatile uint32_t prof_taken;
static uint32_t target;

#if PROF_TOPN
prof_table_t prof_table = {.shift = PROF_TOPN_SHIFT};
prof_range_t prof_ignore[PROF_IGNORE_MAX];
#elif PROF_HIST
uint16_t prof_bins[PROF_BINS];
/* The bucket size, for a host that reads prof_bins over the debug link (mcuprof record
 * --read-onchip): the array's symbol gives its address and length, this gives 2^shift. */
const volatile uint32_t prof_shift = PROF_SHIFT; /* volatile: read by prof_dump, so kept */
uint32_t prof_outside; /* samples outside the covered code: RAM, vectors, library tail */
#else
uint32_t prof_ring[PROF_RING];
#ifdef PROF_TAG
extern void *volatile PROF_TAG;
uint32_t prof_tags[PROF_RING];
#endif
#endif

#if PROF_JITTER
static uint32_t base_period;
static uint32_t rng_state = 0x6D2B79F5u; /* any nonzero seed */
#endif

void sample_record(uint32_t pc);

/* ---- timer glue ---- */
#if PROF_TIM3
static inline void timer_ack(void)
{
    TIM_SR(TIM3_BASE) = ~TIM_SR_UIF; /* clear UIF first, or the interrupt fires again */
}
static inline void timer_set_period(uint32_t ticks)
{
    TIM_ARR(TIM3_BASE) = ticks - 1u;
}
#else
static inline void timer_ack(void)
{
    /* SysTick's pending bit clears itself on exception entry */
}
static inline void timer_set_period(uint32_t ticks)
{
    SYST_RVR = ticks - 1u; /* takes effect at the next reload */
}
#endif

/* ---- exception entry ---- */
#if defined(__ARM_ARCH_6M__)
/* Cortex-M0/M0+: no tst with an immediate, no it blocks. Shift EXC_RETURN bit 2 into the
 * sign bit and branch on it. */
__attribute__((naked)) void SAMPLER_VECTOR(void)
{
    __asm volatile(
        ".syntax unified        \n"
        "mov   r0, lr           \n"
        "lsls  r0, r0, #29      \n" /* EXC_RETURN bit 2 -> N flag */
        "bmi   1f               \n"
        "mrs   r0, msp          \n"
        "b     2f               \n"
        "1:                     \n"
        "mrs   r0, psp          \n"
        "2:                     \n"
        "ldr   r0, [r0, #24]    \n" /* frame word 6: interrupted PC */
        "ldr   r1, =sample_record \n"
        "bx    r1               \n"
        ".ltorg                 \n");
}
#elif defined(PROF_FORCE_MSP) && PROF_FORCE_MSP
/* The wrong prologue, on purpose: the frame is always taken from MSP. */
__attribute__((naked)) void SAMPLER_VECTOR(void)
{
    __asm volatile(
        "mrs   r0, msp          \n"
        "ldr   r0, [r0, #24]    \n"
        "b     sample_record    \n");
}
#else
__attribute__((naked)) void SAMPLER_VECTOR(void)
{
    __asm volatile(
        "tst   lr, #4           \n" /* EXC_RETURN bit 2: which stack holds the frame */
        "ite   eq               \n"
        "mrseq r0, msp          \n"
        "mrsne r0, psp          \n"
        "ldr   r0, [r0, #24]    \n" /* frame word 6: interrupted PC */
        "b     sample_record    \n");
}
#endif

#if PROF_TOPN
/* A sample in entry i's block: +2 (the decay takes 1 per turn, so a block that keeps being
 * hit climbs faster than it decays, as in the seeds), the share refreshed, and one bubble
 * pass that moves the entry up past colder ones, so the table stays roughly sorted. */
static void topn_hit(uint32_t i, uint32_t block)
{
    prof_entry_t *e = &prof_table.entries[i];
    e->block = block;
    e->hits += 2u;
    prof_table.total += 2u;
    /* 32-bit arithmetic while hits * 1000 fits, no division helper from libgcc after that */
    e->permille = e->hits < 4294967u ? e->hits * 1000u / prof_table.total : e->hits / (prof_table.total / 1000u);
    while (i > 0u && prof_table.entries[i - 1u].hits < prof_table.entries[i].hits) {
        prof_entry_t colder = prof_table.entries[i - 1u];
        prof_table.entries[i - 1u] = prof_table.entries[i];
        prof_table.entries[i] = colder;
        i--;
    }
}

static void topn_record(uint32_t pc)
{
    /* The decay turn first: one entry in turn loses 1, whether or not this sample counts. */
    prof_entry_t *d = &prof_table.entries[prof_table.decay_next];
    if (d->hits != 0u) {
        d->hits--;
        prof_table.total--;
    }
    prof_table.decay_next = prof_table.decay_next + 1u == PROF_TOPN ? 0u : prof_table.decay_next + 1u;

    for (uint32_t k = 0; k < PROF_IGNORE_MAX; k++) {
        if (pc >= prof_ignore[k].start && pc < prof_ignore[k].end) {
            prof_table.ignored++;
            return;
        }
    }
    uint32_t block = pc & ~((1u << PROF_TOPN_SHIFT) - 1u);
    uint32_t free_entry = PROF_TOPN;
    uint32_t coldest = 0u;
    for (uint32_t i = 0; i < PROF_TOPN; i++) {
        const prof_entry_t *e = &prof_table.entries[i];
        if (e->hits != 0u && e->block == block) {
            topn_hit(i, block);
            return;
        }
        if (e->hits == 0u && free_entry == PROF_TOPN)
            free_entry = i;
        if (e->hits < prof_table.entries[coldest].hits)
            coldest = i;
    }
    if (free_entry == PROF_TOPN) {
        /* Full: the coldest block leaves. Its weight stays in `total`, so the shares are of all
         * recent samples, including those of blocks no longer listed. */
        free_entry = coldest;
        prof_table.entries[coldest].hits = 0u;
    }
    topn_hit(free_entry, block);
}
#endif

__attribute__((used)) void sample_record(uint32_t pc)
{
    timer_ack();
#if PROF_TOPN
    topn_record(pc);
#elif PROF_HIST
    uint32_t bin = (pc - (uint32_t)&__text_start) >> PROF_SHIFT;
    if (bin < PROF_BINS) {
        if (prof_bins[bin] != 0xFFFFu) /* saturate rather than wrap to zero */
            prof_bins[bin]++;
    } else {
        prof_outside++;
    }
#else
    uint32_t slot = prof_taken & (PROF_RING - 1u); /* the ring overwrites the oldest sample */
    prof_ring[slot] = pc;
#ifdef PROF_TAG
    prof_tags[slot] = (uint32_t)PROF_TAG;
#endif
#endif
#if PROF_JITTER
    /* xorshift32 (Marsaglia 2003): the next period gets a random addition, so sampling can
     * not fall into step with a periodic program. */
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    rng_state = x;
    timer_set_period(base_period + (x & PROF_JITTER));
#endif
    if (++prof_taken == target)
        prof_stop();
}

void prof_start(uint32_t period, uint32_t limit)
{
    prof_taken = 0u;
    target = limit;
#if PROF_JITTER
    base_period = period;
#endif
#if PROF_TIM3
    RCC_APB1ENR |= RCC_APB1_TIM3EN;
    TIM_CR1(TIM3_BASE) = 0u;
    TIM_PSC(TIM3_BASE) = PROF_TIM3_PSC;
    timer_set_period(period);
    TIM_EGR(TIM3_BASE) = TIM_EGR_UG; /* load prescaler and period now */
    TIM_SR(TIM3_BASE) = 0u;          /* drop the UIF the UG just raised */
    TIM_DIER(TIM3_BASE) = TIM_DIER_UIE;
    nvic_set_priority(IRQ_TIM3, 0u); /* most urgent: sees into every other handler */
    nvic_enable(IRQ_TIM3);
    TIM_CR1(TIM3_BASE) = TIM_CR1_CEN;
#else
    SCB_SHPR3 &= ~(0xFFu << 24);     /* SysTick priority 0 */
    timer_set_period(period);
    SYST_CVR = 0u;
    SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;
#endif
}

void prof_stop(void)
{
#if PROF_TIM3
    TIM_CR1(TIM3_BASE) = 0u;
    TIM_DIER(TIM3_BASE) = 0u;
#else
    SYST_CSR = 0u;
#endif
}

/* Dump helpers: 16 bucket counts per "h" line, 8 words per "p" or "g" line, one "t" line per
 * table entry. */
#if PROF_TOPN
static void dump_table(void)
{
    for (uint32_t i = 0; i < PROF_TOPN; i++) {
        con_puts("\nt ");
        con_hex(prof_table.entries[i].block, 8u);
        con_putc(' ');
        con_dec(prof_table.entries[i].hits);
        con_putc(' ');
        con_dec(prof_table.entries[i].permille);
    }
}
#elif PROF_HIST
static void dump_bins(void)
{
    for (uint32_t i = 0; i < PROF_BINS; i++) {
        con_puts(i % 16u == 0u ? "\nh " : " ");
        con_hex(prof_bins[i], 4u);
    }
}
#else
static void dump_words(const char *line_start, const uint32_t *words, uint32_t first, uint32_t last)
{
    for (uint32_t i = first; i < last; i++) {
        if ((i - first) % 8u == 0u)
            con_puts(line_start);
        else
            con_putc(' ');
        con_hex(words[i & (PROF_RING - 1u)], 8u);
    }
}
#endif

void prof_dump(void)
{
    uint32_t n = prof_taken;
#if PROF_TOPN
    con_puts("prof topn n=");
    con_dec(n);
    con_puts(" shift=");
    con_dec(prof_table.shift);
    con_puts(" total=");
    con_dec(prof_table.total);
    con_puts(" ignored=");
    con_dec(prof_table.ignored);
    con_puts(" entries=");
    con_dec(PROF_TOPN);
    dump_table();
#elif PROF_HIST
    con_puts("prof hist base=0x");
    con_hex((uint32_t)&__text_start, 8u);
    con_puts(" shift=");
    con_dec(prof_shift);
    con_puts(" n=");
    con_dec(n);
    con_puts(" out=");
    con_dec(prof_outside);
    dump_bins();
#else
    uint32_t first = (n > PROF_RING) ? n - PROF_RING : 0u; /* the ring holds the newest */
    con_puts("prof raw n=");
    con_dec(n);
    dump_words("\np ", prof_ring, first, n);
#ifdef PROF_TAG
    dump_words("\ng ", prof_tags, first, n);
#endif
#endif
    con_puts("\nend\n");
}
