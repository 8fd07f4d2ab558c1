/*
 * Tasks on each of two cores (issue 29): mps2-an521 as in scen_dual.c (core 1 released by core 0
 * through INITSVTOR1 and CPUWAIT), each core running two tasks of its own under a kernel whose
 * data is shaped like an SMP kernel's: one current-task pointer per core.
 *
 *   KERNEL_ZEPHYR=0: FreeRTOS SMP's shape (tasks.c, configNUMBER_OF_CORES > 1): TCB_t with
 *                    pcTaskName, TCB_t * volatile pxCurrentTCBs[2], xSchedulerRunning.
 *   KERNEL_ZEPHYR=1: Zephyr SMP's shape: struct k_thread with name, _kernel.cpus[i].current,
 *                    z_sys_post_kernel.
 *
 * The scheduler is cooperative and run-to-completion: each core's loop makes a task current
 * (its core's pointer) and then calls its function, which returns before the next task is made
 * current. So a sample whose PC is in a task's function was taken while that task was its
 * core's current one, whatever the halt's timing: the test checks every such sample's task tag.
 *
 *   core 0: motor (motor_work, 3 parts), display (display_work, 1 part)
 *   core 1: radio (radio_work, 1 part), sensor (sensor_work, 2 parts)
 *
 * Without end; no interrupts.
 */
#include <stdint.h>

#ifndef KERNEL_ZEPHYR
#define KERNEL_ZEPHYR 0
#endif

#define CALLEE __attribute__((noinline, noipa))
#define REG32(addr) (*(volatile uint32_t *)(addr))
#define SYSCTL_INITSVTOR1 REG32(0x50021114u)   /* SSE-200 system control (scen_dual.c) */
#define SYSCTL_CPUWAIT REG32(0x50021118u)
#define CPUWAIT_CPU1 (1u << 1)

#if KERNEL_ZEPHYR
struct k_thread {
    uint32_t base_state;
    uint32_t stack_pointer;
    char name[32];
};
typedef struct k_thread task_t;
struct _cpu {
    uint32_t nested;
    struct k_thread *current;
    uint32_t id;
};
struct z_kernel {
    struct _cpu cpus[2];
    uint32_t threads;
};
struct z_kernel _kernel;
volatile int z_sys_post_kernel;
#define SET_CURRENT(core, task) (_kernel.cpus[(core)].current = (task))
#define TASK(name_text) {0u, 0u, name_text}
#else
typedef struct tskTaskControlBlock {
    volatile uint32_t *pxTopOfStack;
    uint32_t uxPriority;
    char pcTaskName[16];
    uint32_t xTaskRunState;   /* FreeRTOS SMP: the core the task runs on */
} TCB_t;
typedef TCB_t task_t;
TCB_t *volatile pxCurrentTCBs[2];
static volatile int32_t xSchedulerRunning;
#define SET_CURRENT(core, task) (pxCurrentTCBs[(core)] = (task))
#define TASK(name_text) {0, 1u, name_text, 0u}
#endif

static task_t motor = TASK("motor"), display = TASK("display"), radio = TASK("radio"), sensor = TASK("sensor");
volatile uint32_t sink0, sink1;

static inline __attribute__((always_inline)) void spin(volatile uint32_t *where, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        *where = *where + i;
}

CALLEE void motor_work(void) { spin(&sink0, 90u); }
CALLEE void display_work(void) { spin(&sink0, 30u); }
CALLEE void radio_work(void) { spin(&sink1, 40u); }
CALLEE void sensor_work(void) { spin(&sink1, 80u); }

/* One round of a core's scheduler: each task made its core's current one, then run. */
CALLEE void core0_schedule(void)
{
    SET_CURRENT(0, &motor);
    motor_work();
    SET_CURRENT(0, &display);
    display_work();
}

CALLEE void core1_schedule(void)
{
    SET_CURRENT(1, &radio);
    radio_work();
    SET_CURRENT(1, &sensor);
    sensor_work();
}

__attribute__((noreturn)) void core1_main(void)
{
    for (;;)
        core1_schedule();
}

static uint32_t core1_stack[256] __attribute__((aligned(8)));
void core1_reset(void) { core1_main(); }
__attribute__((aligned(128), used)) static void (*const core1_vectors[16])(void) = {
    [0] = (void (*)(void))(uintptr_t)&core1_stack[256],
    [1] = core1_reset,
};

int main(void)
{
#if KERNEL_ZEPHYR
    _kernel.cpus[1].id = 1u;
    z_sys_post_kernel = 1;
#else
    xSchedulerRunning = 1;
#endif
    SYSCTL_INITSVTOR1 = (uint32_t)(uintptr_t)core1_vectors;
    SYSCTL_CPUWAIT = SYSCTL_CPUWAIT & ~CPUWAIT_CPU1;
    for (;;)
        core0_schedule();
}
