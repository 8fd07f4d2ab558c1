/* boot.c: a bootloader in the shape of the ones vendors' projects carry beside the application
 * (an STM32 IAP bootloader, MCUboot's single-image mode): it starts from the vendor-shaped
 * start-up (startup_vendor.s) at the start of flash, checks the application image that is linked
 * after it (vendor_app_m4 at APP_BASE), moves the vector table there (VTOR, ARMv7-M ARM B3.2.5)
 * and jumps to the application's reset handler with its initial stack pointer (B1.5.3: words 0
 * and 1 of its table). The check is a CRC over the application's flash, PASSES times: time
 * spent in the bootloader's own code, which a profile given the application's ELF only finds
 * outside that ELF (issue 41, docs/stacks.md). */
#include <stdint.h>

#ifndef APP_BASE
#define APP_BASE 0x08004000u
#endif
#ifndef APP_BYTES
#define APP_BYTES 0x1000u
#endif
#ifndef PASSES
#define PASSES 2u
#endif

#define VTOR (*(volatile uint32_t *)0xE000ED08u)

volatile uint32_t boot_crc;

/* CRC-32 (the reflected 0xEDB88320 polynomial), bit by bit: slow on purpose, as a bootloader
 * without a table is. */
__attribute__((noinline)) uint32_t boot_crc32(const uint8_t *bytes, uint32_t count)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < count; i++) {
        crc ^= bytes[i];
        for (int bit = 0; bit < 8; bit++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

__attribute__((noinline)) static void boot_verify(void)
{
    for (uint32_t pass = 0; pass < PASSES; pass++)
        boot_crc ^= boot_crc32((const uint8_t *)APP_BASE, APP_BYTES);
}

/* Never returns: SP from the application's word 0, then a branch to its word 1. */
__attribute__((noreturn)) static void boot_jump(uint32_t base)
{
    const uint32_t *table = (const uint32_t *)base;
    VTOR = base;
    __asm volatile("dsb\n isb" ::: "memory");
    __asm volatile("msr msp, %0\n bx %1" : : "r"(table[0]), "r"(table[1]) : "memory");
    __builtin_unreachable();
}

void SystemInit(void) {}

int main(void)
{
    boot_verify();
    boot_jump(APP_BASE);
}
