#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>

#include "../fakes/fake_gdb_server.h"
#include "mcuprof/sources/stack_pointer_stub.h"
#include "mcuprof/transport/rsp_client.h"

using namespace mcuprof;
using transport::rsp::frame;

namespace {

// A QEMU-like gdbstub over a tiny core: r0-r15 in 'g', xpsr (regnum 25), no msp/psp in the
// description; memory bytes in a map; 's' runs one instruction, which must be MRS r0,
// MSP/PSP (T1: F3EF 8008 | SYSm) or the core "faults" (PC unchanged).
struct TinyCore {
    std::mutex lock;
    uint32_t r[16] = {};
    uint32_t xpsr = 0;
    uint32_t msp = 0, psp = 0;
    std::map<uint32_t, uint8_t> memory;
    bool refuse_writes = false;

    static std::string word_hex(uint32_t v)
    {
        char text[9];
        std::snprintf(text, sizeof text, "%02x%02x%02x%02x", v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF, v >> 24);
        return text;
    }
    static uint32_t hex_word(const std::string& h) { return *transport::rsp::le32_from_hex(h); }

    std::string answer(const std::string& p)
    {
        std::lock_guard<std::mutex> guard(lock);
        if (p.rfind("qSupported", 0) == 0)
            return frame("PacketSize=1000;qXfer:features:read+");
        if (p.rfind("qXfer:features:read:target.xml:0,", 0) == 0) {
            std::string x = "l<?xml version=\"1.0\"?><target><feature name=\"m\">";
            for (int i = 0; i <= 12; ++i)
                x += "<reg name=\"r" + std::to_string(i) + "\" bitsize=\"32\"/>";
            x += "<reg name=\"sp\" bitsize=\"32\"/><reg name=\"lr\" bitsize=\"32\"/><reg name=\"pc\" bitsize=\"32\"/>"
                 "<reg name=\"xpsr\" bitsize=\"32\" regnum=\"25\"/></feature></target>";
            return frame(x);
        }
        if (p == "?")
            return frame("T05thread:01;");
        if (p == "s") {
            const uint32_t pc = r[15];
            const uint32_t insn = uint32_t(memory[pc]) | uint32_t(memory[pc + 1]) << 8 |
                                  uint32_t(memory[pc + 2]) << 16 | uint32_t(memory[pc + 3]) << 24;
            // Executed only outside an IT block (xPSR bits 26:25, 15:10 clear).
            if ((xpsr & 0x0600FC00u) == 0 && (insn == 0x8008F3EFu || insn == 0x8009F3EFu)) {
                r[0] = insn == 0x8008F3EFu ? msp : psp;
                r[15] = pc + 4;
            }
            return frame("T05thread:01;");
        }
        if (p[0] == 'p') {
            const unsigned n = unsigned(std::stoul(p.substr(1), nullptr, 16));
            return frame(word_hex(n == 25 ? xpsr : r[n]));
        }
        if (p[0] == 'P') {
            const size_t eq = p.find('=');
            const unsigned n = unsigned(std::stoul(p.substr(1, eq - 1), nullptr, 16));
            (n == 25 ? xpsr : r[n]) = hex_word(p.substr(eq + 1));
            return frame("OK");
        }
        if (p[0] == 'm' || p[0] == 'M') {
            unsigned address = 0, length = 0;
            std::sscanf(p.c_str() + 1, "%x,%x", &address, &length);
            if (address < 0x20000000u)
                return frame("E14");
            if (p[0] == 'm') {
                std::string hex;
                for (unsigned i = 0; i < length; ++i) {
                    char b[3];
                    std::snprintf(b, sizeof b, "%02x", memory[address + i]);
                    hex += b;
                }
                return frame(hex);
            }
            if (refuse_writes)
                return frame("E01");
            std::string bytes;
            transport::rsp::from_hex(p.substr(p.find(':') + 1), bytes);
            for (unsigned i = 0; i < bytes.size(); ++i)
                memory[address + i] = uint8_t(bytes[i]);
            return frame("OK");
        }
        return frame("");
    }
};

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

    const sources::StubRead psp = sources::read_stack_pointer_by_stub(f.client, before, sources::StackPointer::process);
    CHECK(psp.stepped);
    CHECK(psp.value == 0x20000800u);
    const sources::StubRead msp = sources::read_stack_pointer_by_stub(f.client, before, sources::StackPointer::main);
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
    const sources::StubRead psp = sources::read_stack_pointer_by_stub(f.client, before, sources::StackPointer::process);
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
    const sources::StubRead refused = sources::read_stack_pointer_by_stub(f.client, before, sources::StackPointer::process);
    CHECK_FALSE(refused.value);
    CHECK_FALSE(refused.stepped);
    CHECK(f.halted().r == before.r);
    CHECK(f.core.memory == memory_before);

    f.core.refuse_writes = false;
    f.core.r[13] = 0x20000000;   // SP at the bottom of RAM: the word below it does not exist
    const sources::StubRead bottom = sources::read_stack_pointer_by_stub(f.client, f.halted(), sources::StackPointer::process);
    CHECK_FALSE(bottom.value);
    CHECK(f.core.r[15] == 0x08000120u);
}
