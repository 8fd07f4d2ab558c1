/*
 * Moving hot spot (issue 10): a long initialization phase, then the main loop.
 *
 * calibrate() spins alone until INIT_SAMPLES samples are taken (the initialization that
 * makes a polling function hot once); then the main loop runs hot_a(450), hot_b(300) and the
 * idle loop idle_spin(250) until SAMPLES samples in all: 2254, 1504 and 754 instructions per
 * pass (5n + 4 and 3n + 4), about 50 / 33 / 17 % of the main loop's time.
 * Built with PROF_TOPN, the idle loop is on the table's ignore list. At the end the firmware
 * prints the dump (a "prof topn" table, or the ring of the other builds).
 *
 *   PERIOD (SysTick ticks, default 2014), INIT_SAMPLES (default 2000), SAMPLES (default 12000)
 */
#include "board.h"
#include "sampler.h"
#ifndef SAMPLES
#define SAMPLES 12000u
#endif
#include "work.h"

#ifndef PERIOD
#define PERIOD 2014u
#endif
#ifndef INIT_SAMPLES
#define INIT_SAMPLES 2000u
#endif

/* How long the initialization lasts, in samples; in flash like cfg_samples. */
const volatile uint32_t cfg_init_samples = INIT_SAMPLES;

/* The idle loop, in assembly so that its end is a symbol the ignore list can use: n passes of
 * nop; subs; bne (Thumb-2, as hot_x's loop). */
void idle_spin(uint32_t n);
extern const char idle_spin_end[];
__asm(".section .text.idle_spin,\"ax\",%progbits\n"
      ".global idle_spin\n"
      ".global idle_spin_end\n"
      ".type idle_spin, %function\n"
      ".thumb_func\n"
      "idle_spin:\n"
      "    cbz   r0, 2f\n"
      "1:  nop\n"
      "    subs  r0, r0, #1\n"
      "    bne   1b\n"
      "2:  bx    lr\n"
      "idle_spin_end:\n"
      ".size idle_spin, . - idle_spin\n"
      ".text\n");

WORK_FN void calibrate(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        __asm volatile("nop");
}

WORK_FN static void main_loop(uint32_t limit)
{
    while (prof_taken < limit) {
        hot_a(450);
        hot_b(300);
        idle_spin(250);
    }
}

WORK_FN static void run(void)
{
    uint32_t limit = cfg_samples;
#if PROF_TOPN
    prof_ignore[0].start = (uint32_t)(uintptr_t)idle_spin & ~1u;
    prof_ignore[0].end = (uint32_t)(uintptr_t)idle_spin_end & ~1u;
#endif
    prof_start(PERIOD, limit);
    while (prof_taken < cfg_init_samples)
        calibrate(1000);
    main_loop(limit);
    prof_dump();
}

int main(void)
{
    con_init();
    clock_start();
    run();
    semihost_exit(0);
}
