/*
 * calltrace.c: the -finstrument-functions hooks of seed 003. GCC calls
 * __cyg_profile_func_enter(this_fn, call_site) at the entry of every instrumented function and
 * __cyg_profile_func_exit at its exit; each hook writes one record of three 32-bit words:
 *
 *   0x40000000 (entry) or 0x50000000 (exit) | CYCCNT & 0x03FFFFFF
 *   call_site & ~1      the return address in the caller (an EXC_RETURN value for a handler)
 *   this_fn & ~1        the function
 *
 * to ITM stimulus port TRACE_CHANNEL (ARMv7-M ARM C1.7: a read of a port returns 1 when it can
 * take a write). With interrupts masked, so that a handler's records never split a record.
 *
 * CALLTRACE_UART=1, the QEMU test build: QEMU models neither the ITM nor the DWT, so the words go
 * to USART1 instead, 4 bytes each, least significant first, and the time stamp is TIM2 (one
 * count per instruction under -icount shift=0, board.h) in place of CYCCNT. The UART and TIM2 are
 * started by the first record (main's entry comes before main could start them), TIM2 at
 * CALLTRACE_CLOCK_START so that its low 26 bits go round during the run.
 *
 * These hooks and everything they call are never instrumented: no_instrument_function here,
 * and -finstrument-functions-exclude-file-list for board and this file (firmware-ref/CMakeLists.txt).
 */
#include "board.h"

#ifndef TRACE_CHANNEL
#define TRACE_CHANNEL 1u
#endif
#ifndef CALLTRACE_CLOCK_START
#define CALLTRACE_CLOCK_START 0x03FF0000u
#endif

#define NO_TRACE __attribute__((no_instrument_function))

#define ITM_PORT(n) REG32(0xE0000000u + 4u * (n))   /* ITM_STIM0..255 (ARMv7-M ARM C1.7.2) */
#define ITM_TER REG32(0xE0000E00u)                  /* ITM_TER0: ports 0..31 enabled */
#define DWT_CYCCNT REG32(0xE0001004u)               /* DWT cycle counter (C1.8.7) */

#define RECORD_ENTRY 0x40000000u
#define RECORD_EXIT 0x50000000u
#define STAMP_MASK 0x03FFFFFFu

#if defined(CALLTRACE_UART) && CALLTRACE_UART

static int trace_started;

NO_TRACE static int trace_ready(void)
{
    if (!trace_started) {
        con_init();
        clock_start();
        TIM_CNT(TIM2_BASE) = CALLTRACE_CLOCK_START;
        trace_started = 1;
    }
    return 1;
}

NO_TRACE static uint32_t trace_stamp(void)
{
    return clock_now();
}

NO_TRACE static void trace_word(uint32_t word)
{
    for (unsigned i = 0; i < 4u; i++)
        con_putc((char)(word >> (8u * i)));
}

#else

NO_TRACE static int trace_ready(void)
{
    return (ITM_TER & (1u << TRACE_CHANNEL)) != 0u;   /* the seed's check: the port is enabled */
}

NO_TRACE static uint32_t trace_stamp(void)
{
    return DWT_CYCCNT;
}

NO_TRACE static void trace_word(uint32_t word)
{
    while (ITM_PORT(TRACE_CHANNEL) == 0u) {
    }
    ITM_PORT(TRACE_CHANNEL) = word;
}

#endif

NO_TRACE static void trace_record(uint32_t kind, void *this_fn, void *call_site)
{
    uint32_t primask;
    __asm volatile("mrs %0, primask" : "=r"(primask));
    __asm volatile("cpsid i" ::: "memory");
    if (trace_ready()) {
        trace_word((trace_stamp() & STAMP_MASK) | kind);
        trace_word((uint32_t)call_site & ~1u);
        trace_word((uint32_t)this_fn & ~1u);
    }
    __asm volatile("msr primask, %0" ::"r"(primask) : "memory");
}

NO_TRACE void __cyg_profile_func_enter(void *this_fn, void *call_site)
{
    trace_record(RECORD_ENTRY, this_fn, call_site);
}

NO_TRACE void __cyg_profile_func_exit(void *this_fn, void *call_site)
{
    trace_record(RECORD_EXIT, this_fn, call_site);
}
