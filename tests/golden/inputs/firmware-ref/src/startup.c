/* startup.c: vector table and reset for the STM32F2/F4 (and, built for Cortex-M0, enough to
 * link). Every handler not defined by a scenario falls into unexpected_exception, which says
 * so on the console and ends the run through semihosting, so a fault never hangs a test. */
#include <stdint.h>
#include "board.h"

extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end, __stack_top;
int main(void);

void Reset_Handler(void);
void unexpected_exception(void);

#define WEAK_DEFAULT __attribute__((weak, alias("unexpected_exception")))
void NMI_Handler(void) WEAK_DEFAULT;
void HardFault_Handler(void) WEAK_DEFAULT;
void MemManage_Handler(void) WEAK_DEFAULT;
void BusFault_Handler(void) WEAK_DEFAULT;
void UsageFault_Handler(void) WEAK_DEFAULT;
void SVC_Handler(void) WEAK_DEFAULT;
void DebugMon_Handler(void) WEAK_DEFAULT;
void PendSV_Handler(void) WEAK_DEFAULT;
void SysTick_Handler(void) WEAK_DEFAULT;
void EXTI0_IRQHandler(void) WEAK_DEFAULT;
void TIM3_IRQHandler(void) WEAK_DEFAULT;
void TIM4_IRQHandler(void) WEAK_DEFAULT;

#define N_IRQ 82u /* STM32F405: 82 external interrupts */

typedef void (*vector_t)(void);

__attribute__((section(".vectors"), used)) const vector_t vector_table[16u + N_IRQ] = {
    [0] = (vector_t)(uintptr_t)&__stack_top,
    [1] = Reset_Handler,
    [2] = NMI_Handler,
    [3] = HardFault_Handler,
    [4] = MemManage_Handler,
    [5] = BusFault_Handler,
    [6] = UsageFault_Handler,
    [11] = SVC_Handler,
    [12] = DebugMon_Handler,
    [14] = PendSV_Handler,
    [15] = SysTick_Handler,
    [16u + IRQ_EXTI0] = EXTI0_IRQHandler,
    [16u + IRQ_TIM3] = TIM3_IRQHandler,
    [16u + IRQ_TIM4] = TIM4_IRQHandler,
};

void Reset_Handler(void)
{
    const uint32_t *src = &__data_load;
    for (uint32_t *dst = &__data_start; dst < &__data_end;)
        *dst++ = *src++;
    for (uint32_t *dst = &__bss_start; dst < &__bss_end;)
        *dst++ = 0u;
#if defined(__ARM_FP)
    /* Code built for the FPU: full access to CP10 and CP11 before the first FP instruction
     * (CPACR, ARMv7-M ARM B3.2.20). */
    REG32(0xE000ED88u) |= 0xFu << 20;
    __asm volatile("dsb\n isb" ::: "memory");
#endif
    int status = main();
    semihost_exit(status);
}

void unexpected_exception(void)
{
    uint32_t ipsr;
    __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
    con_puts("\nunexpected exception ");
    con_dec(ipsr & 0x1FFu);
    con_puts("\n");
    semihost_exit(1);
}
