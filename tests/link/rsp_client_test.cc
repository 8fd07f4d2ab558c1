#include <doctest/doctest.h>

#include <algorithm>

#include "../fakes/fake_gdb_server.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/rsp_client.h"

using namespace mcuprof::transport;

namespace {

// A target description split over two documents, as QEMU serves it: r0-r15 numbered
// implicitly, xpsr with an explicit regnum 25 (QEMU's arm-m-profile.xml).
const std::string target_xml =
    "<?xml version=\"1.0\"?><!DOCTYPE target SYSTEM \"gdb-target.dtd\"><target><architecture>arm</architecture>"
    "<xi:include href=\"core.xml\"/></target>";

std::string core_xml()
{
    std::string x = "<?xml version=\"1.0\"?><feature name=\"org.gnu.gdb.arm.m-profile\">";
    for (int i = 0; i <= 12; ++i)
        x += "<reg name=\"r" + std::to_string(i) + "\" bitsize=\"32\"/>";
    x += "<reg name=\"sp\" bitsize=\"32\"/><reg name=\"lr\" bitsize=\"32\"/><reg name=\"pc\" bitsize=\"32\"/>"
         "<reg name=\"xpsr\" bitsize=\"32\" regnum=\"25\"/></feature>";
    return x;
}

// The 'g' reply: r0..r15 then xpsr, each little-endian; r13 (sp) 0x20001000, r14 (lr)
// 0x08000101, r15 (pc) 0x08000190, xpsr 0x41000000 would be at offset 64 -- but this
// server's 'g' stops after pc, so xpsr must come from 'p19'.
std::string g_reply()
{
    std::string g;
    for (int i = 0; i < 13; ++i)
        g += "00000000";
    return g + "00100020" + "01010008" + "90010008";
}

std::string reply(const std::string& payload)
{
    return rsp::frame(payload);
}

std::string standard_script(const std::string& p)
{
    if (p.rfind("qSupported", 0) == 0)
        return reply("PacketSize=1000;qXfer:features:read+");
    if (p.rfind("qXfer:features:read:target.xml:0,", 0) == 0)
        return reply("l" + target_xml);
    if (p.rfind("qXfer:features:read:core.xml:0,", 0) == 0)
        return reply("l" + core_xml());
    if (p == "?")
        return reply("T05thread:01;");
    if (p == "g")
        return reply(g_reply());
    if (p == "p19")
        return reply("00000041");
    if (p == "\x03")
        return reply("T02thread:01;");
    if (p == "c")
        return "";
    if (p == "D")
        return reply("OK");
    return reply("");
}

Endpoint local(uint16_t port)
{
    Endpoint e;
    e.port = port;
    return e;
}

RspClient::Options quick()
{
    RspClient::Options o;
    o.timeout = std::chrono::seconds(30);   // a bound for a hang: the fake replies at once
    return o;
}

} // namespace

TEST_CASE("rsp client: handshake, registers by name from the target description, one round trip")
{
    fakes::FakeGdbServer server(standard_script);
    RspClient client(local(server.port()), quick());
    const StopReply stop = client.handshake();
    CHECK(stop.kind == StopReply::Kind::signal);
    CHECK(stop.value == 5);
    CHECK(client.target().architecture() == "arm");
    REQUIRE(client.target().find("xPSR") != nullptr);   // names compare without case (OpenOCD: xPSR)
    CHECK(client.target().find("xpsr")->number == 25);
    CHECK(client.target().find("pc")->g_offset == 60);

    // First read: 'g' alone (its length is unknown), then 'p19' for xpsr beyond it.
    auto values = client.read_registers({"pc", "lr", "sp", "xpsr"});
    CHECK(values == std::vector<uint32_t>{0x08000190, 0x08000101, 0x20001000, 0x41000000});
    // Second read: 'g' and 'p19' go out together.
    values = client.read_registers({"pc", "xpsr"});
    CHECK(values == std::vector<uint32_t>{0x08000190, 0x41000000});
    const auto got = server.received();
    CHECK(std::count(got.begin(), got.end(), "g") == 2);
    CHECK(std::count(got.begin(), got.end(), "p19") == 2);
    CHECK_THROWS_AS(client.read_registers({"r99"}), Error);
}

TEST_CASE("rsp client: a stop reply sent on connection does not answer the first request (QEMU)")
{
    fakes::FakeGdbServer server(standard_script, rsp::frame("T02thread:01;"));
    RspClient client(local(server.port()), quick());
    CHECK(client.handshake().value == 5);
}

TEST_CASE("rsp client: a NAK makes it send the packet again; console output is passed on")
{
    int asked = 0;
    fakes::FakeGdbServer server([&](const std::string& p) -> std::string {
        if (p == "qRcmd,696e666f")   // "info"
            return ++asked == 1 ? std::string("-") : rsp::frame("O" + rsp::to_hex("hello\n")) + rsp::frame("OK");
        return standard_script(p);
    });
    RspClient client(local(server.port()), quick());
    client.handshake();
    CHECK(client.monitor("info") == "hello\n");
    CHECK(asked == 2);
}

TEST_CASE("rsp client: OpenOCD's keep-alive, a bare 'O' while the target runs, is not a stop reply")
{
    fakes::FakeGdbServer server([&](const std::string& p) -> std::string {
        if (p == "\x03")
            return rsp::frame("O") + rsp::frame("O") + rsp::frame("T05thread:01;");
        return standard_script(p);
    });
    RspClient client(local(server.port()), quick());
    client.handshake();
    client.resume();
    CHECK(client.interrupt().value == 5);
}

TEST_CASE("rsp client: resume, interrupt, exit; a refused detach resumes the target anyway")
{
    bool exit_next = false;
    fakes::FakeGdbServer server([&](const std::string& p) -> std::string {
        if (p == "\x03" && exit_next)
            return rsp::frame("W00");
        if (p == "D" || p == "D;1")
            return rsp::frame("E22");
        return standard_script(p);
    });
    RspClient client(local(server.port()), quick());
    client.handshake();
    client.resume();
    CHECK_FALSE(client.poll_stop(std::chrono::milliseconds(20)));
    CHECK(client.interrupt().value == 2);
    client.resume();
    exit_next = true;
    const StopReply exit = client.interrupt();
    CHECK(exit.kind == StopReply::Kind::exited);
    CHECK(exit.value == 0);
    client.detach();   // refused twice: not an error, as long as the target runs
    // The last thing the server saw is the 'c' that leaves the target running.
    for (int i = 0; i < 100 && server.received().back() != "c"; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(server.received().back() == "c");
}

TEST_CASE("rsp client: where the server offers no-ack mode it is used, and nothing more is acknowledged")
{
    fakes::FakeGdbServer server([](const std::string& p) -> std::string {
        if (p.rfind("qSupported", 0) == 0)
            return rsp::frame("PacketSize=1000;qXfer:features:read+;QStartNoAckMode+");
        if (p == "QStartNoAckMode")
            return rsp::frame("OK");
        return standard_script(p);
    });
    RspClient client(local(server.port()), quick());
    client.handshake();
    CHECK(client.no_ack());
    client.read_registers({"pc"});
    const auto got = server.received();
    // The client's '+' for the OK of QStartNoAckMode is the last one it sends (GDB manual,
    // "Packet Acknowledgment").
    const auto no_ack = std::find(got.begin(), got.end(), "QStartNoAckMode");
    REQUIRE(no_ack != got.end());
    const auto last_ack = std::find(got.rbegin(), got.rend(), "+");
    CHECK(std::distance(got.begin(), last_ack.base()) - 1 <= std::distance(got.begin(), no_ack) + 1);
}

TEST_CASE("rsp client: a silent server is a time-out, a closed one an error, both naming the peer")
{
    fakes::FakeGdbServer server([](const std::string&) { return std::string(); });
    RspClient::Options o;
    o.timeout = std::chrono::milliseconds(100);
    RspClient client(local(server.port()), o);
    CHECK_THROWS_WITH_AS(client.handshake(), doctest::Contains("gdb 127.0.0.1:"), Error);
    // A port bound but not listening refuses connections for as long as we hold it.
    const int held = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(held, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    ::getsockname(held, reinterpret_cast<sockaddr*>(&address), &length);
    CHECK_THROWS_WITH_AS(RspClient(local(ntohs(address.sin_port)), o), doctest::Contains("nothing listens on 127.0.0.1:"),
                         Error);
    ::close(held);
}

TEST_CASE("rsp client: a stop reply with a bad checksum is NAKed and its resend taken")
{
    // The server's first stop reply is damaged (checksum 00), its resend is whole: as QEMU
    // does after a '-' (it sends its last packet again).
    fakes::FakeGdbServer server([&](const std::string& p) -> std::string {
        if (p == "\x03")
            return "$T02thread:01;#00" + rsp::frame("T02thread:01;");
        return standard_script(p);
    });
    RspClient client(local(server.port()), quick());
    client.handshake();
    client.resume();
    CHECK(client.interrupt().value == 2);
    auto naked = [&] {
        const auto received = server.received();
        return std::find(received.begin(), received.end(), "-") != received.end();
    };
    for (int i = 0; i < 100 && !naked(); ++i)   // the server reads the '-' in its own thread
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(naked());
}

TEST_CASE("rsp client: a detach refused as a plain 'D' (QEMU in multiprocess mode) is retried with the pid")
{
    fakes::FakeGdbServer server([&](const std::string& p) -> std::string {
        if (p == "D")
            return rsp::frame("E22");
        if (p == "D;1")
            return rsp::frame("OK");
        return standard_script(p);
    });
    RspClient client(local(server.port()), quick());
    client.handshake();
    client.detach();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));   // anything sent after has arrived
    const std::vector<std::string> seen = server.received();
    const auto retried = std::find(seen.begin(), seen.end(), "D;1");
    REQUIRE(retried != seen.end());
    CHECK(std::find(retried, seen.end(), "c") == seen.end());   // detached: no 'c' needed
}

TEST_CASE("rsp client: detaching from OpenOCD tells it to resume first; QEMU and other servers get the detach alone")
{
    // OpenOCD 0.12 answers qqemu.Supported with an empty packet and prints its banner for
    // `monitor version` as console output; QEMU 7.2 answers its own query; a third server
    // refuses the monitor command.
    const std::string version = "qRcmd," + rsp::to_hex("version"), resume = "qRcmd," + rsp::to_hex("resume");
    for (const std::string server_kind : {"openocd", "qemu", "other"}) {
        CAPTURE(server_kind);
        fakes::FakeGdbServer server([&](const std::string& p) -> std::string {
            if (p == "qqemu.Supported")
                return rsp::frame(server_kind == "qemu" ? "sstepbits;sstep;PhyMemMode" : "");
            if (p == version)
                return server_kind == "openocd"
                           ? rsp::frame("O" + rsp::to_hex("Open On-Chip Debugger 0.12.0\n")) + rsp::frame("OK")
                           : rsp::frame("E01");
            if (p == resume || p == "D")
                return rsp::frame("OK");
            return standard_script(p);
        });
        RspClient client(local(server.port()), quick());
        client.handshake();
        CHECK(client.is_qemu() == (server_kind == "qemu"));
        client.detach();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));   // anything sent after has arrived
        const std::vector<std::string> seen = server.received();
        const auto detached = std::find(seen.begin(), seen.end(), "D");
        REQUIRE(detached != seen.end());
        CHECK(std::count(seen.begin(), detached, resume) == (server_kind == "openocd" ? 1 : 0));
        CHECK(std::count(seen.begin(), seen.end(), "qqemu.Supported") == 1);   // asked once
        CHECK(std::count(seen.begin(), seen.end(), version) == (server_kind == "qemu" ? 0 : 1));
    }
}

TEST_CASE("rsp client: an error answer to 'g' is the server's refusal, named, not register bytes")
{
    // QEMU replaying its own shutdown answers 'g' with E14 after good answers: the
    // client read pc from offset 60 of a 3-byte reply and threw std::out_of_range.
    int g_reads = 0;
    fakes::FakeGdbServer server([&g_reads](const std::string& p) {
        if (p == "g" && ++g_reads > 1)
            return reply("E14");
        return standard_script(p);
    });
    RspClient client(local(server.port()), quick());
    client.handshake();
    CHECK(client.read_registers({"pc", "xpsr"}) == std::vector<uint32_t>{0x08000190, 0x41000000});
    try {
        client.read_registers({"pc", "xpsr"});
        FAIL("an E14 answer to 'g' was read as registers");
    } catch (const Error& e) {
        CHECK(e.kind() == Error::Kind::protocol);
        CHECK(std::string(e.what()).find("E14") != std::string::npos);
    }
}
