/* minirtos.c: see minirtos.h. ARMv7-M only (Cortex-M3/M4); built with the FPU (__ARM_FP),
 * it keeps each task's FP context as FreeRTOS's ARM_CM4F port does: the exception return
 * value (EXC_RETURN) is saved with r4-r11, and s16-s31 too when its bit 4 is clear (the task
 * had an active FP context, so the hardware stacked an extended frame; ARMv7-M ARM B1.5.7). */
#include "minirtos.h"

TCB_t *volatile pxCurrentTCB;
static volatile BaseType_t xSchedulerRunning;

/* MSP as the tasks see it in Thread mode, stored by SVC_Handler: svc 0's exception frame stays
 * on the main stack, since the exception returns to the first task's stack instead. A
 * debugger's reading of MSP can be checked against it. */
volatile uint32_t rtos_thread_msp;

static TCB_t *tasks[RTOS_MAX_TASKS];
static uint32_t n_tasks;

static void task_returned(void)
{
    con_puts("\ntask returned\n");
    semihost_exit(1);
}

void rtos_task_create(TCB_t *tcb, void (*fn)(void *), void *arg, uint32_t *stack, uint32_t words,
                      const char *name)
{
    uint32_t k = 0;
    for (; k + 1u < RTOS_NAME_LEN && name[k] != '\0'; k++)
        tcb->pcTaskName[k] = name[k];
    tcb->pcTaskName[k] = '\0';
    tcb->pxStack = stack;
    tcb->uxTaskNumber = n_tasks;

    /* Initial stack, from the top: the 8-word exception frame (r0-r3, r12, lr, pc, xpsr) that
     * the exception return unstacks, below it r4-r11 that PendSV_Handler pops itself. */
    uint32_t *sp = (uint32_t *)((uintptr_t)(stack + words) & ~(uintptr_t)7u);
    *--sp = 0x01000000u;                    /* xPSR: Thumb state */
    *--sp = (uint32_t)(uintptr_t)fn & ~1u;  /* pc */
    *--sp = (uint32_t)(uintptr_t)task_returned; /* lr */
    *--sp = 0u;                             /* r12 */
    *--sp = 0u;                             /* r3 */
    *--sp = 0u;                             /* r2 */
    *--sp = 0u;                             /* r1 */
    *--sp = (uint32_t)(uintptr_t)arg;       /* r0 */
#if defined(__ARM_FP)
    *--sp = 0xFFFFFFFDu;                    /* EXC_RETURN: Thread mode, PSP, basic frame */
#endif
    for (uint32_t r = 0; r < 8u; r++)
        *--sp = 0u;                         /* r11..r4 */
    tcb->pxTopOfStack = sp;

    if (n_tasks < RTOS_MAX_TASKS)
        tasks[n_tasks++] = tcb;
    if (pxCurrentTCB == 0)
        pxCurrentTCB = tcb; /* as FreeRTOS's prvAddNewTaskToReadyList: the first task created */
}

/* Called by PendSV_Handler with the outgoing context saved: pick the next task. PendSV_Handler
 * stores it in pxCurrentTCB itself, next to "msr psp" and while its own return value is
 * held in r12 (not in LR, not on the main stack): a debugger halting between the two stores
 * cannot cross from the handler into either task, so it never sees the kernel's current
 * task and the thread stack disagree (its chain is marked truncated instead). */
__attribute__((used)) TCB_t *rtos_switch_context(void)
{
    uint32_t next = pxCurrentTCB->uxTaskNumber + 1u;
    return tasks[next < n_tasks ? next : 0u];
}

#if defined(__ARM_FP)
/* rtos_tcb_load reads the incoming task's control block (its first word, pxTopOfStack); from
 * rtos_switched on, PSP is that task's stack. The truth plugin's task mode splits its counts
 * there (firmware-ref/truth/truth.c). */
__attribute__((naked)) void PendSV_Handler(void)
{
    __asm volatile(
        "mrs   r0, psp                \n"
        "isb                          \n"
        "ldr   r3, =pxCurrentTCB      \n"
        "ldr   r2, [r3]               \n"
        "tst   lr, #0x10              \n" /* EXC_RETURN bit 4 clear: an extended frame */
        "it    eq                     \n"
        "vstmdbeq r0!, {s16-s31}      \n"
        "stmdb r0!, {r4-r11, lr}      \n"
        "str   r0, [r2]               \n" /* pxCurrentTCB->pxTopOfStack */
        "push  {r3, lr}               \n"
        "bl    rtos_switch_context    \n" /* r0: the next task's control block */
        "pop   {r3, r12}              \n"
        "mov   r2, r0                 \n"
        ".global rtos_tcb_load        \n"
        "rtos_tcb_load:               \n"
        "ldr   r0, [r2]               \n"
        "ldmia r0!, {r4-r11, r12}     \n" /* r12: the incoming task's EXC_RETURN */
        "tst   r12, #0x10             \n"
        "it    eq                     \n"
        "vldmiaeq r0!, {s16-s31}      \n"
        "str   r2, [r3]               \n" /* pxCurrentTCB */
        "msr   psp, r0                \n"
        ".global rtos_switched        \n"
        "rtos_switched:               \n"
        "isb                          \n"
        "bx    r12                    \n"
        ".ltorg                       \n");
}

#else
__attribute__((naked)) void PendSV_Handler(void)
{
    __asm volatile(
        "mrs   r0, psp                \n"
        "ldr   r3, =pxCurrentTCB      \n"
        "ldr   r2, [r3]               \n"
        "stmdb r0!, {r4-r11}          \n" /* finish saving the outgoing context */
        "str   r0, [r2]               \n" /* pxCurrentTCB->pxTopOfStack */
        "push  {r3, lr}               \n"
        "bl    rtos_switch_context    \n" /* r0: the next task's control block */
        "pop   {r3, r12}              \n" /* r12: EXC_RETURN */
        "mov   r2, r0                 \n"
        "ldr   r0, [r2]               \n"
        "ldmia r0!, {r4-r11}          \n"
        "str   r2, [r3]               \n" /* pxCurrentTCB */
        "msr   psp, r0                \n"
        "isb                          \n"
        "bx    r12                    \n"
        ".ltorg                       \n");
}

#endif

/* svc 0 from rtos_start: enter the first task as if returning from an exception into it. */
#if defined(__ARM_FP)
#define RTOS_FIRST_REGISTERS "ldmia r0!, {r4-r11, lr}      \n" /* lr: the EXC_RETURN it was created with */
#define RTOS_FIRST_EXC_RETURN ""
#else
#define RTOS_FIRST_REGISTERS "ldmia r0!, {r4-r11}          \n"
#define RTOS_FIRST_EXC_RETURN "mvn   lr, #2                 \n" /* 0xFFFFFFFD: Thread mode, PSP */
#endif
__attribute__((naked)) void SVC_Handler(void)
{
    __asm volatile(
        "mrs   r0, msp                \n"
        "ldr   r1, =rtos_thread_msp   \n"
        "str   r0, [r1]               \n"
        "ldr   r3, =pxCurrentTCB      \n"
        "ldr   r2, [r3]               \n"
        ".global rtos_first_tcb_load  \n"
        "rtos_first_tcb_load:         \n"
        "ldr   r0, [r2]               \n"
        RTOS_FIRST_REGISTERS
        "msr   psp, r0                \n"
        ".global rtos_first_switched  \n"
        "rtos_first_switched:         \n"
        "isb                          \n"
        RTOS_FIRST_EXC_RETURN
        "bx    lr                     \n"
        ".ltorg                       \n");
}

void rtos_start(void)
{
    SCB_SHPR3 |= 0xFFu << 16; /* PendSV least urgent: switches only when no handler runs */
    pxCurrentTCB = tasks[0];
    xSchedulerRunning = 1;
    __asm volatile("svc 0" ::: "memory");
    for (;;) {
    }
}
