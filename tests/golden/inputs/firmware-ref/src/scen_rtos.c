/*
 * RTOS scenario: two tasks share hot_a under a round-robin scheduler (minirtos).
 *
 * "motor" runs hot_a(600) per turn, "link" hot_a(300) and hot_b(100); each yields after its
 * turn. Built with -DPROF_TAG=pxCurrentTCB, every sample also stores the running task's
 * control block address. Before the dump the firmware prints "task ADDR NAME" for each task,
 * so the host can name the tags. hot_a's time splits 2:1 between motor and link.
 *
 *   PERIOD (SysTick ticks, default 2014), SAMPLES (default 5000)
 *   BOOT_WORK: hot_c(BOOT_WORK) before the scheduler starts (after the tasks are created),
 *              about 5 * BOOT_WORK instructions that no task runs; hot_c runs nowhere else
 */
#include "board.h"
#include "minirtos.h"
#include "sampler.h"
#ifndef SAMPLES
#define SAMPLES 5000u
#endif
#include "work.h"

#ifndef PERIOD
#define PERIOD 2014u
#endif

static TCB_t motor_tcb, link_tcb;
static uint32_t motor_stack[256] __attribute__((aligned(8)));
static uint32_t link_stack[256] __attribute__((aligned(8)));

static void print_task(const TCB_t *tcb)
{
    con_puts("task ");
    con_hex((uint32_t)(uintptr_t)tcb, 8u);
    con_putc(' ');
    con_puts(tcb->pcTaskName);
    con_puts("\n");
}

__attribute__((noreturn)) static void finish(void)
{
    prof_stop();
    print_task(&motor_tcb);
    print_task(&link_tcb);
    prof_dump();
    semihost_exit(0);
}

static void task_motor(void *arg)
{
    (void)arg;
    prof_start(PERIOD, cfg_samples);
    for (;;) {
        hot_a(600u);
        if (prof_taken >= cfg_samples)
            finish();
        rtos_yield();
    }
}

static void task_link(void *arg)
{
    (void)arg;
    for (;;) {
        hot_a(300u);
        hot_b(100u);
        rtos_yield();
    }
}

int main(void)
{
    con_init();
    clock_start();
    rtos_task_create(&motor_tcb, task_motor, 0, motor_stack, 256u, "motor");
    rtos_task_create(&link_tcb, task_link, 0, link_stack, 256u, "link");
#ifdef BOOT_WORK
    hot_c(BOOT_WORK);
#endif
    rtos_start();
}
