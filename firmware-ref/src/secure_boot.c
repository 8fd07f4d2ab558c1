/*
 * secure_boot.c: our own Secure boot for mps2-an505 (Cortex-M33 with the Security Extension),
 * in the shape of TF-M's or a vendor's: it makes the Non-secure application's memory
 * Non-secure, opens a non-secure-callable entry, and hands over to the application (scen_arch.c
 * built with ARCH_NONSECURE) through NSVTOR and BLXNS. Compiled with -mcmse.
 *
 * The memory map and the security controllers are those of AN505 (ARM DAI 0505) as QEMU 7.2
 * models them (hw/arm/mps2-tz.c, armsse.c): the IDAU makes addresses with bit 28 set Secure;
 * each SSRAM sits behind a Memory Protection Controller whose blocks start Secure.
 */
#include <arm_cmse.h>
#include <stdint.h>

#define REG32(addr) (*(volatile uint32_t *)(addr))

/* SSRAM3's MPC (AN505 table 3-5): CTRL bit 8 auto-increments BLK_IDX on each BLK_LUT write;
 * a LUT bit set makes its block Non-secure. */
#define MPC_SSRAM3      0x58009000u
#define MPC_CTRL        REG32(MPC_SSRAM3 + 0x00u)
#define MPC_BLK_MAX     REG32(MPC_SSRAM3 + 0x10u)
#define MPC_BLK_IDX     REG32(MPC_SSRAM3 + 0x18u)
#define MPC_BLK_LUT     REG32(MPC_SSRAM3 + 0x1Cu)
/* The Secure Privilege Control block's NSCCFG: CODENSC lets the IDAU mark the Secure code
 * region 0x10000000-0x1FFFFFFF non-secure-callable where the SAU says so. */
#define SPCTRL_NSCCFG   REG32(0x50080014u)
/* The SAU (ARMv8-M ARM, "Security Attribution Unit"): RLAR bit 1 NSC, bit 0 ENABLE. */
#define SAU_CTRL        REG32(0xE000EDD0u)
#define SAU_RNR         REG32(0xE000EDD8u)
#define SAU_RBAR        REG32(0xE000EDDCu)
#define SAU_RLAR        REG32(0xE000EDE0u)
#define NSACR           REG32(0xE000ED8Cu)   /* bits 10, 11: CP10, CP11 for the Non-secure state */
#define VTOR_NS         REG32(0xE002ED08u)   /* the Non-secure SCB through its alias */

extern uint32_t __ns_start, __ns_end, __nsc_start, __nsc_end;
extern void (*const ns_vector_table[16])(void);

static void sau_region(uint32_t number, uint32_t start, uint32_t end, int nsc)
{
    SAU_RNR = number;
    SAU_RBAR = start & ~0x1Fu;
    SAU_RLAR = ((end - 1u) & ~0x1Fu) | (nsc ? 2u : 0u) | 1u;
}

static inline __attribute__((always_inline)) void secure_work(uint32_t n)
{
    static volatile uint32_t secure_sink;
    for (uint32_t i = 0; i < n; i++)
        secure_sink = secure_sink + i;
}

/* The Secure work behind the non-secure-callable entry below. */
__attribute__((noinline, used)) uint32_t secure_scramble(uint32_t value)
{
    secure_work(12u);
    return (value * 2654435761u) ^ (value >> 13);
}

/* The entry, in the NSC region (.nsc_entries): SG, then the call, and BXNS back to the
 * Non-secure caller (SG cleared LR's bit 0 to say the call came from there). r0 passes the
 * argument and the result. Written out rather than with -mcmse's cmse_nonsecure_entry: ld
 * (2.40) lays out its own veneers (.gnu.sgstubs) after it has evaluated the symbols that would
 * bound the NSC region, and resolves a call from the same link past the veneer. */
__asm__(
    "    .section .nsc_entries, \"ax\", %progbits\n"
    "    .global secure_scramble_entry\n"
    "    .type secure_scramble_entry, %function\n"
    "    .thumb_func\n"
    "secure_scramble_entry:\n"
    "    .cfi_startproc\n"
    "    sg\n"
    "    push {r4, lr}\n"
    "    .cfi_def_cfa_offset 8\n"
    "    .cfi_offset r4, -8\n"
    "    .cfi_offset lr, -4\n"
    "    bl secure_scramble\n"
    "    pop {r4, lr}\n"
    "    .cfi_def_cfa_offset 0\n"
    "    bxns lr\n"
    "    .cfi_endproc\n"
    "    .size secure_scramble_entry, . - secure_scramble_entry\n"
    "    .text\n");

typedef void __attribute__((cmse_nonsecure_call)) nonsecure_entry(void);

int main(void)
{
    MPC_CTRL |= 1u << 8;
    MPC_BLK_IDX = 0u;
    for (uint32_t i = 0; i <= MPC_BLK_MAX; i++)
        MPC_BLK_LUT = 0xFFFFFFFFu;
    SPCTRL_NSCCFG = 1u;
    sau_region(0, (uint32_t)&__ns_start, (uint32_t)&__ns_end, 0);
    sau_region(1, (uint32_t)&__nsc_start, (uint32_t)&__nsc_end, 1);
    SAU_CTRL = 1u;
    NSACR |= (1u << 10) | (1u << 11);
    VTOR_NS = (uint32_t)ns_vector_table;
    __asm volatile("msr msp_ns, %0\n dsb\n isb" : : "r"(ns_vector_table[0]) : "memory");
    nonsecure_entry *entry = (nonsecure_entry *)cmse_nsfptr_create(ns_vector_table[1]);
    entry();   /* the application ends the run itself (semihosting) */
    return 0;
}
