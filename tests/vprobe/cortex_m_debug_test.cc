#include <doctest/doctest.h>

#include <algorithm>

#include "mcuprof/vprobe/cortex_m_debug.h"
#include "mcuprof/vprobe/rom_table.h"
#include "vprobe_test_support.h"

using namespace mcuprof::vprobe;
using namespace mcuprof::vprobe::cortex_m;
using vprobe_test::FakeTarget;

namespace {

struct Fixture {
    FakeTarget target;
    double clock = 100.0;
    CortexMDebug debug{target, CortexMDebug::Options{1e6, [this] { return clock; }}};

    uint32_t rd(uint32_t address, unsigned size = 4)
    {
        uint32_t value = 0;
        REQUIRE(debug.read(address, size, value));
        return value;
    }
    void wr(uint32_t address, uint32_t value, unsigned size = 4) { REQUIRE(debug.write(address, size, value)); }
    void halt() { wr(dhcsr, dbgkey | c_debugen | c_halt); }
};

} // namespace

TEST_CASE("cortex-m: DHCSR needs DBGKEY; C_HALT halts, clearing it resumes; S_HALT follows")
{
    Fixture f;
    CHECK((f.rd(dhcsr) & s_halt) == 0);
    f.wr(dhcsr, c_debugen | c_halt);   // no key: ignored
    CHECK_FALSE(f.target.halted);
    f.halt();
    CHECK(f.target.halted);
    const uint32_t halted = f.rd(dhcsr);
    CHECK((halted & (s_halt | c_halt | c_debugen)) == (s_halt | c_halt | c_debugen));
    CHECK((f.rd(dfsr) & dfsr_halted) != 0);
    f.wr(dfsr, dfsr_halted);           // write 1 to clear
    CHECK(f.rd(dfsr) == 0);
    f.wr(dhcsr, dbgkey | c_debugen);
    CHECK_FALSE(f.target.halted);
    CHECK((f.rd(dhcsr) & (s_halt | c_halt)) == 0);
}

TEST_CASE("cortex-m: S_RESET_ST and S_RETIRE_ST are sticky until read")
{
    Fixture f;
    CHECK((f.rd(dhcsr) & s_reset_st) != 0);   // the power-on reset
    CHECK((f.rd(dhcsr) & s_reset_st) == 0);
    f.halt();
    f.rd(dhcsr);
    CHECK((f.rd(dhcsr) & s_retire_st) == 0);   // halted: nothing retires
    f.wr(dhcsr, dbgkey | c_debugen | c_step | c_maskints);
    CHECK(f.target.log.back() == "step");
    CHECK(f.target.halted);
    const uint32_t after_step = f.rd(dhcsr);
    CHECK((after_step & s_retire_st) != 0);
    CHECK((after_step & s_halt) != 0);
    CHECK((f.rd(dhcsr) & s_retire_st) == 0);
}

TEST_CASE("cortex-m: DCRSR/DCRDR move registers by REGSEL, S_REGRDY says done")
{
    Fixture f;
    f.target.registers["r7"] = 0x77;
    f.target.registers["d1"] = 0x3FF0000040490FDBull;   // S2 = low half, S3 = high half
    f.target.registers["fpscr"] = 0x03000000;
    f.halt();
    auto read_reg = [&](uint32_t regsel) {
        f.wr(dcrsr, regsel);
        CHECK((f.rd(dhcsr) & s_regrdy) != 0);
        return f.rd(dcrdr);
    };
    CHECK(read_reg(7) == 0x77);
    CHECK(read_reg(13) == 0x20001000);   // SP
    CHECK(read_reg(15) == 0x08000100);   // DebugReturnAddress
    CHECK(read_reg(16) == 0x01000000);   // xPSR
    CHECK(read_reg(17) == 0x20001000);   // MSP: the current SP where the target has no MSP
    CHECK(read_reg(20) == 0);            // CONTROL/FAULTMASK/BASEPRI/PRIMASK: none here
    CHECK(read_reg(33) == 0x03000000);   // FPSCR
    CHECK(read_reg(64 + 2) == 0x40490FDB);
    CHECK(read_reg(64 + 3) == 0x3FF00000);

    f.wr(dcrdr, 0x08000400);
    f.wr(dcrsr, dcrsr_regwnr | 15);
    CHECK(f.target.registers["pc"] == 0x08000400);
    f.wr(dcrdr, 0xAABBCCDD);
    f.wr(dcrsr, dcrsr_regwnr | (64 + 3));
    CHECK(f.target.registers["d1"] == 0xAABBCCDD40490FDBull);
    f.target.registers["primask"] = 1;
    f.target.registers["control"] = 2;
    CHECK(read_reg(20) == 0x02000001);
}

TEST_CASE("cortex-m: MSP, PSP and the special word by the target's other means where it describes none")
{
    Fixture f;
    // A task on PSP: SP is PSP, CONTROL.SPSEL set, as the target reports them at this halt.
    f.target.registers["sp"] = 0x20000800;
    f.target.special = {{"msp", 0x20000400}, {"psp", 0x20000800}, {"control", 2},
                        {"primask", 1},      {"basepri", 0x40},   {"faultmask", 0}};
    f.halt();
    auto read_reg = [&](uint32_t regsel) {
        f.wr(dcrsr, regsel);
        return f.rd(dcrdr);
    };
    CHECK(read_reg(13) == 0x20000800);
    CHECK(read_reg(17) == 0x20000400);
    CHECK(read_reg(18) == 0x20000800);
    CHECK(read_reg(20) == 0x02004001);

    f.wr(dcrdr, 0x20000700);
    f.wr(dcrsr, dcrsr_regwnr | 18);
    CHECK(f.target.special["psp"] == 0x20000700);
    CHECK(f.target.registers["sp"] == 0x20000800);   // written by the target's means, not as SP
    // The special word: only the byte that changed is written.
    f.wr(dcrdr, 0x02004000);
    f.wr(dcrsr, dcrsr_regwnr | 20);
    CHECK(f.target.special["primask"] == 0);
    CHECK(std::count(f.target.log.begin(), f.target.log.end(), "write primask") == 1);
    CHECK(std::count(f.target.log.begin(), f.target.log.end(), "write control") == 0);
}

TEST_CASE("cortex-m: a register transfer while running does nothing, S_REGRDY stays 0")
{
    Fixture f;
    f.wr(dcrsr, 15);
    CHECK((f.rd(dhcsr) & s_regrdy) == 0);
    CHECK(f.debug.register_transfers() == 0);
}

TEST_CASE("cortex-m: DWT_PCSR is the running PC, 0xFFFFFFFF halted")
{
    Fixture f;
    CHECK(f.rd(dwt_pcsr) == 0x08000200);
    f.target.running_pc = 0x08000222;
    CHECK(f.rd(dwt_pcsr) == 0x08000222);
    f.halt();
    CHECK(f.rd(dwt_pcsr) == 0xFFFFFFFF);
    CHECK(f.debug.pc_samples() == 2);
    CHECK((f.rd(dwt_ctrl) >> 28) == 4);   // NUMCOMP
}

TEST_CASE("cortex-m: with a published PC (the truth plugin's PC file) DWT_PCSR reads it without halting")
{
    FakeTarget target;
    std::vector<unsigned> asked;
    std::optional<uint32_t> published = 0x08000310;
    CortexMDebug::Options options{1e6, [] { return 0.0; }};
    options.running_pc = [&](unsigned core) {
        asked.push_back(core);
        return published;
    };
    options.core = 1;   // the second core's AP: its own slot
    CortexMDebug debug{target, options};
    uint32_t value = 0;
    REQUIRE(debug.read(dwt_pcsr, 4, value));
    CHECK(value == 0x08000310);
    published = 0x08000312;
    REQUIRE(debug.read(dwt_pcsr, 4, value));
    CHECK(value == 0x08000312);
    CHECK(asked == std::vector<unsigned>{1, 1});
    CHECK(target.pc_halts == 0);    // the target was never stopped for a sample
    CHECK(target.let_runs == 2);    // a core held for accesses is let run first
    CHECK(debug.pc_samples() == 2);
    // Before the vCPU's first instruction there is no recent one.
    published.reset();
    REQUIRE(debug.read(dwt_pcsr, 4, value));
    CHECK(value == 0xFFFFFFFF);
    // Halted: 0xFFFFFFFF, whatever the slot holds (DDI 0403: Debug state).
    published = 0x08000400;
    REQUIRE(debug.write(dhcsr, 4, dbgkey | c_debugen | c_halt));
    REQUIRE(debug.read(dwt_pcsr, 4, value));
    CHECK(value == 0xFFFFFFFF);
    CHECK(asked.size() == 3);
    CHECK(debug.pc_samples() == 2);
}

TEST_CASE("cortex-m: a part without the DWT (--no-dwt): its registers read 0 and ignore writes, none in the ROM table")
{
    FakeTarget target;
    CortexMDebug::Options options{1e6, [] { return 0.0; }};
    options.dwt = false;
    CortexMDebug debug{target, options};
    auto rd = [&](uint32_t address) {
        uint32_t value = 1;
        REQUIRE(debug.read(address, 4, value));
        return value;
    };
    CHECK(rd(dwt_pcsr) == 0);
    CHECK(rd(dwt_ctrl) == 0);                 // NUMCOMP 0: OpenOCD sees no comparators
    CHECK(rd(0xE0001FE0) == 0);               // PIDR0: no component there
    REQUIRE(debug.write(demcr, 4, trcena));
    REQUIRE(debug.write(dwt_ctrl, 4, dwt_cyccntena));
    REQUIRE(debug.write(dwt_comp0, 4, 0x20000000));
    CHECK(rd(dwt_ctrl) == 0);
    CHECK(rd(dwt_cyccnt) == 0);
    CHECK(rd(dwt_comp0) == 0);
    CHECK(rd(0xE00FF004) == 0xFFF02002);      // the ROM table's DWT entry: not present
    CHECK(rd(0xE00FF008) == 0xFFF03003);      // the FPB is
    REQUIRE(debug.write(dhcsr, 4, dbgkey | c_debugen | c_halt));
    CHECK(rd(dwt_pcsr) == 0);                 // halted too
    CHECK(debug.pc_samples() == 0);
    CHECK(target.pc_halts == 0);              // never a halt for a sample
}

TEST_CASE("cortex-m: every core's DWT has DWT_PCSR, the ARMv6-M and ARMv8-M Baseline ones too")
{
    // CPUID values from the cores' Technical Reference Manuals: implementer 0x41, the
    // architecture in [19:16] (0xC ARMv6-M, 0xF otherwise), PARTNO in [15:4]. The Cortex-M0,
    // M0+ and M23 TRMs (DDI 0432C 6.1.3, DDI 0484C 7.1.3, DDI 0550C 7.1.3): a processor that
    // has the DWT has DWT_PCSR; the ARMv6-M ARM (DDI 0419C C1.7.2) leaves it to the
    // implementation, and --no-dwt models the part without it.
    const std::pair<const char*, uint32_t> cores[] = {
        {"Cortex-M0 (ARMv6-M)", 0x410CC200},  {"Cortex-M0+ (ARMv6-M)", 0x410CC601},
        {"Cortex-M23 (ARMv8-M Baseline)", 0x411CD200}, {"Cortex-M3", 0x412FC231},
        {"Cortex-M7", 0x411FC272},             {"Cortex-M33 (ARMv8-M Mainline)", 0x410FD213},
        {"Cortex-M55 (ARMv8.1-M)", 0x410FD220},
    };
    for (const auto& [name, id] : cores)
        for (bool dwt : {true, false}) {
            CAPTURE(name);
            CAPTURE(dwt);
            FakeTarget target;
            target.map(cpuid, 4);
            for (uint32_t i = 0; i < 4; ++i)
                target.memory[cpuid + i] = uint8_t(id >> (8 * i));
            CortexMDebug::Options options{1e6, [] { return 0.0; }};
            options.dwt = dwt;
            CortexMDebug debug{target, options};
            uint32_t value = 0;
            REQUIRE(debug.read(cpuid, 4, value));
            CHECK(value == id);
            REQUIRE(debug.read(dwt_pcsr, 4, value));
            CHECK(value == (dwt ? 0x08000200u : 0u));   // the fake's running PC
            CHECK(debug.pc_samples() == (dwt ? 1u : 0u));
        }
}

TEST_CASE("cortex-m: CYCCNT counts running time at the core clock, with CYCCNTENA and TRCENA")
{
    Fixture f;   // 1 MHz
    f.wr(demcr, trcena);
    f.wr(dwt_cyccnt, 0);
    f.wr(dwt_ctrl, dwt_cyccntena);
    f.clock += 0.5;
    CHECK(f.rd(dwt_cyccnt) == 500000);
    f.halt();
    f.clock += 1.0;   // halted: no counting
    CHECK(f.rd(dwt_cyccnt) == 500000);
    f.wr(dhcsr, dbgkey | c_debugen);
    f.clock += 0.25;
    CHECK(f.rd(dwt_cyccnt) == 750000);
    f.wr(dwt_ctrl, 0);
    f.clock += 1.0;
    CHECK(f.rd(dwt_cyccnt) == 750000);
}

TEST_CASE("cortex-m: FPB code comparators become the target's breakpoints")
{
    Fixture f;
    CHECK(((f.rd(fp_ctrl) >> 4) & 0xF) == 6);   // NUM_CODE
    CHECK(((f.rd(fp_ctrl) >> 8) & 0xF) == 2);   // NUM_LIT
    f.wr(fp_comp0, 0x08000350 | (1u << 30) | 1);       // lower halfword of 0x08000350
    f.wr(fp_comp0 + 4, 0x08000350 | (2u << 30) | 1);   // upper halfword: 0x08000352
    CHECK(f.target.breakpoints.empty());                // the FPB is off
    f.wr(fp_ctrl, fp_ctrl_enable);                      // no KEY: ignored
    CHECK(f.target.breakpoints.empty());
    f.wr(fp_ctrl, fp_ctrl_key | fp_ctrl_enable);
    CHECK(f.target.breakpoints == std::set<uint32_t>{0x08000350, 0x08000352});
    f.wr(fp_comp0, 0);
    CHECK(f.target.breakpoints == std::set<uint32_t>{0x08000352});

    // The target stops by itself at a breakpoint: the next DHCSR read sees it, DFSR says BKPT.
    f.wr(dhcsr, dbgkey | c_debugen);
    f.target.stops_by_itself = true;
    CHECK((f.rd(dhcsr) & s_halt) != 0);
    CHECK((f.rd(dfsr) & dfsr_bkpt) != 0);
}

TEST_CASE("cortex-m: AIRCR SYSRESETREQ resets the system, halting it with VC_CORERESET")
{
    Fixture f;
    f.rd(dhcsr);   // consume the power-on S_RESET_ST
    f.wr(aircr, 0x1234'0000u | sysresetreq);   // wrong VECTKEY: ignored
    CHECK(f.target.resets == 0);
    f.wr(aircr, vectkey | sysresetreq);
    CHECK(f.target.log.back() == "reset run");
    CHECK((f.rd(dhcsr) & s_reset_st) != 0);
    f.wr(dhcsr, dbgkey | c_debugen);
    f.wr(demcr, vc_corereset);
    f.wr(aircr, vectkey | sysresetreq);
    CHECK(f.target.log.back() == "reset halt");
    CHECK((f.rd(dhcsr) & s_halt) != 0);
    CHECK((f.rd(dfsr) & dfsr_vcatch) != 0);
    // Other AIRCR writes with the key go to the target (PRIGROUP).
    f.target.map(aircr, 4);
    f.wr(aircr, vectkey | 0x300);
    CHECK(f.target.memory[aircr + 1] == 0x03);
}

TEST_CASE("cortex-m: the ROM table lists SCS, DWT, FPB, ITM; ID registers name ARM parts")
{
    Fixture f;
    CHECK(f.rd(0xE00FF000) == 0xFFF0F003);   // SCS at 0xE000E000
    CHECK(f.rd(0xE00FF004) == 0xFFF02003);   // DWT at 0xE0001000
    CHECK(f.rd(0xE00FF008) == 0xFFF03003);   // FPB at 0xE0002000
    CHECK(f.rd(0xE00FF00C) == 0xFFF01003);   // ITM at 0xE0000000
    CHECK(f.rd(0xE00FF010) == 0xFFF41002);   // TPIU: not present
    CHECK(f.rd(0xE00FF018) == 0);            // end
    CHECK(f.rd(0xE00FFFCC) == 1);            // MEMTYPE: system memory
    // CIDR0-3 of the ROM table: 0x0D 0x10 0x05 0xB1 (class 1); of the SCS: class 0xE.
    CHECK(f.rd(0xE00FFFF0) == 0x0D);
    CHECK(f.rd(0xE00FFFF4) == 0x10);
    CHECK(f.rd(0xE000EFF4) == 0xE0);
    // PIDR0-2 of the DWT: part 0x002, ARM (0x3B) with the JEDEC bit.
    CHECK(f.rd(0xE0001FE0) == 0x02);
    CHECK(f.rd(0xE0001FE4) == 0xB0);
    CHECK((f.rd(0xE0001FE8) & 0xF) == 0xB);
    CHECK(f.rd(0xE0001FD0) == 0x04);         // PIDR4: JEP106 continuation 4
}

TEST_CASE("cortex-m: other addresses are the target's memory, byte by byte")
{
    Fixture f;
    f.target.map(0x20000000, 8);
    f.wr(0x20000001, 0xAB, 1);
    CHECK(f.rd(0x20000000) == 0x0000AB00);
    uint32_t value = 0;
    CHECK_FALSE(f.debug.read(0x30000000, 4, value));   // unmapped: the bus error reaches the MEM-AP
    // CPUID: the target's own when it has one, else a Cortex-M4's.
    CHECK(f.rd(cpuid) == cortex_m4_cpuid);
    // A halfword read of a simulated register takes its lanes.
    f.wr(dcrdr, 0x12345678);
    CHECK(f.rd(dcrdr + 2, 2) == 0x1234);
}

TEST_CASE("cortex-m: a BKPT written by the debugger becomes a breakpoint; its reads show it")
{
    Fixture f;
    f.target.map(0x08000320, 16, 0x00);
    f.target.memory[0x08000324] = 0x10;   // the original instruction 0xB510 (push)
    f.target.memory[0x08000325] = 0xB5;
    f.wr(0x08000324, 0xBE11, 2);          // OpenOCD's soft breakpoint: BKPT 0x11
    CHECK(f.target.breakpoints == std::set<uint32_t>{0x08000324});
    CHECK(f.target.memory[0x08000325] == 0xB5);   // the target's memory keeps the original
    CHECK(f.rd(0x08000324, 2) == 0xBE11);
    CHECK(f.rd(0x08000324) == 0x0000BE11);
    CHECK(f.rd(0x08000325, 1) == 0xBE);
    CHECK(f.rd(0x08000320) == 0);                 // a word next to it is untouched
    // Semihosting's BKPT 0xAB is an instruction like any other.
    f.wr(0x08000328, 0xBEAB, 2);
    CHECK(f.target.memory[0x08000329] == 0xBE);
    // Writing the original back removes the breakpoint.
    f.wr(0x08000324, 0xB510, 2);
    CHECK(f.target.breakpoints.empty());
    CHECK(f.rd(0x08000324, 2) == 0xB510);
}

namespace {

// A Cortex-M33 r0p3 (ARMv8-M Mainline with the Security Extension, its TRM's CPUID).
void cortex_m33(FakeTarget& target)
{
    target.map(cpuid, 4);
    for (uint32_t i = 0; i < 4; ++i)
        target.memory[cpuid + i] = uint8_t(0x410FD213u >> (8 * i));
}

uint32_t core_register(Fixture& f, uint32_t regsel)
{
    f.wr(dcrsr, regsel);
    return f.rd(dcrdr);
}

} // namespace

TEST_CASE("cortex-m: ARMv8-M DSCSR.CDS and the banked registers from a target that describes both banks (QEMU 10)")
{
    Fixture f;
    cortex_m33(f.target);
    // GDB's m-system (the current state's) and secext features, halted in the Non-secure state.
    f.target.registers.insert({{"msp", 0x28400000}, {"psp", 0}, {"msplim", 0}, {"psplim", 0},
                               {"msp_ns", 0x28400000}, {"msp_s", 0x381FFF80}, {"psp_ns", 0}, {"psp_s", 0x38100000},
                               {"msplim_ns", 0x28000000}, {"msplim_s", 0x38000000}, {"psplim_ns", 0}, {"psplim_s", 0},
                               {"control_ns", 0}, {"control_s", 2}, {"primask_ns", 1}, {"primask_s", 0},
                               {"basepri_ns", 0}, {"basepri_s", 0}, {"faultmask_ns", 0}, {"faultmask_s", 0}});
    f.halt();
    CHECK(f.rd(dscsr) == 0);   // CDS 0: Non-secure
    CHECK(core_register(f, 0x18) == 0x28400000);   // MSP_NS
    CHECK(core_register(f, 0x1A) == 0x381FFF80);   // MSP_S
    CHECK(core_register(f, 0x1B) == 0x38100000);   // PSP_S
    CHECK(core_register(f, 0x1C) == 0x38000000);   // MSPLIM_S
    CHECK(core_register(f, 0x1E) == 0x28000000);   // MSPLIM_NS
    CHECK(core_register(f, 0x22) == 0x02000000);   // CONTROL_S, FAULTMASK_S, BASEPRI_S, PRIMASK_S
    CHECK(core_register(f, 0x23) == 0x00000001);
    CHECK(f.target.security_reads == 0);   // the registers told
    // Resumed and halted in the Secure state: MSP is MSP_S now.
    f.wr(dhcsr, dbgkey | c_debugen);
    f.target.registers["msp"] = 0x381FFF80;
    f.halt();
    CHECK(f.rd(dscsr) == dscsr_cds);
    // MSP equal in both banks: PSP decides; all equal: the target's other means.
    f.target.registers["msp_ns"] = 0x381FFF80;
    f.wr(dhcsr, dbgkey | c_debugen);
    f.halt();
    CHECK(f.rd(dscsr) == 0);   // PSP 0 is PSP_NS's, not PSP_S's
    for (const char* name : {"psp_s", "msplim_s", "msplim_ns"})
        f.target.registers[name] = 0;
    f.target.security = true;
    f.wr(dhcsr, dbgkey | c_debugen);
    f.halt();
    CHECK(f.rd(dscsr) == dscsr_cds);
    CHECK(f.target.security_reads == 1);
    CHECK(f.rd(dscsr) == dscsr_cds);   // once per halt
    CHECK(f.target.security_reads == 1);
    // The bank select is stored; a write of CDS changes nothing.
    f.wr(dscsr, 0x3);
    CHECK(f.rd(dscsr) == (dscsr_cds | 0x3));
}

TEST_CASE("cortex-m: ARMv8-M DSCSR.CDS by the target's other means and the banks the stub reaches (QEMU 7.2)")
{
    Fixture f;
    cortex_m33(f.target);
    f.target.special = {{"msp", 0x30001000}, {"psp", 0x30002000}, {"control", 2}, {"primask", 0},
                        {"basepri", 0},      {"faultmask", 0},    {"msplim", 0x30000000}, {"psplim", 0x30001800},
                        {"msp_ns", 0x20001000}, {"psp_ns", 0x20002000}, {"control_ns", 0}};
    f.target.security = true;
    f.halt();
    CHECK(f.rd(dscsr) == dscsr_cds);
    CHECK(core_register(f, 0x1A) == 0x30001000);   // MSP_S: the current MSP
    CHECK(core_register(f, 0x1D) == 0x30001800);   // PSPLIM_S: the current PSPLIM
    CHECK(core_register(f, 0x18) == 0x20001000);   // MSP_NS: MRS's _NS form from Secure
    CHECK(core_register(f, 0x22) == 0x02000000);
    // Non-secure: the Secure bank is out of the stub's reach (reads 0), the current bank is NS.
    f.wr(dhcsr, dbgkey | c_debugen);
    f.target.security = false;
    f.halt();
    CHECK(f.rd(dscsr) == 0);
    CHECK(core_register(f, 0x18) == 0x30001000);   // MSP_NS: the current MSP
    CHECK(core_register(f, 0x1A) == 0);
    // The security state unknown: no bank is read.
    f.wr(dhcsr, dbgkey | c_debugen);
    f.target.security.reset();
    f.halt();
    CHECK(f.rd(dscsr) == 0);
    CHECK(core_register(f, 0x18) == 0);
}

TEST_CASE("cortex-m: without the Security Extension DSCSR and the banked REGSEL values read 0")
{
    Fixture f;   // the fake's CPUID cannot be read: a Cortex-M4
    f.target.special = {{"msp", 0x20001000}};
    f.target.security = true;
    f.halt();
    CHECK(f.rd(dscsr) == 0);
    CHECK(core_register(f, 0x1A) == 0);
    CHECK(f.target.security_reads == 0);
}
