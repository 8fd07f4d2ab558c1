/* minizephyr.c: see minizephyr.h. ARMv7-M only (Cortex-M3/M4, no FPU context). */
#include "minizephyr.h"

struct z_kernel _kernel;
volatile bool z_sys_post_kernel;

_Static_assert(offsetof(struct z_kernel, cpus[0].current) == _kernel_offset_to_current, "current");
_Static_assert(offsetof(struct k_thread, callee_saved) == _thread_offset_to_callee_saved, "callee_saved");
_Static_assert(offsetof(struct _callee_saved, psp) == 32, "psp after v1-v8");

#define STR_(x) #x
#define STR(x) STR_(x)

/* Every thread starts here (from the exception frame k_thread_create builds); an entry that
 * returns ends the run, as nothing here aborts threads. */
static void z_thread_entry(k_thread_entry_t entry, void *p1, void *p2, void *p3)
{
    entry(p1, p2, p3);
    con_puts("\nthread returned\n");
    semihost_exit(1);
}

k_tid_t k_thread_create(struct k_thread *thread, uint32_t *stack, uint32_t words, k_thread_entry_t entry,
                        void *p1, void *p2, void *p3)
{
    thread->base.thread_state = 0u;
    thread->base.prio = 0;
    thread->entry = entry;
    thread->name[0] = '\0';

    /* The exception frame (r0-r3, r12, lr, pc, xPSR) that the exception return into the
     * thread unstacks: z_thread_entry(entry, p1, p2, p3). */
    uint32_t *sp = (uint32_t *)((uintptr_t)(stack + words) & ~(uintptr_t)7u);
    *--sp = 0x01000000u;                              /* xPSR: Thumb state */
    *--sp = (uint32_t)(uintptr_t)z_thread_entry & ~1u; /* pc */
    *--sp = 0u;                                       /* lr */
    *--sp = 0u;                                       /* r12 */
    *--sp = (uint32_t)(uintptr_t)p3;
    *--sp = (uint32_t)(uintptr_t)p2;
    *--sp = (uint32_t)(uintptr_t)p1;
    *--sp = (uint32_t)(uintptr_t)entry;               /* r0 */
    /* r4-r11 start as whatever the thread's static storage holds (zero); PSP at the frame. */
    thread->callee_saved.psp = (uint32_t)(uintptr_t)sp;

    /* As CONFIG_THREAD_MONITOR: the newest thread first in _kernel.threads. */
    thread->next_thread = _kernel.threads;
    _kernel.threads = thread;
    return thread;
}

int k_thread_name_set(k_tid_t thread, const char *name)
{
    uint32_t k = 0;
    for (; k + 1u < CONFIG_THREAD_MAX_NAME_LEN && name[k] != '\0'; k++)
        thread->name[k] = name[k];
    thread->name[k] = '\0';
    return 0;
}

void z_dummy_thread_init(struct k_thread *dummy)
{
    dummy->base.thread_state = _THREAD_DUMMY;
    _kernel.cpus[0].current = dummy;
}

/* Called by PendSV_Handler with the outgoing thread's registers saved: the next thread in
 * _kernel.threads, round robin. */
__attribute__((used)) void z_swap_next(void)
{
    struct k_thread *next = _kernel.cpus[0].current->next_thread;
    _kernel.cpus[0].current = next != 0 ? next : _kernel.threads;
}

__attribute__((naked)) void PendSV_Handler(void)
{
    __asm volatile(
        "ldr   r3, =_kernel                                    \n"
        "ldr   r2, [r3, #" STR(_kernel_offset_to_current) "]   \n"
        "add   r2, r2, #" STR(_thread_offset_to_callee_saved) "\n"
        "mrs   r0, psp                                         \n"
        "stmia r2, {r4-r11}                                    \n" /* callee_saved.v1-v8 */
        "str   r0, [r2, #32]                                   \n" /* callee_saved.psp */
        "push  {r3, lr}                                        \n"
        "bl    z_swap_next                                     \n"
        "pop   {r3, lr}                                        \n"
        ".Lrestore_current:                                    \n" /* r3 = &_kernel, lr = EXC_RETURN */
        "ldr   r2, [r3, #" STR(_kernel_offset_to_current) "]   \n"
        "add   r2, r2, #" STR(_thread_offset_to_callee_saved) "\n"
        "ldmia r2, {r4-r11}                                    \n"
        "ldr   r0, [r2, #32]                                   \n"
        "msr   psp, r0                                         \n"
        "isb                                                   \n"
        "bx    lr                                              \n"
        ".ltorg                                                \n");
}

/* svc 0 from z_switch_to_main_thread: enter `current` as if returning from an exception
 * into it, through PendSV_Handler's second half. */
__attribute__((naked)) void SVC_Handler(void)
{
    __asm volatile(
        "mvn   lr, #2                 \n" /* EXC_RETURN 0xFFFFFFFD: Thread mode, PSP */
        "ldr   r3, =_kernel           \n"
        "b     .Lrestore_current      \n"
        ".ltorg                       \n");
}

void z_switch_to_main_thread(struct k_thread *main_thread)
{
    SCB_SHPR3 |= 0xFFu << 16; /* PendSV least urgent: switches only when no handler runs */
    _kernel.cpus[0].current = main_thread;
    __asm volatile("svc 0" ::: "memory");
    for (;;) {
    }
}

/* The end of a time slice: switch once no other handler runs. */
void SysTick_Handler(void)
{
    SCB_ICSR = SCB_ICSR_PENDSVSET;
}

void z_time_slice_start(uint32_t ticks)
{
    systick_start(ticks);
}
