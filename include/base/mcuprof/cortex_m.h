#pragma once
// The Cortex-M debug and trace registers mcuprof reads and writes, one map for every layer (the
// live samplers over OpenOCD, the SWO set-up, the firmware check, the virtual probe's
// simulated core). Sections: the ARMv7-M Architecture Reference Manual (ARM DDI 0403E) and,
// where ARMv8-M adds to it, the ARMv8-M Architecture Reference Manual (ARM DDI 0553).
#include <cstdint>

namespace mcuprof::cortex_m {

// System Control Block and the debug registers in the SCS (DDI 0403 B3.2.2 table B3-4,
// C1.6 table C1-5; DDI 0553 D1.2).
constexpr uint32_t cpuid = 0xE000ED00;   // CPUID Base Register (B3.2.3)
constexpr uint32_t aircr = 0xE000ED0C;   // Application Interrupt and Reset Control (B3.2.6)
constexpr uint32_t dfsr = 0xE000ED30;    // Debug Fault Status Register (C1.6.1)
constexpr uint32_t dhcsr = 0xE000EDF0;   // Debug Halting Control and Status Register (C1.6.2)
constexpr uint32_t dcrsr = 0xE000EDF4;   // Debug Core Register Selector Register (C1.6.3)
constexpr uint32_t dcrdr = 0xE000EDF8;   // Debug Core Register Data Register (C1.6.4)
constexpr uint32_t demcr = 0xE000EDFC;   // Debug Exception and Monitor Control Register (C1.6.5)
// DSCSR, Debug Security Control and Status Register (ARMv8-M with the Security Extension;
// DDI 0553, "DSCSR"): CDS, the current security state (1 Secure); SBRSEL/SBRSELEN choose the
// bank of SP, MSP and PSP that DCRSR's REGSEL 13, 17 and 18 reach.
constexpr uint32_t dscsr = 0xE000EE08;
constexpr uint32_t dscsr_cds = 1u << 16;
constexpr uint32_t dscsr_sbrsel_bits = 0x3;

// DHCSR bits (C1.6.2). Writes are ignored without DBGKEY in bits 31:16.
constexpr uint32_t dbgkey = 0xA05Fu << 16;
constexpr uint32_t c_debugen = 1u << 0;
constexpr uint32_t c_halt = 1u << 1;
constexpr uint32_t c_step = 1u << 2;
constexpr uint32_t c_maskints = 1u << 3;
constexpr uint32_t c_snapstall = 1u << 5;
// The control bits a debugger's halt or resume keeps as it found them: C_DEBUGEN, C_STEP,
// C_MASKINTS, C_SNAPSTALL (C_HALT is the one it sets and clears).
constexpr uint32_t dhcsr_kept_controls = c_debugen | c_step | c_maskints | c_snapstall;
constexpr uint32_t s_regrdy = 1u << 16;
constexpr uint32_t s_halt = 1u << 17;
constexpr uint32_t s_sleep = 1u << 18;
constexpr uint32_t s_lockup = 1u << 19;
constexpr uint32_t s_retire_st = 1u << 24;
constexpr uint32_t s_reset_st = 1u << 25;

// The core registers by number (A2.3.1): the Thumb encodings' register fields, DWARF for the
// Arm architecture's r0-r15, and DCRSR's REGSEL 0-15 all number them alike.
namespace core_reg {
inline constexpr uint32_t r0 = 0, r1 = 1, r2 = 2, r3 = 3, r4 = 4, r5 = 5, r6 = 6, r7 = 7;
inline constexpr uint32_t r8 = 8, r9 = 9, r10 = 10, r11 = 11, r12 = 12;
inline constexpr uint32_t sp = 13, lr = 14, pc = 15;
inline constexpr uint32_t count = 16;
// The bit of register `reg` in a register list (PUSH, POP, LDM, STM: bit n is register n).
constexpr uint32_t bit(uint32_t reg) { return 1u << reg; }
} // namespace core_reg

// DCRSR (C1.6.3): REGSEL and the direction. REGSEL 0-12 are r0-r12, 13 SP, 14 LR, 15 the
// debug return address (the PC), 16 xPSR, 17 MSP, 18 PSP, 20 CONTROL/FAULTMASK/BASEPRI/PRIMASK
// in one word, 33 FPSCR, 64-95 S0-S31 (with the Floating-point Extension).
constexpr uint32_t dcrsr_regwnr = 1u << 16;
constexpr uint32_t dcrsr_regsel_mask = 0x7F;
constexpr uint32_t regsel_sp = core_reg::sp;
constexpr uint32_t regsel_lr = core_reg::lr;
constexpr uint32_t regsel_pc = core_reg::pc;
constexpr uint32_t regsel_xpsr = 16;
constexpr uint32_t regsel_msp = 17;
constexpr uint32_t regsel_psp = 18;
constexpr uint32_t regsel_special = 20;
constexpr uint32_t regsel_fpscr = 33;
constexpr uint32_t regsel_s0 = 64;
constexpr uint32_t regsel_s31 = 95;

// DEMCR bits (C1.6.5): vector catch on reset; TRCENA powers the DWT and the ITM.
constexpr uint32_t vc_corereset = 1u << 0;
constexpr uint32_t trcena = 1u << 24;

// DFSR bits (C1.6.1): why the core halted; write 1 to clear.
constexpr uint32_t dfsr_halted = 1u << 0;   // a halt request (C_HALT or a step)
constexpr uint32_t dfsr_bkpt = 1u << 1;
constexpr uint32_t dfsr_dwttrap = 1u << 2;
constexpr uint32_t dfsr_vcatch = 1u << 3;
constexpr uint32_t dfsr_external = 1u << 4;

// AIRCR (B3.2.6): the key and the reset requests.
constexpr uint32_t vectkey = 0x05FAu << 16;
constexpr uint32_t vectreset = 1u << 0;
constexpr uint32_t sysresetreq = 1u << 2;

// ITM, Instrumentation Trace Macrocell (C1.7): its lock, and TCR's enables.
constexpr uint32_t itm_lar = 0xE0000FB0;
constexpr uint32_t itm_unlock = 0xC5ACCE55;   // the CoreSight lock access key
constexpr uint32_t itm_tcr = 0xE0000E80;
constexpr uint32_t itm_tcr_itmena = 1u << 0;
constexpr uint32_t itm_tcr_syncena = 1u << 2;
constexpr uint32_t itm_tcr_dwtena = 1u << 3;      // TXENA: DWT packets into the ITM stream
constexpr uint32_t itm_trace_bus_id = 1;          // TraceBusID, bits 22:16; non-zero

// DWT, Data Watchpoint and Trace unit (C1.8): CTRL (C1.8.7), CYCCNT, PCSR (C1.8.9: the PC of
// a recently executed instruction, read while the core runs), the comparators.
constexpr uint32_t dwt_ctrl = 0xE0001000;
constexpr uint32_t dwt_cyccnt = 0xE0001004;
constexpr uint32_t dwt_pcsr = 0xE000101C;
constexpr uint32_t dwt_comp0 = 0xE0001020;
constexpr uint32_t dwt_cyccntena = 1u << 0;
constexpr unsigned dwt_postpreset_shift = 1;      // bits 4:1
constexpr unsigned dwt_postinit_shift = 5;        // bits 8:5
constexpr uint32_t dwt_cyctap = 1u << 9;
constexpr unsigned dwt_synctap_shift = 10;        // bits 11:10
constexpr uint32_t dwt_synctap_cyccnt24 = 1;      // a sync packet every 2^24 cycles
constexpr uint32_t dwt_pcsamplena = 1u << 12;
constexpr uint32_t dwt_sampling_fields = 0x00001FFF;   // the fields the SWO set-up writes, bits 12:0

// FPB, Flash Patch and Breakpoint unit (C1.11; FPBv1, as on the Cortex-M3/M4).
constexpr uint32_t fp_ctrl = 0xE0002000;
constexpr uint32_t fp_remap = 0xE0002004;
constexpr uint32_t fp_comp0 = 0xE0002008;
constexpr uint32_t fp_ctrl_enable = 1u << 0;
constexpr uint32_t fp_ctrl_key = 1u << 1;

} // namespace mcuprof::cortex_m
