/* minirtos.c: see minirtos.h. ARMv7-M only (Cortex-M3/M4); built with the FPU (__ARM_FP),
 * it keeps each task's FP context as FreeRTOS's ARM_CM4F port does: the exception return
 * value (EXC_RETURN) is saved with r4-r11, and s16-s31 too when its bit 4 is clear (the task
 * had an active FP context, so the hardware stacked an extended frame; ARMv7-M ARM B1.5.7).
 *
 * Built with MINIRTOS_SWITCH_FREERTOS_SHAPE (FPU builds only), PendSV switches as FreeRTOS's
 * Cortex-M4F port does: EXC_RETURN goes to the task's stack with r4-r11, the main stack holds
 * only the saved stack top (r0) and &pxCurrentTCB (r3) around the call of a C function, which
 * picks the next task and writes pxCurrentTCB itself, with BASEPRI raised around that call.
 * A debugger halted inside that function finds EXC_RETURN nowhere on the main stack. */
#include "minirtos.h"

#if defined(MINIRTOS_SWITCH_FREERTOS_SHAPE) && !defined(__ARM_FP)
#error "MINIRTOS_SWITCH_FREERTOS_SHAPE is the Cortex-M4F switch: build with the FPU"
#endif

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
#if defined(MINIRTOS_SWITCH_FREERTOS_SHAPE)
    for (uint32_t w = 0; w < words; w++)
        stack[w] = RTOS_STACK_FILL; /* what the switch's headroom count looks for */
#endif

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

#if defined(__ARM_FP)
/* Both FPU builds' PendSV save the outgoing task alike: s16-s31 when it had an FP context
 * (EXC_RETURN bit 4 clear: the hardware stacked an extended frame), then r4-r11 and EXC_RETURN
 * on its stack (EXC_RETURN at r0 + 32), the new top in its control block. Leaves r0: that top,
 * r3: &pxCurrentTCB. */
#define RTOS_SAVE_OUTGOING_FP                                                                 \
    "mrs   r0, psp                \n"                                                          \
    "isb                          \n"                                                          \
    "ldr   r3, =pxCurrentTCB      \n"                                                          \
    "ldr   r2, [r3]               \n"                                                          \
    "tst   lr, #0x10              \n"                                                          \
    "it    eq                     \n"                                                          \
    "vstmdbeq r0!, {s16-s31}      \n"                                                          \
    "stmdb r0!, {r4-r11, lr}      \n"                                                          \
    "str   r0, [r2]               \n" /* pxCurrentTCB->pxTopOfStack */
#endif

#if defined(MINIRTOS_SWITCH_FREERTOS_SHAPE)
/* Each task's least headroom seen so far: the words at the bottom of its stack that still hold
 * the fill pattern (as FreeRTOS's stack high-water mark). */
volatile uint32_t rtos_stack_headroom_min[RTOS_MAX_TASKS];

/* Words from the bottom of a suspended task's stack up to the first one it ever wrote, below
 * its saved stack top. */
__attribute__((noinline, used)) uint32_t rtos_stack_headroom(const TCB_t *tcb)
{
    const uint32_t *word = tcb->pxStack;
    const uint32_t *top = (const uint32_t *)tcb->pxTopOfStack;
    uint32_t n = 0;
    while (word + n < top && word[n] == RTOS_STACK_FILL)
        n++;
    return n;
}

/* Called by PendSV_Handler with the outgoing context saved and BASEPRI raised: record the
 * outgoing task's headroom (a stack that ran out ends the run with status 1), pick the next
 * task and make it current. pxCurrentTCB changes here, some instructions before PendSV
 * loads PSP: a halt in between tags the incoming task while the handler's chain still leads
 * into the outgoing one (docs/stacks.md, Limits). */
__attribute__((used)) void rtos_select_next(void)
{
    TCB_t *out = pxCurrentTCB;
    const uint32_t headroom = rtos_stack_headroom(out);
    if (headroom == 0u) {
        con_puts("\nstack overflow\n");
        semihost_exit(1);
    }
    volatile uint32_t *least = &rtos_stack_headroom_min[out->uxTaskNumber % RTOS_MAX_TASKS];
    if (*least == 0u || headroom < *least)
        *least = headroom;
    const uint32_t next = out->uxTaskNumber + 1u;
    pxCurrentTCB = tasks[next < n_tasks ? next : 0u];
}

/* BASEPRI while the next task is picked: masks every exception of priority 0x40 or less
 * urgent (ARMv7-M ARM B1.5.4), SysTick in the FPU scenario, as FreeRTOS masks the interrupts
 * that may use its API (configMAX_SYSCALL_INTERRUPT_PRIORITY). */
#define RTOS_SWITCH_BASEPRI "0x40"

/* rtos_tcb_load reads the incoming task's control block (its first word, pxTopOfStack); from
 * rtos_switched on, PSP is that task's stack (the truth plugin's task mode splits there). */
__attribute__((naked)) void PendSV_Handler(void)
{
    __asm volatile(
        RTOS_SAVE_OUTGOING_FP
        "stmdb sp!, {r0, r3}          \n" /* all the main stack holds across the call */
        "mov   r0, #" RTOS_SWITCH_BASEPRI " \n"
        "msr   basepri, r0            \n"
        "dsb                          \n"
        "isb                          \n"
        "bl    rtos_select_next       \n" /* writes pxCurrentTCB */
        "mov   r0, #0                 \n"
        "msr   basepri, r0            \n"
        "ldmia sp!, {r0, r3}          \n"
        "ldr   r1, [r3]               \n" /* the incoming task's control block */
        ".global rtos_tcb_load        \n"
        "rtos_tcb_load:               \n"
        "ldr   r0, [r1]               \n"
        "ldmia r0!, {r4-r11, lr}      \n" /* lr: the incoming task's EXC_RETURN */
        "tst   lr, #0x10              \n"
        "it    eq                     \n"
        "vldmiaeq r0!, {s16-s31}      \n"
        "msr   psp, r0                \n"
        ".global rtos_switched        \n"
        "rtos_switched:               \n"
        "isb                          \n"
        "bx    lr                     \n"
        ".ltorg                       \n");
}

#else /* minirtos's own switch: EXC_RETURN pushed on the main stack around the call */
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
        RTOS_SAVE_OUTGOING_FP
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
#endif /* MINIRTOS_SWITCH_FREERTOS_SHAPE */

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
