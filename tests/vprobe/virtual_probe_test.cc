#include <doctest/doctest.h>

#include "mcuprof/vprobe/virtual_probe.h"
#include "vprobe_test_support.h"

using namespace mcuprof::vprobe;
using namespace mcuprof::vprobe::jtag_dp;

namespace {

// A debugger's memory access the way OpenOCD does it over JTAG (ADIv5 MEM-AP): power up,
// SELECT AP 0 bank 0, CSW, TAR, DRW, then RDBUFF to collect a posted read.
struct Debugger {
    vprobe_test::FakeTarget target;
    VirtualProbe probe{target};
    vprobe_test::JtagDriver jtag{probe};

    Debugger()
    {
        jtag.reset();
        jtag.ir(ir_dpacc);
        jtag.access(dp_ctrl_stat, false, cdbgpwrupreq | csyspwrupreq);
        jtag.access(dp_select, false, 0);
        jtag.ir(ir_apacc);
        jtag.access(0x00, false, 0x23000012);   // CSW: word, single increment
    }
    uint32_t read32(uint32_t address)
    {
        jtag.ir(ir_apacc);
        jtag.access(0x04, false, address);      // TAR
        jtag.access(0x0C, true, 0);             // DRW read, posted
        jtag.ir(ir_dpacc);
        const uint64_t captured = jtag.access(dp_rdbuff, true, 0);
        CHECK((captured & 7) == ack_ok_fault);
        return uint32_t(captured >> 3);
    }
    void write32(uint32_t address, uint32_t value)
    {
        jtag.ir(ir_apacc);
        jtag.access(0x04, false, address);
        jtag.access(0x0C, false, value);
    }
    uint32_t ctrl_stat()
    {
        jtag.ir(ir_dpacc);
        jtag.access(dp_ctrl_stat, true, 0);
        return uint32_t(jtag.access(dp_rdbuff, true, 0) >> 3);
    }
};

} // namespace

TEST_CASE("virtual probe: halt the core, read its PC and memory, through JTAG scans alone")
{
    Debugger d;
    d.target.map(0x08000000, 16, 0x5A);
    CHECK(d.read32(0x08000000) == 0x5A5A5A5A);
    CHECK(d.read32(0xE00FF000) == 0xFFF0F003);               // the ROM table's first entry: the SCS
    d.write32(0xE000EDF0, 0xA05F0003);                       // DHCSR: DBGKEY, C_DEBUGEN, C_HALT
    CHECK(d.target.halted);
    CHECK((d.read32(0xE000EDF0) & (1u << 17)) != 0);         // S_HALT
    d.write32(0xE000EDF4, 15);                               // DCRSR: REGSEL 15, read
    CHECK(d.read32(0xE000EDF8) == 0x08000100);               // DCRDR: the PC
    CHECK(d.read32(0xE000101C) == 0xFFFFFFFF);               // DWT_PCSR while halted
    // A bus error shows as STICKYERR in CTRL/STAT, not in the ACK.
    CHECK((d.ctrl_stat() & stickyerr) == 0);
    d.read32(0x30000000);
    CHECK((d.ctrl_stat() & stickyerr) != 0);
}
