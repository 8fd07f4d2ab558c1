/* main.c of the vendor-shaped reference firmware (issue 41, docs/firmware-ref.md): C code as a
 * generated project has it around startup_vendor.s, with the shapes users' firmware brings:
 *   - ram_checksum, in .RamFunc inside .data (the HAL's __RAM_FUNC, copied with the data), and
 *     ram_scale in an output section of its own, .ramfunc (an M7's ITCM code, Zephyr's
 *     __ramfunc): both run from SRAM, both copied by the start-up code;
 *   - asm_mix and asm_copy from helpers.s, assembly without call-frame information, one with a
 *     frame that calls mix_step, one a leaf;
 *   - SysTick_Handler in C over all of it.
 * The run ends through semihosting after ROUNDS passes (0: never; a plain number, for #if). Built by GCC and clang
 * (vendor.cmake). */
#include <stdint.h>

#ifndef ROUNDS
#define ROUNDS 400
#endif
#ifndef TICKS
#define TICKS 3360u /* SysTick reload: about 20 000 instructions between interrupts on netduinoplus2 */
#endif

#define REG32(addr) (*(volatile uint32_t *)(addr))
#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)
#define SYST_CVR REG32(0xE000E018u)
#define CPACR    REG32(0xE000ED88u)

#define WORDS 64u

uint32_t samples_in[WORDS] = {1u, 2u, 3u, 5u, 8u, 13u, 21u, 34u};
uint32_t samples_out[WORDS];
volatile uint32_t sink;
volatile uint32_t ticks;

uint32_t asm_mix(const uint32_t *words, uint32_t count);
void asm_copy(uint32_t *dst, const uint32_t *src, uint32_t words);

/* ARM semihosting SYS_EXIT (0x18), reason ADP_Stopped_ApplicationExit: QEMU exits with 0. */
__attribute__((unused)) static void exit_run(void)
{
    register uint32_t op __asm__("r0") = 0x18u;
    register uint32_t reason __asm__("r1") = 0x20026u;
    for (;;)
        __asm volatile("bkpt 0xab" : : "r"(op), "r"(reason) : "memory");
}

/* Called by asm_mix for every word: a leaf in C. */
__attribute__((noinline)) uint32_t mix_step(uint32_t word)
{
    for (uint32_t i = 0; i < 8u; i++)
        word = (word ^ (word << 7)) + 0x9E3779B9u;
    return word;
}

__attribute__((noinline, section(".RamFunc"))) uint32_t ram_checksum(const uint32_t *words, uint32_t count)
{
    uint32_t sum = 0x12345678u;
    for (uint32_t i = 0; i < count; i++)
        sum = (sum << 5 | sum >> 27) ^ words[i];
    return sum;
}

__attribute__((noinline, section(".ramfunc"))) void ram_scale(uint32_t *words, uint32_t count, uint32_t factor)
{
    for (uint32_t i = 0; i < count; i++)
        words[i] = words[i] * factor + i;
}

__attribute__((noinline)) void filter_block(void)
{
    uint32_t acc = 0;
    for (uint32_t i = 0; i < WORDS; i++) {
        acc = acc - (acc >> 3) + samples_in[i];
        samples_out[i] = acc;
    }
}

__attribute__((noinline)) static void tick_work(void)
{
    uint32_t x = ticks;
    for (uint32_t i = 0; i < 40u; i++)
        x = x * 1664525u + 1013904223u;
    sink = x;
}

void SysTick_Handler(void)
{
    ticks++;
    tick_work();
}

void SystemInit(void)
{
#if defined(__ARM_FP)
    CPACR |= 0xFu << 20; /* CP10, CP11: full access before any FP instruction (ARMv7-M ARM B3.2.20) */
    __asm volatile("dsb\n isb" ::: "memory");
#endif
    SYST_RVR = TICKS - 1u;
    SYST_CVR = 0u;
    SYST_CSR = 7u; /* ENABLE | TICKINT | CLKSOURCE (the core clock) */
}

static void one_round(void)
{
    filter_block();
    sink += ram_checksum(samples_out, WORDS);
    ram_scale(samples_in, WORDS, 3u);
    sink += asm_mix(samples_out, 16u);
    asm_copy(samples_out, samples_in, WORDS);
}

int main(void)
{
#if ROUNDS == 0
    for (;;)
        one_round();
#else
    for (uint32_t round = 0; round < ROUNDS; round++)
        one_round();
    exit_run();
    return 0;
#endif
}
