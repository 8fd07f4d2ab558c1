#include <doctest/doctest.h>

#include <map>

#include "mcuprof/vprobe/jtag_dp.h"
#include "mcuprof/vprobe/tap_controller.h"
#include "vprobe_test_support.h"

using namespace mcuprof::vprobe;
using namespace mcuprof::vprobe::jtag_dp;

namespace {

// An AP with plain registers; address 0x0C fails (a bus error).
struct RegisterAp : AccessPort {
    std::map<uint8_t, uint32_t> registers;
    int aborts = 0;
    bool read(uint8_t address, uint32_t& value) override
    {
        value = registers[address];
        return address != 0x0C;
    }
    bool write(uint8_t address, uint32_t value) override
    {
        registers[address] = value;
        return address != 0x0C;
    }
    void abort() override { ++aborts; }
};

struct Fixture {
    JtagDp dp;
    TapController tap{dp};
    vprobe_test::TapPins pins{tap};
    vprobe_test::JtagDriver jtag{pins};
    RegisterAp ap;

    Fixture()
    {
        dp.attach(0, ap);
        jtag.reset();
    }
    uint32_t ack(uint64_t captured) { return uint32_t(captured & 7); }
    uint32_t data(uint64_t captured) { return uint32_t(captured >> 3); }
    void power_up()
    {
        jtag.ir(ir_dpacc);
        jtag.access(dp_ctrl_stat, false, cdbgpwrupreq | csyspwrupreq);
    }
};

} // namespace

TEST_CASE("jtag-dp: a DPACC write is 35 bits: data[34:3], A[3:2] in [2:1], RnW in [0]")
{
    Fixture f;
    f.jtag.ir(ir_dpacc);
    // SELECT (A = 0x8 -> A[3:2] = b10), write (RnW 0), data 0x0A0000F0: the scan's value is
    // 0x0A0000F0 << 3 | b10 << 1 | 0 = 0x0_5000_0784.
    f.jtag.dr(0x050000784ull, 35);
    CHECK(f.dp.select() == 0x0A0000F0);
    // A read of SELECT returns its value in the next scan, above the ACK OK/FAULT (b010).
    f.jtag.access(dp_select, true, 0);
    const uint64_t captured = f.jtag.access(dp_rdbuff, true, 0);
    CHECK(captured == ((0x0A0000F0ull << 3) | 0x2));
}

TEST_CASE("jtag-dp: power-up requests are acknowledged; sticky flags clear by writing 1")
{
    Fixture f;
    f.jtag.ir(ir_dpacc);
    f.jtag.access(dp_ctrl_stat, true, 0);
    CHECK(f.data(f.jtag.access(dp_rdbuff, true, 0)) == 0);   // powered down at first
    f.power_up();
    f.jtag.access(dp_ctrl_stat, true, 0);
    const uint32_t powered = f.data(f.jtag.access(dp_rdbuff, true, 0));
    CHECK(powered == (cdbgpwrupreq | cdbgpwrupack | csyspwrupreq | csyspwrupack));

    // An AP transfer that fails sets STICKYERR; while it is set APACC requests are dropped.
    f.jtag.ir(ir_apacc);
    f.jtag.access(0x0C, false, 1);
    CHECK((f.dp.ctrl_stat() & stickyerr) != 0);
    f.jtag.access(0x04, false, 0x1234);
    CHECK(f.ap.registers.count(0x04) == 0);
    // Writing CTRL/STAT with STICKYERR = 1 clears it and keeps the power requests.
    f.jtag.ir(ir_dpacc);
    f.jtag.access(dp_ctrl_stat, false, cdbgpwrupreq | csyspwrupreq | stickyerr);
    CHECK((f.dp.ctrl_stat() & stickyerr) == 0);
    CHECK((f.dp.ctrl_stat() & cdbgpwrupack) != 0);
    f.jtag.ir(ir_apacc);
    f.jtag.access(0x04, false, 0x1234);
    CHECK(f.ap.registers[0x04] == 0x1234);
}

TEST_CASE("jtag-dp: an AP behind an unpowered debug domain fails")
{
    Fixture f;
    f.jtag.ir(ir_apacc);
    f.jtag.access(0x04, false, 0x55);
    CHECK(f.ap.registers.count(0x04) == 0);
    CHECK((f.dp.ctrl_stat() & stickyerr) != 0);
}

TEST_CASE("jtag-dp: APACC reads are posted; SELECT chooses the AP and the register bank")
{
    Fixture f;
    f.power_up();
    f.ap.registers[0xFC] = 0x24770011;
    f.ap.registers[0x04] = 0x20000000;
    f.jtag.access(dp_select, false, 0x000000F0);   // APSEL 0, APBANKSEL 0xF
    f.jtag.ir(ir_apacc);
    f.jtag.access(0x0C, true, 0);                  // bank 0xF, A 0xC: IDR
    const uint64_t idr = f.jtag.access(0x04, false, 0);   // a write of 0xF4; this scan captures IDR
    CHECK(f.data(idr) == 0x24770011);
    CHECK(f.ap.registers.count(0xF4) == 1);
    f.jtag.ir(ir_dpacc);
    f.jtag.access(dp_select, false, 0);
    f.jtag.ir(ir_apacc);
    f.jtag.access(0x04, true, 0);                  // TAR
    f.jtag.ir(ir_dpacc);
    const uint64_t tar = f.jtag.access(dp_rdbuff, true, 0);
    CHECK(f.ack(tar) == ack_ok_fault);
    CHECK(f.data(tar) == 0x20000000);
    CHECK(f.dp.ap_accesses() == 3);

    // APSEL 1 has no AP: it reads as zero (an IDR of 0 means "no AP").
    f.jtag.access(dp_select, false, 0x010000F0);
    f.jtag.ir(ir_apacc);
    f.jtag.access(0x0C, true, 0);
    f.jtag.ir(ir_dpacc);
    CHECK(f.data(f.jtag.access(dp_rdbuff, true, 0)) == 0);
}

TEST_CASE("jtag-dp: a busy AP answers WAIT, drops the request and, with ORUNDETECT, sets STICKYORUN")
{
    Fixture f;
    f.jtag.ir(ir_dpacc);
    f.jtag.access(dp_ctrl_stat, false, cdbgpwrupreq | csyspwrupreq | orundetect);
    f.dp.set_ap_busy_scans(1);
    f.jtag.ir(ir_apacc);
    CHECK(f.ack(f.jtag.access(0x04, false, 0x11)) == ack_ok_fault);
    CHECK(f.ack(f.jtag.access(0x04, false, 0x22)) == ack_wait);   // dropped
    CHECK(f.ap.registers[0x04] == 0x11);
    CHECK((f.dp.ctrl_stat() & stickyorun) != 0);
    // With STICKYORUN set, AP requests are dropped even though the AP is ready again.
    CHECK(f.ack(f.jtag.access(0x04, false, 0x33)) == ack_ok_fault);
    CHECK(f.ap.registers[0x04] == 0x11);
    // DAPABORT reaches the AP.
    f.jtag.ir(ir_abort);
    f.jtag.access(0, false, dapabort);
    CHECK(f.ap.aborts == 1);
}

TEST_CASE("jtag-dp: IDCODE and BYPASS by instruction; reserved instructions act as BYPASS")
{
    Fixture f;
    f.jtag.ir(ir_idcode);
    CHECK(f.jtag.dr(0, 32) == cortex_m_idcode);
    f.jtag.ir(ir_bypass);
    CHECK(f.jtag.dr(0b1011, 4) == 0b0110);   // one bit of delay, captured 0 first
    f.jtag.ir(0x3);
    CHECK(f.dp.dr_length(0x3) == 1);
}
