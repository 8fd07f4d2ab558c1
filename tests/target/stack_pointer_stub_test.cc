#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "../fakes/fake_gdb_server.h"
#include "../fakes/tiny_cortex_m.h"
#include "mcuprof/target/stack_pointer_stub.h"
#include "mcuprof/link/rsp_client.h"

using namespace mcuprof;
using transport::rsp::frame;

namespace {

using TinyCore = fakes::TinyCortexM;

struct Fixture {
    TinyCore core;
    fakes::FakeGdbServer server{[this](const std::string& p) { return core.answer(p); }};
    transport::RspClient client{transport::Endpoint{"127.0.0.1", server.port()},
                                transport::RspClient::Options{std::chrono::seconds(2)}};

    Fixture()
    {
        client.handshake();
        for (uint32_t i = 0; i < 16; ++i)
            core.r[i] = 0x1000 + i;
        core.r[13] = 0x20000400;
        core.r[15] = 0x08000120;
        core.xpsr = 0x0100000E;
        core.msp = 0x20000400;
        core.psp = 0x20000800;
        for (uint32_t a = 0x200003F0; a < 0x20000410; ++a)
            core.memory[a] = uint8_t(a * 7);
    }
    core::CoreRegisters halted()
    {
        core::CoreRegisters regs;
        for (int i = 0; i < 16; ++i)
            regs.r[i] = core.r[i];
        regs.xpsr = core.xpsr;
        return regs;
    }
};

} // namespace

TEST_CASE("stack pointer stub: one MRS stepped below SP reads MSP and PSP; registers and memory put back")
{
    Fixture f;
    const std::map<uint32_t, uint8_t> memory_before = f.core.memory;
    const core::CoreRegisters before = f.halted();

    const sources::StubRead psp = sources::read_stack_pointer_by_stub(f.client, before, true, sources::StackPointer::process);
    CHECK(psp.stepped);
    CHECK(psp.value == 0x20000800u);
    const sources::StubRead msp = sources::read_stack_pointer_by_stub(f.client, before, true, sources::StackPointer::main);
    CHECK(msp.value == 0x20000400u);

    const core::CoreRegisters after = f.halted();
    CHECK(after.r == before.r);
    CHECK(after.xpsr == before.xpsr);
    CHECK(f.core.memory == memory_before);
    // What it wrote: the two words just below SP, then their old bytes; PC, then r0, PC
    // and xPSR back (no xPSR write before the step: no IT state to clear).
    const auto got = f.server.received();
    CHECK(std::count(got.begin(), got.end(), "m200003f8,8") == 2);
    CHECK(std::count(got.begin(), got.end(), "s") == 2);
}

TEST_CASE("stack pointer stub: halted inside an IT block, the IT state is cleared for the step and restored")
{
    Fixture f;
    f.core.xpsr = 0x0100040E | (1u << 25);   // IT bits set
    const core::CoreRegisters before = f.halted();
    const sources::StubRead psp = sources::read_stack_pointer_by_stub(f.client, before, true, sources::StackPointer::process);
    CHECK(psp.value == 0x20000800u);
    CHECK(f.core.xpsr == before.xpsr);
    CHECK(f.core.r[0] == before.r[0]);
    CHECK(f.core.r[15] == before.r[15]);
}

TEST_CASE("stack pointer stub: a refused write or no memory below SP gives no value and leaves the target as it was")
{
    Fixture f;
    f.core.refuse_writes = true;
    const std::map<uint32_t, uint8_t> memory_before = f.core.memory;
    const core::CoreRegisters before = f.halted();
    const sources::StubRead refused = sources::read_stack_pointer_by_stub(f.client, before, true, sources::StackPointer::process);
    CHECK_FALSE(refused.value);
    CHECK_FALSE(refused.stepped);
    CHECK(f.halted().r == before.r);
    CHECK(f.core.memory == memory_before);

    f.core.refuse_writes = false;
    f.core.r[13] = 0x20000000;   // SP at the bottom of RAM: the word below it does not exist
    const sources::StubRead bottom = sources::read_stack_pointer_by_stub(f.client, f.halted(), true, sources::StackPointer::process);
    CHECK_FALSE(bottom.value);
    CHECK(f.core.r[15] == 0x08000120u);
}

TEST_CASE("stack pointer stub: r0 is read before the step only when the halt's read did not give the general registers")
{
    Fixture f;
    const core::CoreRegisters before = f.halted();
    for (const bool general_registers_read : {true, false}) {
        const size_t sent = f.server.received().size();
        const sources::StubRead psp =
            sources::read_stack_pointer_by_stub(f.client, before, general_registers_read, sources::StackPointer::process);
        CHECK(psp.value == 0x20000800u);
        const std::vector<std::string> packets = f.server.packets_after(sent);
        const auto step = std::find(packets.begin(), packets.end(), "s");
        CHECK(std::count(packets.begin(), step, "p0") == (general_registers_read ? 0 : 1));
        CHECK(f.halted().r == before.r);
    }
}
