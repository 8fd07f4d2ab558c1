/*
 * board.h: the few STM32F2/F4 and Cortex-M registers the reference firmware touches, and the
 * console, clock and exit helpers (board.c).
 *
 * QEMU's netduino2 (STM32F205, Cortex-M3) and netduinoplus2 (STM32F405, Cortex-M4) place RCC,
 * USART1, TIM2, TIM3 and EXTI at the same addresses (RM0033, RM0090), so one board file serves
 * both. Names follow the reference manuals.
 */
#ifndef BOARD_H
#define BOARD_H

#include <stdint.h>

#define REG32(addr) (*(volatile uint32_t *)(addr))

/* ---- RCC (RM0090 7.3) ---- */
#define RCC_BASE        0x40023800u
#define RCC_APB1ENR     REG32(RCC_BASE + 0x40u)
#define RCC_APB2ENR     REG32(RCC_BASE + 0x44u)
#define RCC_APB1_TIM2EN (1u << 0)
#define RCC_APB1_TIM3EN (1u << 1)
#define RCC_APB1_TIM4EN (1u << 2)
#define RCC_APB2_USART1EN (1u << 4)

/* ---- general-purpose timers TIM2 (32-bit) and TIM3 (16-bit) (RM0090 18.4) ---- */
#define TIM2_BASE       0x40000000u
#define TIM3_BASE       0x40000400u
#define TIM4_BASE       0x40000800u
#define TIM_CR1(t)      REG32((t) + 0x00u)
#define TIM_DIER(t)     REG32((t) + 0x0Cu)
#define TIM_SR(t)       REG32((t) + 0x10u)
#define TIM_EGR(t)      REG32((t) + 0x14u)
#define TIM_CNT(t)      REG32((t) + 0x24u)
#define TIM_PSC(t)      REG32((t) + 0x28u)
#define TIM_ARR(t)      REG32((t) + 0x2Cu)
#define TIM_CR1_CEN     (1u << 0)
#define TIM_DIER_UIE    (1u << 0)
#define TIM_SR_UIF      (1u << 0)
#define TIM_EGR_UG      (1u << 0)

/* ---- USART1 (RM0090 30.6) ---- */
#define USART1_BASE     0x40011000u
#define USART_SR        REG32(USART1_BASE + 0x00u)
#define USART_DR        REG32(USART1_BASE + 0x04u)
#define USART_BRR       REG32(USART1_BASE + 0x08u)
#define USART_CR1       REG32(USART1_BASE + 0x0Cu)
#define USART_SR_TXE    (1u << 7)
#define USART_CR1_UE    (1u << 13)
#define USART_CR1_TE    (1u << 3)

/* ---- interrupt numbers (RM0090 table 61; same on the F205) ---- */
#define IRQ_EXTI0       6u
#define IRQ_TIM3        29u
#define IRQ_TIM4        30u

/* ---- Cortex-M system control space (ARMv7-M ARM B3) ---- */
#define SCB_ICSR        REG32(0xE000ED04u)
#define SCB_ICSR_PENDSVSET (1u << 28)
#define SCB_SHPR3       REG32(0xE000ED20u)   /* bits 23:16 PendSV, 31:24 SysTick priority */
#define SYST_CSR        REG32(0xE000E010u)
#define SYST_RVR        REG32(0xE000E014u)
#define SYST_CVR        REG32(0xE000E018u)
#define SYST_CSR_ENABLE    (1u << 0)
#define SYST_CSR_TICKINT   (1u << 1)
#define SYST_CSR_CLKSOURCE (1u << 2)          /* 1: count the core clock */

/* SysTick interrupting every `ticks` core clocks (ARMv7-M ARM B3.3). */
static inline void systick_start(uint32_t ticks)
{
    SYST_RVR = ticks - 1u;
    SYST_CVR = 0u;
    SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;
}
#define NVIC_ISER0      REG32(0xE000E100u)
#define NVIC_ISPR0      REG32(0xE000E200u)
#define NVIC_IPR_WORD(irq) REG32(0xE000E400u + 4u * ((irq) / 4u))

/* Set an external interrupt's priority with a word access (ARMv6-M allows no byte access). */
static inline void nvic_set_priority(uint32_t irq, uint32_t prio)
{
    uint32_t shift = 8u * (irq % 4u);
    uint32_t v = NVIC_IPR_WORD(irq);
    v &= ~(0xFFu << shift);
    v |= (prio & 0xFFu) << shift;
    NVIC_IPR_WORD(irq) = v;
}

static inline void nvic_enable(uint32_t irq)
{
    NVIC_ISER0 = 1u << irq;
}

/* ---- console on USART1 ---- */
void con_init(void);
void con_putc(char c);
void con_puts(const char *s);
void con_hex(uint32_t value, unsigned digits); /* lowercase, zero-padded */
void con_dec(uint32_t value);

/* ---- instruction clock ----
 * TIM2 runs free from 0 with prescaler 1. QEMU clocks the STM32 timers at 1 GHz and under
 * -icount shift=0 one instruction takes 1 ns, so one TIM2 count is one executed instruction. */
void clock_start(void);
static inline uint32_t clock_now(void)
{
    return TIM_CNT(TIM2_BASE);
}

/* ---- semihosting ---- */
__attribute__((noreturn)) void semihost_exit(int status);

#endif
