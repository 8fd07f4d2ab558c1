/* board.c: console on USART1, the TIM2 instruction clock and the semihosting exit. Kept in its
 * own translation unit so that none of it is inlined into the scenarios' measured code. */
#include "board.h"

void con_init(void)
{
    RCC_APB2ENR |= RCC_APB2_USART1EN;
    USART_BRR = 0x2D9u;                  /* 115200 baud at 84 MHz; QEMU ignores the rate */
    USART_CR1 = USART_CR1_UE | USART_CR1_TE;
}

void con_putc(char c)
{
    while ((USART_SR & USART_SR_TXE) == 0u) {
    }
    USART_DR = (uint8_t)c;
}

void con_puts(const char *s)
{
    while (*s != '\0')
        con_putc(*s++);
}

void con_hex(uint32_t value, unsigned digits)
{
    static const char hexdigits[] = "0123456789abcdef";
    while (digits-- > 0u)
        con_putc(hexdigits[(value >> (4u * digits)) & 0xFu]);
}

void con_dec(uint32_t value)
{
    char buf[10];
    unsigned n = 0;
    do {
        buf[n++] = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0u);
    while (n > 0u)
        con_putc(buf[--n]);
}

void clock_start(void)
{
    RCC_APB1ENR |= RCC_APB1_TIM2EN;
    TIM_CR1(TIM2_BASE) = 0u;
    TIM_PSC(TIM2_BASE) = 0u;
    TIM_ARR(TIM2_BASE) = 0xFFFFFFFFu;
    TIM_EGR(TIM2_BASE) = TIM_EGR_UG;     /* load the prescaler now */
    TIM_CNT(TIM2_BASE) = 0u;
    TIM_CR1(TIM2_BASE) = TIM_CR1_CEN;
}

/* ARM semihosting SYS_EXIT (0x18). With a 32-bit target the argument in r1 is the reason code
 * itself: ADP_Stopped_ApplicationExit (0x20026) makes QEMU exit with status 0, any other reason with
 * status 1 (QEMU 7.2 target/arm/arm-semi.c). */
void semihost_exit(int status)
{
    register uint32_t op __asm__("r0") = 0x18u;
    register uint32_t reason __asm__("r1") = (status == 0) ? 0x20026u : 0x20023u; /* ApplicationExit / RunTimeErrorUnknown */
    for (;;)
        __asm volatile("bkpt 0xab" : : "r"(op), "r"(reason) : "memory");
}
