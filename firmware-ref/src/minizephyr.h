/*
 * minizephyr.h: a minimal kernel shaped like Zephyr's, for the Zephyr scenario.
 *
 * Zephyr is not available here, so this keeps only what a debugger's thread awareness reads,
 * under Zephyr's names and in Zephyr's shape: one struct z_kernel _kernel whose cpus[0].current
 * points at the running struct k_thread; a thread keeps its callee-saved registers and PSP in
 * callee_saved (not on its stack) and, with CONFIG_THREAD_NAME, its name in name[]; during
 * start-up `current` points at a dummy thread on the start-up stack, and z_sys_post_kernel
 * turns true as the first thing the main thread does (bg_thread_main). Threads run in Thread
 * mode on PSP; PendSV switches round-robin, pended by k_yield() or by SysTick at the end of
 * a time slice.
 */
#ifndef MINIZEPHYR_H
#define MINIZEPHYR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "board.h"

#define CONFIG_THREAD_NAME 1
#define CONFIG_THREAD_MAX_NAME_LEN 32
#define CONFIG_MP_MAX_NUM_CPUS 1

#define _THREAD_DUMMY (1u << 0) /* thread_state: the start-up placeholder */

typedef struct _dnode {
    struct _dnode *next, *prev;
} sys_dnode_t;

struct _thread_base {
    sys_dnode_t qnode_dlist;
    void *pended_on;
    uint8_t user_options;
    uint8_t thread_state;
    union {
        struct {
            int8_t prio;
            uint8_t sched_locked;
        };
        uint16_t preempt;
    };
};

/* r4-r11 as Zephyr's ARM port names them (v1-v8), then the thread's PSP. */
struct _callee_saved {
    uint32_t v1, v2, v3, v4, v5, v6, v7, v8;
    uint32_t psp;
};

typedef void (*k_thread_entry_t)(void *p1, void *p2, void *p3);

struct k_thread {
    struct _thread_base base;
    struct _callee_saved callee_saved;
    k_thread_entry_t entry;
    struct k_thread *next_thread; /* CONFIG_THREAD_MONITOR: every thread, in _kernel.threads */
    char name[CONFIG_THREAD_MAX_NAME_LEN];
};
typedef struct k_thread *k_tid_t;

struct _cpu {
    uint32_t nested;
    char *irq_stack;
    struct k_thread *current;
    struct k_thread *idle_thread;
};

struct _ready_q {
    struct k_thread *cache;
};

struct z_kernel {
    struct _cpu cpus[CONFIG_MP_MAX_NUM_CPUS];
    struct _ready_q ready_q;
    struct k_thread *threads;
};

extern struct z_kernel _kernel;
extern volatile bool z_sys_post_kernel;

/* The offsets the context switch's assembly uses (Zephyr generates these into offsets.h);
 * minizephyr.c checks them with _Static_assert. */
#define _kernel_offset_to_current 8
#define _thread_offset_to_callee_saved 16

/* Make `thread` ready to run entry(p1, p2, p3) on its stack of `words` words. */
k_tid_t k_thread_create(struct k_thread *thread, uint32_t *stack, uint32_t words, k_thread_entry_t entry,
                        void *p1, void *p2, void *p3);
int k_thread_name_set(k_tid_t thread, const char *name);

/* The start-up placeholder `current` points at until the first switch. */
void z_dummy_thread_init(struct k_thread *dummy);

/* Enter `main_thread`, whose entry must set z_sys_post_kernel first; never returns. */
__attribute__((noreturn)) void z_switch_to_main_thread(struct k_thread *main_thread);

/* Time slicing: SysTick pends a switch every `ticks` core clocks. */
void z_time_slice_start(uint32_t ticks);

static inline void k_yield(void)
{
    SCB_ICSR = SCB_ICSR_PENDSVSET;
    __asm volatile("dsb\n isb" ::: "memory");
}

#endif
