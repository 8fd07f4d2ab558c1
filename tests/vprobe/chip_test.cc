#include <doctest/doctest.h>

#include "mcuprof/vprobe/chip.h"
#include "mcuprof/vprobe/virtual_probe.h"
#include "vprobe_test_support.h"

using namespace mcuprof::vprobe;

TEST_CASE("chip: every entry is OpenOCD's target script name; unknown names are not found")
{
    CHECK(chip_names() == "stm32f1x, stm32f2x, stm32f4x, stm32l4x, nrf51, stellaris");
    for (const char* name : {"stm32f1x", "stm32f2x", "stm32f4x", "stm32l4x", "nrf51", "stellaris"}) {
        const Chip* chip = find_chip(name);
        REQUIRE(chip != nullptr);
        CHECK(chip->name == name);
    }
    CHECK(find_chip("stm32h7x") == nullptr);
    CHECK(find_chip("") == nullptr);   // the generic DP is no --chip of its own
    CHECK(generic_chip().jtag_idcode == jtag_dp::cortex_m_idcode);
    CHECK(generic_chip().dpidr == jtag_dp::cortex_m_dpidr);
    CHECK(generic_chip().id_registers.empty());
}

TEST_CASE("chip: the DP answers the chip's DPIDR over SWD and its TAP IDCODE over JTAG")
{
    vprobe_test::FakeTarget target;
    const Chip& nrf51 = *find_chip("nrf51");
    VirtualProbe m0(std::vector<DebugTarget*>{&target}, CortexMDebug::Options{}, nrf51);
    CHECK(m0.dp().swd_read_dp(jtag_dp::dp_dpidr_abort) == 0x0BB11477);
    CHECK(!nrf51.jtag_idcode);   // SWD only

    VirtualProbe lm3s(std::vector<DebugTarget*>{&target}, CortexMDebug::Options{}, *find_chip("stellaris"));
    CHECK(lm3s.dp().swd_read_dp(jtag_dp::dp_dpidr_abort) == 0x1BA01477);
    vprobe_test::JtagDriver jtag{lm3s};
    jtag.reset();
    jtag.ir(jtag_dp::ir_idcode);
    CHECK(jtag.dr(0, 32) == 0x3BA00477);

    VirtualProbe generic(target);   // no --chip: as before
    CHECK(generic.dp().swd_read_dp(jtag_dp::dp_dpidr_abort) == jtag_dp::cortex_m_dpidr);
}

TEST_CASE("chip: ID registers answer over the target's memory, read-only, in any access size")
{
    vprobe_test::FakeTarget target;
    target.map(0xE0042000, 8, 0x11);   // what the emulator has there (QEMU: RAZ)
    target.map(0x10000000, 0x404, 0x22);
    struct Bus : MemoryBus {
        vprobe_test::FakeTarget& t;
        explicit Bus(vprobe_test::FakeTarget& t) : t(t) {}
        bool read(uint32_t a, unsigned size, uint32_t& v) override { return t.read_memory(a, size, v); }
        bool write(uint32_t a, unsigned size, uint32_t v) override { return t.write_memory(a, size, v); }
    } memory{target};

    ChipBus f4(*find_chip("stm32f4x"), memory);
    uint32_t value = 0;
    CHECK(f4.read(0xE0042000, 4, value));
    CHECK(value == 0x10000413);   // DBGMCU_IDCODE: DEV_ID 0x413, REV_ID 0x1000
    CHECK(f4.read(0x1FFF7A22, 2, value));
    CHECK(value == 0x0400);       // F_SIZE: 1024 KiB, the halfword OpenOCD's stm32f2x driver reads
    CHECK(f4.write(0xE0042000, 4, 0));
    CHECK(f4.read(0xE0042000, 4, value));
    CHECK(value == 0x10000413);   // writes ignored, as on the part
    CHECK(f4.read(0xE0042004, 4, value));
    CHECK(value == 0x11111111);   // DBGMCU_CR is no ID register: the target's

    ChipBus nrf51(*find_chip("nrf51"), memory);
    CHECK(nrf51.read(0x1000005C, 4, value));
    CHECK(value == 0xFFFF0072);   // CONFIGID: HWID 0x0072
    CHECK(nrf51.read(0x10000100, 4, value));
    CHECK(value == 0xFFFFFFFF);   // past QEMU's FICR: erased information flash
    CHECK(nrf51.read(0x100003FC, 1, value));
    CHECK(value == 0xFF);
    CHECK(nrf51.read(0x10000400, 4, value));
    CHECK(value == 0x22222222);   // past the FICR page: the target's
}
