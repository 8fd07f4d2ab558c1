#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "../fakes/fake_gdb_server.h"
#include "../fakes/tiny_cortex_m.h"
#include "mcuprof/link/rsp_client.h"
#include "mcuprof/vprobe/error.h"
#include "mcuprof/vprobe/rsp_target.h"

using namespace mcuprof::transport;
using mcuprof::vprobe::RspTarget;

namespace {

// A QEMU-like gdbstub: r0-r15 and xpsr in 'g', d0 (64-bit, regnum 26) and fpscr (42) by
// 'p'; memory readable at 0x08000000-0x08000FFF only, each byte its address's low byte.
std::string qemu_like(const std::string& p)
{
    if (p.rfind("qSupported", 0) == 0)
        return rsp::frame("PacketSize=1000;qXfer:features:read+");
    if (p.rfind("qXfer:features:read:target.xml:0,", 0) == 0) {
        std::string x = "l<?xml version=\"1.0\"?><target><architecture>arm</architecture><feature name=\"m\">";
        for (int i = 0; i <= 12; ++i)
            x += "<reg name=\"r" + std::to_string(i) + "\" bitsize=\"32\"/>";
        x += "<reg name=\"sp\" bitsize=\"32\"/><reg name=\"lr\" bitsize=\"32\"/><reg name=\"pc\" bitsize=\"32\"/>"
             "<reg name=\"xpsr\" bitsize=\"32\" regnum=\"25\"/><reg name=\"d0\" bitsize=\"64\" regnum=\"26\"/>"
             "<reg name=\"fpscr\" bitsize=\"32\" regnum=\"42\"/></feature></target>";
        return rsp::frame(x);
    }
    if (p == "?" || p == "s")
        return rsp::frame("T05thread:01;");
    if (p == "\x03")
        return rsp::frame("T02thread:01;");
    if (p == "g") {
        std::string g;
        for (int i = 0; i < 15; ++i)
            g += "00000000";
        return rsp::frame(g + "90010008" + "00000041");   // pc 0x08000190, xpsr 0x41000000
    }
    if (p == "p1a")
        return rsp::frame("0000803f00000040");   // d0: low word 0x3F800000, high 0x40000000
    if (p == "p2a")
        return rsp::frame("00000003");
    if (p[0] == 'm') {
        unsigned address = 0, length = 0;
        std::sscanf(p.c_str() + 1, "%x,%x", &address, &length);
        if (address < 0x08000000 || address + length > 0x08001000)
            return rsp::frame("E14");
        std::string bytes;
        for (unsigned i = 0; i < length; ++i)
            bytes.push_back(char((address + i) & 0xFF));
        return rsp::frame(rsp::to_hex(bytes));
    }
    if (p == "c")
        return "";
    return rsp::frame("OK");   // M, P, Z0, z0, D, qRcmd
}

struct Fixture {
    fakes::FakeGdbServer server{qemu_like};
    RspClient client{Endpoint{"127.0.0.1", server.port()}, RspClient::Options{std::chrono::seconds(2)}};

    Fixture() { client.handshake(); }
    long count(const std::string& payload) { return server.count(payload); }
    long count_prefix(const std::string& prefix) { return server.count_prefix(prefix); }
    // The fake answers in its own thread: let it see what was sent last.
    void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }
};

// A task halted on PSP (CONTROL.SPSEL), privileged, behind a gdbstub that describes no MSP,
// PSP or CONTROL (tests/fakes/tiny_cortex_m.h): r0-r12 0x1000 + n, MSP 0x20000400, PSP
// (the active SP) 0x20000800.
struct TaskOnPsp {
    fakes::TinyCortexM core;
    fakes::FakeGdbServer server{[this](const std::string& p) { return core.answer(p); }};
    RspClient client{Endpoint{"127.0.0.1", server.port()}, RspClient::Options{std::chrono::seconds(2)}};

    TaskOnPsp()
    {
        client.handshake();
        for (uint32_t i = 0; i < 16; ++i)
            core.r[i] = 0x1000 + i;
        core.r[13] = 0x20000800;
        core.msp = 0x20000400;
        core.r[15] = 0x08000120;
        core.xpsr = 0x01000000;
        core.control = 2;
    }
};

} // namespace

TEST_CASE("rsp target: the RspClient additions: registers of any width, 'P', 's'")
{
    Fixture f;
    const auto bytes = f.client.read_register_bytes({"pc", "d0", "fpscr"});
    REQUIRE(bytes.size() == 3);
    CHECK(rsp::to_hex(bytes[0]) == "90010008");
    CHECK(rsp::to_hex(bytes[1]) == "0000803f00000040");
    CHECK(rsp::to_hex(bytes[2]) == "00000003");
    f.client.write_register("r3", std::string("\x78\x56\x34\x12", 4));
    CHECK(f.count("P3=78563412") == 1);
    CHECK(f.client.step().value == 5);
    CHECK(f.count("s") == 1);
}

TEST_CASE("rsp target: halted, memory comes in 1 KiB lines and is kept until a write")
{
    Fixture f;
    RspTarget target(f.client, true);
    uint32_t value = 0;
    REQUIRE(target.read_memory(0x08000010, 4, value));
    CHECK(value == 0x13121110);
    REQUIRE(target.read_memory(0x08000102, 2, value));
    CHECK(value == 0x0302);
    CHECK(f.count("m8000000,400") == 1);
    CHECK(target.stats().cache_hits == 1);
    // Outside readable memory the line fails; the access is tried alone and fails too.
    CHECK_FALSE(target.read_memory(0x20000000, 4, value));
    CHECK(f.count("m20000000,4") == 1);
    // A write empties the cache.
    REQUIRE(target.write_memory(0x08000010, 4, 0xAABBCCDD));
    CHECK(f.count("M8000010,4:ddccbbaa") == 1);
    target.read_memory(0x08000010, 4, value);
    CHECK(f.count("m8000000,400") == 2);
}

TEST_CASE("rsp target: a running core is held for a burst of accesses, runs again when idle")
{
    Fixture f;
    RspTarget target(f.client, true);
    target.resume();
    CHECK_FALSE(target.poll_halted());
    uint32_t value = 0;
    REQUIRE(target.read_memory(0x08000000, 4, value));
    REQUIRE(target.read_memory(0x08000004, 4, value));
    CHECK(f.count("\x03") == 1);           // one halt for both
    CHECK(f.count("m8000000,400") == 1);   // and the line cache while held
    CHECK_FALSE(target.poll_halted());     // still running for the debugger
    CHECK(target.stats().access_halts == 1);
    const long resumes = f.count("c");
    target.idle();
    f.settle();
    CHECK(f.count("c") == resumes + 1);
    // The PC sample: interrupt, 'g', resume.
    CHECK(target.sample_pc() == 0x08000190u);
    f.settle();
    CHECK(f.count("\x03") == 2);
    CHECK(f.count("c") == resumes + 2);
}

TEST_CASE("rsp target: registers once per halt, in one round trip; writes by 'P'")
{
    Fixture f;
    RspTarget target(f.client, true);
    CHECK(target.read_register("pc") == 0x08000190u);
    CHECK(target.read_register("xpsr") == 0x41000000u);
    CHECK(target.read_register("d0") == 0x400000003F800000ull);
    CHECK(target.read_register("fpscr") == 0x03000000u);
    CHECK(f.count("g") == 1);
    CHECK(target.write_register("pc", 0x08000200));
    CHECK(f.count("Pf=00020008") == 1);
    CHECK(target.read_register("pc") == 0x08000200u);
    CHECK_FALSE(target.has_register("msp"));
    CHECK_FALSE(target.read_register("msp"));
    target.step();
    CHECK(target.read_register("pc") == 0x08000190u);   // read again after the step
    CHECK(f.count("g") == 2);
}

TEST_CASE("rsp target: breakpoints as Z0/z0, removed at detach; reset through the monitor")
{
    Fixture f;
    RspTarget target(f.client, true);
    target.set_breakpoints({0x08000350, 0x08000352});
    target.set_breakpoints({0x08000352});
    CHECK(f.count("Z0,8000350,2") == 1);
    CHECK(f.count("Z0,8000352,2") == 1);
    CHECK(f.count("z0,8000350,2") == 1);
    target.reset(true);
    CHECK(f.count("qRcmd," + rsp::to_hex("system_reset")) == 1);
    CHECK(target.poll_halted());
    target.detach();
    CHECK(f.count("z0,8000352,2") == 1);
    CHECK(f.count("D") == 1);
}

TEST_CASE("rsp target: a target that exits is gone: every access fails, nothing more is sent")
{
    fakes::FakeGdbServer server([](const std::string& p) {
        return p == "\x03" ? rsp::frame("W00") : qemu_like(p);
    });
    RspClient client(Endpoint{"127.0.0.1", server.port()}, RspClient::Options{std::chrono::seconds(2)});
    client.handshake();
    RspTarget target(client, false);
    std::string told;
    target.on_gone = [&](const std::string& reason) { told += reason; };
    uint32_t value = 0;
    CHECK_FALSE(target.read_memory(0x08000000, 4, value));   // the halt for it meets the exit
    CHECK(told == "the target exited with code 0");
    CHECK(target.gone_reason() == told);
    const size_t sent = server.received().size();
    target.halt();
    CHECK_FALSE(target.poll_halted());
    CHECK_FALSE(target.read_register("pc"));
    CHECK_FALSE(target.sample_pc());
    target.reset(true);
    target.detach();
    // Packets only: the client's "+" for the W00 may reach the server after `sent` was taken
    // (seen on a loaded Debian 13 root), and an acknowledgement is not an access.
    CHECK(server.packets_after(sent).empty());
    CHECK(told == "the target exited with code 0");   // told once
}

TEST_CASE("rsp target: MSP, PSP, CONTROL and the masks by the stub where the server has none, one run per halt")
{
    TaskOnPsp rig;
    auto& core = rig.core;   // references, not a structured binding: clang 14 cannot capture those in lambdas
    auto& server = rig.server;
    auto& client = rig.client;
    core.basepri = 0x20;
    auto steps = [&] { return server.count("s"); };

    RspTarget target(client, true);
    CHECK_FALSE(target.has_register("msp"));
    CHECK(target.read_special_register("msp") == 0x20000400u);
    CHECK(target.read_special_register("psp") == 0x20000800u);
    CHECK(target.read_special_register("control") == 2u);
    CHECK(target.read_special_register("basepri") == 0x20u);
    CHECK(target.read_special_register("primask") == 0u);
    CHECK_FALSE(target.read_special_register("r0"));
    CHECK(steps() == 6);   // one run for all six
    CHECK(target.stats().stub_runs == 1);
    CHECK(target.read_register("sp") == 0x20000800u);
    CHECK(core.r[0] == 0x1000u);

    // A register written: read again.
    CHECK(target.write_register("r0", 0x1000));
    CHECK(target.read_special_register("psp") == 0x20000800u);
    CHECK(steps() == 12);

    // Written by MSR: the active SP moves, and is read so.
    CHECK(target.write_special_register("psp", 0x20000700));
    CHECK(target.read_register("sp") == 0x20000700u);
    CHECK(target.read_special_register("psp") == 0x20000700u);
    CHECK(target.stats().stub_runs == 4);

    // Running, nothing is read; after the next halt, a new run.
    target.resume();
    CHECK_FALSE(target.read_special_register("msp"));
    target.halt();
    CHECK(target.read_special_register("msp") == 0x20000400u);
    CHECK(target.stats().stub_runs == 5);
}

TEST_CASE("rsp target: the stub puts r0-r5 back from the halt's register set, never from a set of an earlier state")
{
    TaskOnPsp rig;
    auto& core = rig.core;   // references, not a structured binding: clang 14 cannot capture those in lambdas
    auto& server = rig.server;
    auto& client = rig.client;
    RspTarget target(client, true);
    // The packets of the stub's run sent before its first step.
    auto setup_of_run = [&](auto&& run) {
        const size_t sent = server.received().size();
        run();
        std::vector<std::string> packets = server.packets_after(sent);
        packets.erase(std::find(packets.begin(), packets.end(), "s"), packets.end());
        return packets;
    };
    auto reads_a_register = [](const std::vector<std::string>& packets) {
        return std::any_of(packets.begin(), packets.end(), [](const std::string& p) { return p[0] == 'p'; });
    };

    // The halt's registers are read once ('g'), for the debugger and the stub alike.
    const auto first = setup_of_run([&] { CHECK(target.read_special_register("psp") == 0x20000800u); });
    CHECK(std::count(first.begin(), first.end(), "g") == 1);
    CHECK_FALSE(reads_a_register(first));
    CHECK(core.r[0] == 0x1000u);
    CHECK(core.r[5] == 0x1005u);

    // A register written by the debugger: the stub puts the new value back.
    CHECK(target.write_register("r1", 0xB1B1B1B1));
    const auto after_write = setup_of_run([&] { CHECK(target.read_special_register("msp") == 0x20000400u); });
    CHECK_FALSE(reads_a_register(after_write));
    CHECK(core.r[1] == 0xB1B1B1B1u);

    // The core ran and changed r2: the next halt's set is read again and r2 goes back as it is now.
    target.resume();
    core.r[2] = 0xC2C2C2C2;
    target.halt();
    const auto after_run = setup_of_run([&] { CHECK(target.read_special_register("control") == 2u); });
    CHECK(std::count(after_run.begin(), after_run.end(), "g") == 1);
    CHECK(core.r[2] == 0xC2C2C2C2u);

    // A step, likewise (the core runs a B . the test put at PC).
    core.memory[0x20000100] = 0xFE;
    core.memory[0x20000101] = 0xE7;
    CHECK(target.write_register("pc", 0x20000100));
    target.step();
    core.r[3] = 0xD3D3D3D3;
    const auto after_step = setup_of_run([&] { CHECK(target.read_special_register("primask") == 0u); });
    CHECK(std::count(after_step.begin(), after_step.end(), "g") == 1);
    CHECK(core.r[3] == 0xD3D3D3D3u);
    CHECK(core.r[15] == 0x20000100u);
    CHECK(target.stats().stub_runs == 4);
}

namespace {

// A two-core QEMU-like gdbstub (mps2-an521's shape): multiprocess, one process per core, each
// core a thread; Hg/Hc select one; core 1 describes a register more than core 0 (its FPU), so
// its 'p' numbers differ; all-stop: an interrupt stops both, 'c' resumes both; vCont;s steps one.
struct TwoCoreStub {
    std::string selected = "p01.01";
    uint32_t pc[2] = {0x10000380, 0x100002a8};
    fakes::FakeGdbServer server{[this](const std::string& p) { return answer(p); }};
    unsigned core_of(const std::string& thread) const { return thread == "p02.02" ? 1 : 0; }
    std::string answer(const std::string& p)
    {
        if (p.rfind("qSupported", 0) == 0)
            return rsp::frame("PacketSize=1000;qXfer:features:read+;multiprocess+");
        if (p.rfind("qXfer:features:read:target.xml:0,", 0) == 0) {
            std::string x = "l<?xml version=\"1.0\"?><target><feature name=\"m\">";
            for (int i = 0; i <= 12; ++i)
                x += "<reg name=\"r" + std::to_string(i) + "\" bitsize=\"32\"/>";
            x += "<reg name=\"sp\" bitsize=\"32\"/><reg name=\"lr\" bitsize=\"32\"/><reg name=\"pc\" bitsize=\"32\"/>"
                 "<reg name=\"xpsr\" bitsize=\"32\" regnum=\"25\"/>";
            if (core_of(selected) == 1)
                x += "<reg name=\"fpscr\" bitsize=\"32\" regnum=\"26\"/>";
            x += "<reg name=\"msp\" bitsize=\"32\" regnum=\"" + std::string(core_of(selected) == 1 ? "27" : "26") +
                 "\"/></feature></target>";
            return rsp::frame(x);
        }
        if (p == "?")
            return rsp::frame("T05thread:p01.01;");
        if (p == "vAttach;2")
            return rsp::frame("T05thread:p02.02;");
        if (p.rfind("vAttach;", 0) == 0)
            return rsp::frame("E22");
        if (p == "qfThreadInfo")
            return rsp::frame("mp01.01,p02.02");
        if (p == "qsThreadInfo")
            return rsp::frame("l");
        if (p.rfind("Hg", 0) == 0) {
            selected = p.substr(2);
            return rsp::frame("OK");
        }
        if (p == "\x03")
            return rsp::frame("T02thread:" + selected + ";");
        if (p.rfind("vCont;s:", 0) == 0) {
            pc[core_of(p.substr(8))] += 2;
            return rsp::frame("T05thread:" + p.substr(8) + ";");
        }
        if (p == "g") {
            std::string g;
            for (int i = 0; i < 15; ++i)
                g += "00000000";
            return rsp::frame(g + rsp::to_hex(std::string(reinterpret_cast<const char*>(&pc[core_of(selected)]), 4)) +
                              "00000001");
        }
        if (p == "p1a")   // 26: msp on core 0, fpscr on core 1
            return rsp::frame(core_of(selected) == 0 ? "00040020" : "00000003");
        if (p == "p1b")   // 27: msp on core 1
            return rsp::frame("00080020");
        if (p == "c")
            return std::string();
        return rsp::frame("OK");   // Hc, D, ...
    }
};

} // namespace

TEST_CASE("rsp target: two cores of an all-stop gdbstub, each with its own thread and description")
{
    TwoCoreStub stub;
    RspClient client{Endpoint{"127.0.0.1", stub.server.port()}, RspClient::Options{std::chrono::seconds(2)}};
    client.handshake();
    RspTarget machine(client, true);
    REQUIRE(machine.attach_cores(true) == 2);
    mcuprof::vprobe::DebugTarget& core0 = machine.core(0);
    mcuprof::vprobe::DebugTarget& core1 = machine.core(1);
    // Each core's registers from its own thread, numbered by its own description.
    CHECK(core0.read_register("pc") == 0x10000380);
    CHECK(core1.read_register("pc") == 0x100002a8);
    CHECK(core0.read_register("msp") == 0x20000400);
    CHECK(core1.read_register("msp") == 0x20000800);
    CHECK(core1.has_register("fpscr"));
    CHECK_FALSE(core0.has_register("fpscr"));
    // A core's step steps that core alone.
    core1.step();
    CHECK(stub.server.count("vCont;s:p02.02") == 1);
    CHECK(stub.server.count("s") == 0);
    CHECK(core1.read_register("pc") == 0x100002aa);
    CHECK(core0.read_register("pc") == 0x10000380);
    // All-stop: the machine resumes only once both cores are resumed.
    core1.resume();
    CHECK(stub.server.count("c") == 0);
    CHECK(core1.read_register("pc") == std::nullopt);   // running for its debugger (stalled)
    CHECK_FALSE(core1.poll_halted());
    core0.resume();
    // 'c' has no reply: wait until the fake, in its own thread, has it (a bound far above it).
    for (int waited = 0; stub.server.count("c") == 0 && waited < 10000; ++waited)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(stub.server.count("c") == 1);
    // A halt of core 0 stops the machine; core 1 still runs for its debugger.
    core0.halt();
    CHECK(core0.poll_halted());
    CHECK_FALSE(core1.poll_halted());
    core1.halt();
    CHECK(core1.poll_halted());
    CHECK(stub.server.count("\x03") == 1);   // one interrupt for both
    CHECK(machine.stats().halt_skews.size() == 1);
}
