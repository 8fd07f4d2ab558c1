#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <map>

#include "../fakes/fake_gdb_server.h"
#include "../fakes/tiny_cortex_m.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/rsp_client.h"
#include "mcuprof/link/special_register_stub.h"

using namespace mcuprof::transport;

namespace {

// A task halted in Thread mode on PSP (CONTROL.SPSEL), privileged, with the masks set.
struct Fixture {
    fakes::TinyCortexM core;
    fakes::FakeGdbServer server{[this](const std::string& p) { return core.answer(p); }};
    RspClient client{Endpoint{"127.0.0.1", server.port()}, RspClient::Options{std::chrono::seconds(2)}};

    Fixture()
    {
        client.handshake();
        for (uint32_t i = 0; i < 16; ++i)
            core.r[i] = 0x1000 + i;
        core.r[13] = 0x20000800;   // PSP, the active one
        core.msp = 0x20000400;
        core.r[15] = 0x08000120;
        core.xpsr = 0x01000000;    // Thread mode
        core.control = 2;
        core.primask = 1;
        core.basepri = 0x40;
        for (uint32_t a = 0x200007C0; a < 0x20000840; ++a)
            core.memory[a] = uint8_t(a * 7);
    }
    HaltedCore halted() const { return {core.r[13], core.r[15], core.xpsr}; }
    // The same with r0-r12 as the caller read them at the halt.
    HaltedCore halted_with_registers() const
    {
        HaltedCore h = halted();
        for (unsigned i = 0; i < h.r.size(); ++i)
            h.r[i] = core.r[i];
        return h;
    }
    // The packets sent before the first step: the set-up round trip.
    std::vector<std::string> setup_after(size_t skip)
    {
        std::vector<std::string> packets = server.packets_after(skip);
        packets.erase(std::find(packets.begin(), packets.end(), "s"), packets.end());
        return packets;
    }
};

const std::vector<SpecialRegister> all_six = {SpecialRegister::msp,     SpecialRegister::psp,
                                              SpecialRegister::primask, SpecialRegister::basepri,
                                              SpecialRegister::faultmask, SpecialRegister::control};

} // namespace

TEST_CASE("special register stub: six registers in one run, a step each, everything put back")
{
    Fixture f;
    const auto memory_before = f.core.memory;
    const auto r_before = std::to_array(f.core.r);
    const StubReads read = read_special_registers(f.client, f.halted(), all_six);
    REQUIRE(read.values.size() == 6);
    CHECK(read.values[0] == 0x20000400u);
    CHECK(read.values[1] == 0x20000800u);
    CHECK(read.values[2] == 1u);
    CHECK(read.values[3] == 0x40u);
    CHECK(read.values[4] == 0u);
    CHECK(read.values[5] == 2u);
    CHECK(read.steps == 6);
    CHECK(f.server.count("s") == 6);
    CHECK(std::to_array(f.core.r) == r_before);
    CHECK(f.core.xpsr == 0x01000000u);
    CHECK(f.core.memory == memory_before);
    // Six MRS and two branches: 28 bytes just below SP, read before and written back after.
    CHECK(f.server.count("m200007e4,1c") == 1);
    CHECK(f.server.count_prefix("M200007e4,1c:") == 2);
}

TEST_CASE("special register stub: unprivileged Thread mode reads MSP and PSP as unknown, CONTROL checked")
{
    Fixture f;
    f.core.control = 3;   // nPRIV: MRS reads MSP and PSP as 0
    const StubReads sps = read_special_registers(f.client, f.halted(), {SpecialRegister::msp, SpecialRegister::psp});
    CHECK_FALSE(sps.values[0]);
    CHECK_FALSE(sps.values[1]);
    CHECK(sps.steps == 3);   // CONTROL read as well
    const StubReads control = read_special_registers(f.client, f.halted(), {SpecialRegister::control});
    CHECK(control.values[0] == 3u);
    CHECK(control.steps == 1);
    unsigned steps = 0;
    CHECK_FALSE(write_special_register(f.client, f.halted(), SpecialRegister::psp, 0x20000700, steps));
    CHECK(f.core.r[13] == 0x20000800u);
}

TEST_CASE("special register stub: MSR writes PSP (the active SP moves) and MSP; r0, PC, xPSR and the bytes put back")
{
    Fixture f;
    const auto memory_before = f.core.memory;
    unsigned steps = 0;
    CHECK(write_special_register(f.client, f.halted(), SpecialRegister::psp, 0x20000700, steps));
    CHECK(steps == 2);   // CONTROL read first in Thread mode
    CHECK(f.core.r[13] == 0x20000700u);
    CHECK(f.core.r[0] == 0x1000u);
    CHECK(f.core.r[1] == 0x1001u);
    CHECK(f.core.r[15] == 0x08000120u);
    CHECK(f.core.xpsr == 0x01000000u);
    CHECK(f.core.memory == memory_before);

    f.core.xpsr = 0x0100000F;   // SysTick: Handler mode, on MSP
    f.core.psp = f.core.r[13];
    f.core.r[13] = 0x20000400;
    CHECK(write_special_register(f.client, f.halted(), SpecialRegister::msp, 0x20000500, steps));
    CHECK(steps == 3);
    CHECK(f.core.r[13] == 0x20000500u);
    CHECK(f.core.psp == 0x20000700u);
}

TEST_CASE("special register stub: a refused write or no memory below SP gives nothing and changes nothing")
{
    Fixture f;
    f.core.refuse_writes = true;
    const auto memory_before = f.core.memory;
    const StubReads refused = read_special_registers(f.client, f.halted(), all_six);
    CHECK(refused.steps == 0);
    CHECK(std::none_of(refused.values.begin(), refused.values.end(), [](auto v) { return v.has_value(); }));
    CHECK(f.core.memory == memory_before);
    CHECK(f.core.r[15] == 0x08000120u);
    CHECK(f.core.r[0] == 0x1000u);
}

TEST_CASE("special register stub: a register it must put back that cannot be read: nothing runs, the rest put back, an error")
{
    Fixture f;
    f.core.unreadable = 1;
    const auto memory_before = f.core.memory;
    CHECK_THROWS_AS(read_special_registers(f.client, f.halted(), {SpecialRegister::msp, SpecialRegister::psp}), Error);
    CHECK(f.server.count("s") == 0);
    CHECK(f.core.memory == memory_before);
    CHECK(f.core.r[15] == 0x08000120u);
    CHECK(f.core.xpsr == 0x01000000u);
    CHECK(f.core.r[0] == 0x1000u);
}

TEST_CASE("special register stub: the packets of one run, by kind, when the caller gives only SP, PC and xPSR")
{
    // Six registers in Thread mode (CONTROL among them): round trip 1 reads r0-r5 and the 28
    // bytes, writes the code and PC; six steps; round trip 3 reads r0-r5 and PC, writes the
    // bytes back and r0-r5, PC, xPSR.
    Fixture f;
    const size_t before = f.server.received().size();
    read_special_registers(f.client, f.halted(), all_six);
    const std::map<char, long> expected = {{'p', 6 + 7}, {'m', 1}, {'M', 2}, {'P', 1 + 8}, {'s', 6}};
    CHECK(fakes::FakeGdbServer::kinds(f.server.packets_after(before)) == expected);
}

TEST_CASE("special register stub: the packet sequence of the sampler's read of PSP in Handler mode, with r0 given and without")
{
    for (const bool r0_given : {false, true}) {
        CAPTURE(r0_given);
        Fixture f;
        f.core.xpsr = 0x0100000F;   // SysTick, on MSP
        f.core.psp = f.core.r[13];
        f.core.r[13] = 0x20000400;
        const size_t before = f.server.received().size();
        const StubReads read =
            read_special_registers(f.client, r0_given ? f.halted_with_registers() : f.halted(), {SpecialRegister::psp});
        CHECK(read.values[0] == 0x20000800u);
        // The stub at SP - 8: MRS r0, PSP (F3EF 8009) and B . (E7FE) twice, as little-endian
        // halfwords; registers by number (r0 0, pc f, xpsr 19 in this description), values
        // little-endian: PC 0x08000120, xPSR 0x0100000F, r0 0x1000; the old bytes were zeros.
        // r0 is read first only when not given: 11 packets, or 10.
        std::vector<std::string> expected = {
            "m200003f8,8", "M200003f8,8:eff30980fee7fee7", "Pf=f8030020",
            "s",
            "p0", "pf", "M200003f8,8:0000000000000000", "P0=00100000", "Pf=20010008", "P19=0f000001"};
        if (!r0_given)
            expected.insert(expected.begin(), "p0");
        CHECK(f.server.packets_after(before) == expected);
        CHECK(f.core.r[0] == 0x1000u);
    }
}

TEST_CASE("special register stub: with r0-r12 given, no register is read before the steps, and the values given are put back")
{
    Fixture f;
    HaltedCore halted = f.halted_with_registers();
    halted.r[1] = 0xB0B0B0B0;   // what the caller read at the halt is what goes back
    const size_t before = f.server.received().size();
    const StubReads read = read_special_registers(f.client, halted, all_six);
    CHECK(read.values[1] == 0x20000800u);
    CHECK(read.values[5] == 2u);
    // Six packets fewer than without them: r0-r5 are not read first.
    const std::map<char, long> expected = {{'p', 7}, {'m', 1}, {'M', 2}, {'P', 1 + 8}, {'s', 6}};
    CHECK(fakes::FakeGdbServer::kinds(f.server.packets_after(before)) == expected);
    const std::vector<std::string> setup = f.setup_after(before);
    CHECK(std::none_of(setup.begin(), setup.end(), [](const std::string& p) { return p[0] == 'p'; }));
    CHECK(f.core.r[0] == 0x1000u);
    CHECK(f.core.r[1] == 0xB0B0B0B0u);
    for (unsigned i = 2; i < 16; ++i)
        CHECK(f.core.r[i] == (i == 13 ? 0x20000800u : i == 15 ? 0x08000120u : 0x1000u + i));
    CHECK(f.core.xpsr == 0x01000000u);
}

TEST_CASE("special register stub: only the registers not given are read first")
{
    Fixture f;
    HaltedCore halted = f.halted();
    halted.r[0] = f.core.r[0];   // r1 not given: PSP into r0, CONTROL into r1 (Thread mode)
    const size_t before = f.server.received().size();
    const StubReads read = read_special_registers(f.client, halted, {SpecialRegister::psp});
    CHECK(read.values[0] == 0x20000800u);
    const std::vector<std::string> setup = f.setup_after(before);
    CHECK(std::count_if(setup.begin(), setup.end(), [](const std::string& p) { return p[0] == 'p'; }) == 1);
    CHECK(std::count(setup.begin(), setup.end(), "p1") == 1);
    CHECK(f.core.r[0] == 0x1000u);
    CHECK(f.core.r[1] == 0x1001u);
}

TEST_CASE("special register stub: a write with r0-r12 given reads none first and puts the values given back")
{
    Fixture f;
    HaltedCore halted = f.halted_with_registers();
    halted.r[0] = 0xA0A0A0A0;
    const size_t before = f.server.received().size();
    unsigned steps = 0;
    CHECK(write_special_register(f.client, halted, SpecialRegister::psp, 0x20000700, steps));
    CHECK(steps == 2);
    CHECK(f.core.r[13] == 0x20000700u);
    const std::vector<std::string> setup = f.setup_after(before);
    CHECK(std::none_of(setup.begin(), setup.end(), [](const std::string& p) { return p[0] == 'p'; }));
    CHECK(f.core.r[0] == 0xA0A0A0A0u);
    CHECK(f.core.r[1] == 0x1001u);
    CHECK(f.core.r[15] == 0x08000120u);
    CHECK(f.core.xpsr == 0x01000000u);
}
