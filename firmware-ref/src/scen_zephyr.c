/*
 * Zephyr scenario: three threads under minizephyr, a kernel shaped like Zephyr's (the names
 * and structures a debugger's thread awareness reads: _kernel.cpus[0].current, struct
 * k_thread's name, z_sys_post_kernel), with time slicing.
 *
 *   "main"   bg_thread_main: hot_a(2000) per turn, then k_yield; ends the run after ROUNDS turns
 *   "sensor" sensor_entry:   hot_b(8000) per turn, longer than a time slice (SysTick, SLICE
 *                            ticks): preempted in the middle of it; then k_yield
 *   "logger" logger_entry:   log_flush(1000) per turn, then k_yield
 *
 * Start-up work before the kernel runs: hot_c(BOOT_WORK) with `current` at the dummy thread,
 * after the threads are created. Each thread's work function runs in that thread alone, and
 * hot_c before the kernel starts alone, so the truth plugin's counts of them are each
 * thread's (and the start-up's) exact instructions.
 *
 *   ROUNDS (default 400; 0: never ends), BOOT_WORK (default 200000), SLICE (default 5000;
 *   0: no time slicing, so each thread's share is fixed by its work per turn, whatever the
 *   timing: 10000 : 40000 : 5000 instructions of work per round)
 */
#include "board.h"
#include "minizephyr.h"
#include "work.h"

#ifndef ROUNDS
#define ROUNDS 400u
#endif
#ifndef BOOT_WORK
#define BOOT_WORK 200000u
#endif
#ifndef SLICE
#define SLICE 5000u
#endif

static struct k_thread z_main_thread, sensor_thread, logger_thread;
static uint32_t main_stack[256] __attribute__((aligned(8)));
static uint32_t sensor_stack[256] __attribute__((aligned(8)));
static uint32_t logger_stack[256] __attribute__((aligned(8)));
static const volatile uint32_t rounds = ROUNDS;

__attribute__((noinline, noclone)) static void log_flush(uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        __asm volatile("nop");
}

static void bg_thread_main(void *p1, void *p2, void *p3)
{
    (void)p1, (void)p2, (void)p3;
    z_sys_post_kernel = true;
    if (SLICE != 0u)
        z_time_slice_start(SLICE);
    for (uint32_t turn = 0; rounds == 0u || turn < rounds; turn++) {
        hot_a(2000u);
        k_yield();
    }
    semihost_exit(0);
}

static void sensor_entry(void *p1, void *p2, void *p3)
{
    (void)p1, (void)p2, (void)p3;
    for (;;) {
        hot_b(8000u);
        k_yield();
    }
}

static void logger_entry(void *p1, void *p2, void *p3)
{
    (void)p1, (void)p2, (void)p3;
    for (;;) {
        log_flush(1000u);
        k_yield();
    }
}

int main(void)
{
    struct k_thread dummy_thread;
    z_dummy_thread_init(&dummy_thread);
    con_init();
    k_thread_create(&logger_thread, logger_stack, 256u, logger_entry, 0, 0, 0);
    k_thread_name_set(&logger_thread, "logger");
    k_thread_create(&sensor_thread, sensor_stack, 256u, sensor_entry, 0, 0, 0);
    k_thread_name_set(&sensor_thread, "sensor");
    k_thread_create(&z_main_thread, main_stack, 256u, bg_thread_main, 0, 0, 0);
    k_thread_name_set(&z_main_thread, "main");
    hot_c(BOOT_WORK);
    z_switch_to_main_thread(&z_main_thread);
}
