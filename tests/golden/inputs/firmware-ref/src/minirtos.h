/*
 * minirtos.h: a minimal preemptible round-robin scheduler for the RTOS scenario.
 *
 * FreeRTOS is not available here, so this keeps only what a PC sampler and mcuprof care
 * about, under FreeRTOS's names: a task control block whose first member is the saved stack
 * pointer and which holds the task's name in pcTaskName[16], and the global pxCurrentTCB that
 * points at the running task's block. Tasks run in Thread mode on PSP; task_yield() pends
 * PendSV, whose handler saves r4-r11 on the task's stack and switches to the next task.
 * MINIRTOS_SWITCH_FREERTOS_SHAPE (FPU builds) gives PendSV the register protocol of
 * FreeRTOS's Cortex-M4F port instead (minirtos.c).
 *
 * As in FreeRTOS, pxCurrentTCB points at the first task created from then on, long before the
 * scheduler starts; xSchedulerRunning (file-static in minirtos.c, as in FreeRTOS's tasks.c)
 * turns 1 in rtos_start, just before the first task is entered.
 */
#ifndef MINIRTOS_H
#define MINIRTOS_H

#include <stdint.h>
#include "board.h"

#define RTOS_NAME_LEN 16u /* configMAX_TASK_NAME_LEN in FreeRTOS */
#define RTOS_MAX_TASKS 4u
#define RTOS_STACK_FILL 0xA5A5A5A5u /* a task stack's words before it first uses them */

typedef struct tskTaskControlBlock {
    volatile uint32_t *pxTopOfStack; /* must stay first: PendSV_Handler stores here */
    uint32_t uxTaskNumber;
    uint32_t *pxStack;               /* lowest word of the task's stack */
    char pcTaskName[RTOS_NAME_LEN];
} TCB_t;

typedef TCB_t *TaskHandle_t;
typedef long BaseType_t;

extern TCB_t *volatile pxCurrentTCB;

/* Prepare a task: its stack gets an exception frame that "returns" into fn(arg). */
void rtos_task_create(TCB_t *tcb, void (*fn)(void *), void *arg, uint32_t *stack, uint32_t words,
                      const char *name);

/* Start the first created task; never returns. */
__attribute__((noreturn)) void rtos_start(void);

static inline void rtos_yield(void)
{
    SCB_ICSR = SCB_ICSR_PENDSVSET;
    __asm volatile("dsb\n isb" ::: "memory");
}

#endif
