#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <chrono>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "mcuprof/vprobe/stlink_server.h"
#include "vprobe_test_support.h"

using namespace mcuprof::vprobe;

namespace {

void put32(std::string& out, size_t at, uint32_t value)
{
    for (int i = 0; i < 4; ++i)
        out[at + i] = char((value >> (8 * i)) & 0xFF);
}

uint32_t get32(const std::string& in, size_t at)
{
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i)
        value |= uint32_t(uint8_t(in.at(at + i))) << (8 * i);
    return value;
}

// One target behind one probe, which several hosts may share.
struct Rig {
    vprobe_test::FakeTarget target;
    VirtualProbe probe{target};
    StlinkProbe stlink{probe};
};

// OpenOCD's side of the stlink-server protocol (stlink_usb.c, stlink_tcp_open and
// stlink_tcp_xfer_noerrcheck), written out by hand from its byte layout.
struct Host {
    std::shared_ptr<Rig> rig;
    vprobe_test::FakeTarget& target;
    VirtualProbe& probe;
    StlinkServerProtocol server;
    uint32_t connection = 0;

    std::string exchange(const std::string& request)
    {
        std::string replies;
        CHECK(server.feed(request, replies));
        return replies;
    }
    // A USB command: the 16 command bytes, the data to the probe, or the length to read back.
    // Returns what follows the server's status word (which must be OK).
    std::string usb(std::initializer_list<uint8_t> command, uint32_t read_length, const std::string& data = "")
    {
        std::string request(32, '\0');
        request[0] = 0x05;
        put32(request, 4, connection);   // the connection id OPEN_DEV gave
        size_t i = 8;
        for (const uint8_t b : command)
            request[i++] = char(b);
        request[24] = char(data.empty() ? 1 : 0);
        put32(request, 28, data.empty() ? read_length : uint32_t(data.size()));
        const std::string reply = exchange(request + data);
        REQUIRE(reply.size() == 4 + (data.empty() ? read_length : 0));
        CHECK(get32(reply, 0) == stlink::server_ok);
        return reply.substr(4);
    }

    explicit Host(std::shared_ptr<Rig> shared = std::make_shared<Rig>())
        : rig(std::move(shared)), target(rig->target), probe(rig->probe), server(rig->stlink)
    {
        // Version, refresh, count, device info, open: as stlink_tcp_open does.
        const std::string version = exchange(std::string("\x06\x01\x00\x00", 4));
        REQUIRE(version.size() == 16);
        CHECK(exchange(std::string("\x00\x00", 2)).size() == 4);
        CHECK(get32(exchange(std::string("\x01", 1)), 0) == 1);
        std::string info_request(8, '\0');
        info_request[0] = 0x02;
        put32(info_request, 4, 41);
        const std::string info = exchange(info_request);
        REQUIRE(info.size() == 45);
        CHECK((uint8_t(info[40]) | uint8_t(info[41]) << 8) == 0x0483);
        CHECK((uint8_t(info[42]) | uint8_t(info[43]) << 8) == 0x374E);
        CHECK(info[44] == 0);   // nobody holds it exclusively, even with another client connected
        std::string open(8, '\0');
        open[0] = 0x03;
        put32(open, 4, get32(info, 4));
        const std::string opened = exchange(open);
        REQUIRE(opened.size() == 8);
        CHECK(get32(opened, 0) == stlink::server_ok);
        connection = get32(opened, 4);
        CHECK(connection != 0);
        CHECK(server.connection() == connection);
        // Enter SWD, power up the debug domain as OpenOCD's dap_dp_init does.
        CHECK(uint8_t(usb({0xF2, 0x30, 0xA3}, 2)[0]) == stlink::ok);
        CHECK(uint8_t(usb({0xF2, 0x46, 0xFF, 0xFF, 0x04, 0x00, 0x00, 0x00, 0x00, 0x50}, 2)[0]) == stlink::ok);
    }

    std::string read_memory(uint8_t sub, uint32_t address, uint16_t length, uint32_t read_length)
    {
        return usb({0xF2, sub, uint8_t(address), uint8_t(address >> 8), uint8_t(address >> 16), uint8_t(address >> 24),
                    uint8_t(length), uint8_t(length >> 8), 0},
                   read_length);
    }
    void write_memory(uint8_t sub, uint32_t address, const std::string& data)
    {
        const auto length = uint16_t(data.size());
        usb({0xF2, sub, uint8_t(address), uint8_t(address >> 8), uint8_t(address >> 16), uint8_t(address >> 24),
             uint8_t(length), uint8_t(length >> 8), 0},
            0, data);
    }
    // GETLASTRWSTATUS2: the status byte and the faulting address.
    std::pair<uint8_t, uint32_t> last_status()
    {
        const std::string status = usb({0xF2, 0x3E}, 12);
        return {uint8_t(status[0]), get32(status, 4)};
    }
    uint32_t read_debug_register(uint32_t address)
    {
        const std::string reply = usb({0xF2, 0x36, uint8_t(address), uint8_t(address >> 8), uint8_t(address >> 16),
                                       uint8_t(address >> 24)},
                                      8);
        CHECK(uint8_t(reply[0]) == stlink::ok);
        return get32(reply, 4);
    }
    void write_debug_register(uint32_t address, uint32_t value)
    {
        const std::string reply =
            usb({0xF2, 0x35, uint8_t(address), uint8_t(address >> 8), uint8_t(address >> 16), uint8_t(address >> 24),
                 uint8_t(value), uint8_t(value >> 8), uint8_t(value >> 16), uint8_t(value >> 24)},
                2);
        CHECK(uint8_t(reply[0]) == stlink::ok);
    }
};

} // namespace

TEST_CASE("st-link: the probe says it is an STLINK-V3 with firmware J7, a 3.3 V target, SWD DPIDR 0x2BA01477")
{
    Host host;
    const std::string version = host.usb({0xF1}, 6);
    CHECK((uint8_t(version[0]) >> 4) == 3);   // big-endian version word: V3, J0, S0 -> ask GET_VERSION_EX
    const std::string extended = host.usb({0xFB}, 12);
    CHECK(uint8_t(extended[0]) == 3);
    CHECK(uint8_t(extended[2]) == stlink::firmware_jtag_version);
    const std::string voltage = host.usb({0xF7}, 8);
    CHECK(2.0 * get32(voltage, 4) * 1.2 / get32(voltage, 0) == doctest::Approx(3.3));
    CHECK(uint8_t(host.usb({0xF5}, 2)[0]) == stlink::mode_debug);
    const std::string idcodes = host.usb({0xF2, 0x31}, 12);
    CHECK(get32(idcodes, 4) == 0x2BA01477);
    // DP CTRL/STAT after the power-up request: both ACKs (bits 29 and 31) beside the requests.
    const std::string ctrl_stat = host.usb({0xF2, 0x45, 0xFF, 0xFF, 0x04, 0x00}, 8);
    CHECK(get32(ctrl_stat, 4) == 0xF0000000);
    // AP 0's IDR (0xFC): the Cortex-M4 AHB-AP.
    CHECK(get32(host.usb({0xF2, 0x45, 0x00, 0x00, 0xFC, 0x00}, 8), 4) == 0x24770011);
}

TEST_CASE("st-link: memory in 8, 16 and 32 bits, with and without increment, and a bus fault")
{
    Host host;
    host.target.map(0x20000000, 64);
    for (uint32_t i = 0; i < 16; ++i)
        host.target.memory[0x20000000 + i] = uint8_t(0x10 + i);
    CHECK(host.read_memory(0x07, 0x20000000, 8, 8) == "\x10\x11\x12\x13\x14\x15\x16\x17");
    CHECK(host.last_status().first == stlink::ok);
    CHECK(host.read_memory(0x47, 0x20000002, 4, 4) == "\x12\x13\x14\x15");
    // One byte: OpenOCD reads two back (stlink_usb_read_mem8).
    CHECK(host.read_memory(0x0C, 0x20000003, 1, 2) == std::string("\x13\x00", 2));
    CHECK(host.read_memory(0x0C, 0x20000005, 3, 3) == "\x15\x16\x17");

    host.write_memory(0x08, 0x20000010, "\xA0\xA1\xA2\xA3\xB0\xB1\xB2\xB3");
    host.write_memory(0x48, 0x20000018, "\xC0\xC1");
    host.write_memory(0x0D, 0x2000001B, "\xD3");
    CHECK(host.last_status().first == stlink::ok);
    CHECK(host.read_memory(0x07, 0x20000010, 12, 12) ==
          std::string("\xA0\xA1\xA2\xA3\xB0\xB1\xB2\xB3\xC0\xC1\x00\xD3", 12));

    // Without increment: the same word four times.
    CHECK(host.read_memory(0x54, 0x20000010, 16, 16) == std::string("\xA0\xA1\xA2\xA3", 4) + "\xA0\xA1\xA2\xA3" +
                                                            "\xA0\xA1\xA2\xA3" + "\xA0\xA1\xA2\xA3");

    // Past the end of the mapped 64 bytes: a fault at 0x20000040, reported by the status.
    const std::string faulted = host.read_memory(0x07, 0x20000038, 16, 16);
    CHECK(faulted.substr(0, 8) == std::string(8, '\0'));   // the mapped bytes before the fault
    const auto [status, address] = host.last_status();
    CHECK(status == stlink::swd_ap_fault);
    CHECK(address == 0x20000040);
    // The probe cleared the sticky error: the next access works.
    CHECK(host.read_memory(0x07, 0x20000000, 4, 4) == "\x10\x11\x12\x13");
    CHECK(host.last_status().first == stlink::ok);
}

TEST_CASE("st-link: run control through DHCSR and core registers through DCRSR/DCRDR (hla)")
{
    Host host;
    using namespace cortex_m;
    host.write_debug_register(dhcsr, dbgkey | c_debugen | c_halt);
    CHECK(host.target.halted);
    CHECK((host.read_debug_register(dhcsr) & s_halt) != 0);
    const std::string pc = host.usb({0xF2, 0x33, 15}, 8);   // READREG: REGSEL 15 is the PC
    CHECK(uint8_t(pc[0]) == stlink::ok);
    CHECK(get32(pc, 4) == 0x08000100);
    CHECK(uint8_t(host.usb({0xF2, 0x34, 15, 0x00, 0x02, 0x00, 0x08}, 2)[0]) == stlink::ok);
    CHECK(host.target.registers["pc"] == 0x08000200);
    host.write_debug_register(dhcsr, dbgkey | c_debugen);
    CHECK_FALSE(host.target.halted);
    // A running core has no register transfer: READREG fails instead of answering garbage.
    CHECK(uint8_t(host.usb({0xF2, 0x33, 15}, 8)[0]) == stlink::fault);
    // DWT_PCSR read four times without increment (OpenOCD's profile): four PC samples.
    host.write_debug_register(demcr, trcena);
    const std::string samples = host.read_memory(0x54, dwt_pcsr, 16, 16);
    for (int i = 0; i < 4; ++i)
        CHECK(get32(samples, 4 * i) == host.target.running_pc);
    CHECK(host.probe.cortex().pc_samples() == 4);
    // NRST pulled low resets the system.
    host.usb({0xF2, 0x3C, 0x00}, 2);
    host.usb({0xF2, 0x3C, 0x01}, 2);
    CHECK(host.target.resets == 1);
}

TEST_CASE("st-link: a request split anywhere is answered once whole; CLOSE_DEV ends the session")
{
    Host host;
    host.target.map(0x20000000, 16, 0x5A);
    std::string request(32, '\0');
    request[0] = 0x05;
    put32(request, 4, host.connection);
    const std::string command("\xF2\x07\x00\x00\x00\x20\x08\x00", 8);
    request.replace(8, command.size(), command);
    request[24] = 1;
    put32(request, 28, 8);
    std::string replies;
    for (const char c : request + request) {
        CHECK(host.server.feed(std::string_view(&c, 1), replies));
    }
    REQUIRE(replies.size() == 2 * 12);
    CHECK(replies.substr(4, 8) == std::string(8, '\x5A'));
    CHECK(replies.substr(16, 8) == std::string(8, '\x5A'));

    std::string close(8, '\0');
    close[0] = 0x04;
    put32(close, 4, host.connection);
    replies.clear();
    CHECK_FALSE(host.server.feed(close, replies));
    CHECK(get32(replies, 0) == stlink::server_ok);
}

TEST_CASE("probe server: a USB command's answer waits the reply latency; the server's own requests do not")
{
    vprobe_test::FakeTarget target;
    VirtualProbe probe(target);
    StlinkServer server(probe, "127.0.0.1", 0);
    server.reply_latency = std::chrono::milliseconds(300);
    std::thread serving([&] { server.serve(false); });

    const int client = vprobe_test::connect_loopback(server.port());
    REQUIRE(client >= 0);
    auto exchange = [&](const std::string& request, size_t length) {
        const auto sent = std::chrono::steady_clock::now();
        REQUIRE(::send(client, request.data(), request.size(), 0) == ssize_t(request.size()));
        std::string reply(length, '\0');
        size_t got = 0;
        while (got < length) {
            const ssize_t n = ::recv(client, reply.data() + got, length - got, 0);
            REQUIRE(n > 0);
            got += size_t(n);
        }
        return std::pair<std::string, std::chrono::steady_clock::duration>{reply, std::chrono::steady_clock::now() - sent};
    };
    const auto latency = std::chrono::milliseconds(300);
    CHECK(exchange(std::string("\x01", 1), 4).second < latency);   // number of devices: the server's own
    std::string open(8, '\0');
    open[0] = 0x03;
    put32(open, 4, 1);
    const auto [opened, open_took] = exchange(open, 8);
    CHECK(open_took < latency);
    for (int i = 0; i < 2; ++i) {
        std::string usb(32, '\0');   // GET_VERSION, 6 bytes back
        usb[0] = 0x05;
        put32(usb, 4, get32(opened, 4));
        usb[8] = char(0xF1);
        usb[24] = 1;
        put32(usb, 28, 6);
        CHECK(exchange(usb, 10).second >= latency);
    }
    ::close(client);
    serving.join();
}

TEST_CASE("st-link: READALLREGS answers the status word and 21 register words in one USB command")
{
    Host host;
    using namespace cortex_m;
    // Every core register distinct, so a word in the wrong place shows.
    for (unsigned r = 0; r <= 12; ++r)
        host.target.registers["r" + std::to_string(r)] = 0x11110000u + r;
    host.target.registers["sp"] = 0x20001F00;
    host.target.registers["lr"] = 0x08000321;
    host.target.registers["pc"] = 0x08000456;
    host.target.registers["xpsr"] = 0x61000003;
    host.target.special = {{"msp", 0x20001F00}, {"psp", 0x20000800}, {"control", 0x02},
                           {"faultmask", 0x01}, {"basepri", 0x40}, {"primask", 0x01}};
    host.write_debug_register(dhcsr, dbgkey | c_debugen | c_halt);
    const uint64_t commands_before = host.rig->stlink.usb_commands();
    const uint64_t transfers_before = host.probe.cortex().register_transfers();

    // OpenOCD 0.12's stlink_usb_read_regs (API v2): 0xF2 0x3A, 88 bytes back, the status at
    // 0 (stlink_usb_xfer_errcheck), the registers from 4.
    const std::string reply = host.usb({0xF2, 0x3A}, 88);
    std::string expected(88, '\0');
    expected[0] = char(stlink::ok);
    const uint32_t words[21] = {0x11110000, 0x11110001, 0x11110002, 0x11110003, 0x11110004, 0x11110005,
                                0x11110006, 0x11110007, 0x11110008, 0x11110009, 0x1111000A, 0x1111000B,
                                0x1111000C, 0x20001F00, 0x08000321, 0x08000456,   // r13 (sp), lr, pc
                                0x61000003, 0x20001F00, 0x20000800,                // xPSR, MSP, PSP
                                0x00000000,                                        // REGSEL 19: reserved
                                0x02014001};   // CONTROL 2, FAULTMASK 1, BASEPRI 0x40, PRIMASK 1
    for (unsigned i = 0; i < 21; ++i)
        put32(expected, 4 + 4 * i, words[i]);
    CHECK(reply == expected);
    // One command on the USB, and through the same DCRSR path as READREG: 21 transfers.
    CHECK(host.rig->stlink.usb_commands() == commands_before + 1);
    CHECK(host.probe.cortex().register_transfers() == transfers_before + 21);
    CHECK(host.rig->stlink.usb_command_kinds().at("READALLREGS") == 1);
    // READREG answers the same value with its own status word (8 bytes, the value at 4).
    const std::string psp = host.usb({0xF2, 0x33, 18}, 8);
    CHECK(psp == std::string("\x80\x00\x00\x00\x00\x08\x00\x20", 8));

    // A running core: no register transfer completes, the status says so.
    host.write_debug_register(dhcsr, dbgkey | c_debugen);
    CHECK(uint8_t(host.usb({0xF2, 0x3A}, 88)[0]) == stlink::fault);
}

TEST_CASE("st-link: two clients on one probe, each with its connection, its answers and its count")
{
    Host first;
    first.target.map(0x20000000, 16);
    for (uint32_t i = 0; i < 16; ++i)
        first.target.memory[0x20000000 + i] = uint8_t(0xA0 + i);
    Host second(first.rig);   // opens the same device, shared
    CHECK(second.connection != first.connection);
    const StlinkProbe& stlink = first.rig->stlink;
    const uint64_t first_opening = stlink.usb_commands(first.connection);
    const uint64_t second_opening = stlink.usb_commands(second.connection);
    CHECK(first_opening == 2);   // ENTER and the DP CTRL/STAT write of Host()
    CHECK(second_opening == 2);

    // Interleaved: each reads its own address and gets its own bytes.
    for (int round = 0; round < 3; ++round) {
        CHECK(first.read_memory(0x07, 0x20000000, 4, 4) == "\xA0\xA1\xA2\xA3");
        CHECK(second.read_memory(0x07, 0x20000008, 4, 4) == "\xA8\xA9\xAA\xAB");
        CHECK(second.last_status().first == stlink::ok);
    }
    CHECK(stlink.usb_commands(first.connection) == first_opening + 3);
    CHECK(stlink.usb_commands(second.connection) == second_opening + 6);
    CHECK(stlink.usb_commands() == first_opening + second_opening + 9);

    // A request with another client's connection id is refused, not performed.
    std::string stray(32, '\0');
    stray[0] = 0x05;
    put32(stray, 4, first.connection);
    stray[8] = char(0xF1);
    stray[24] = 1;
    put32(stray, 28, 6);
    std::string refused;
    CHECK(second.server.feed(stray, refused));
    CHECK(get32(refused, 0) == stlink::server_bad_parameter);
    CHECK(stlink.usb_commands() == first_opening + second_opening + 9);

    // The first closes its device: the second goes on, its count kept apart.
    std::string close(8, '\0');
    close[0] = 0x04;
    put32(close, 4, first.connection);
    std::string replies;
    CHECK_FALSE(first.server.feed(close, replies));
    CHECK_FALSE(stlink.is_open(first.connection));
    CHECK(stlink.in_use());
    CHECK(second.read_memory(0x07, 0x2000000C, 4, 4) == "\xAC\xAD\xAE\xAF");
    CHECK(stlink.usb_commands(first.connection) == first_opening + 3);
    CHECK(stlink.usb_commands_by_connection_text() ==
          "connection " + std::to_string(first.connection) + ": " + std::to_string(first_opening + 3) +
              ", connection " + std::to_string(second.connection) + ": " + std::to_string(second_opening + 7));
    // The second dies without CLOSE_DEV: its connection closes too.
    second.server.disconnected();
    CHECK_FALSE(stlink.in_use());
}

namespace {

// A raw client over TCP: sends a request, reads exactly `length` bytes of answer.
std::string over_tcp(int socket, const std::string& request, size_t length)
{
    REQUIRE(::send(socket, request.data(), request.size(), 0) == ssize_t(request.size()));
    std::string reply(length, '\0');
    size_t got = 0;
    while (got < length) {
        const ssize_t n = ::recv(socket, reply.data() + got, length - got, 0);
        REQUIRE(n > 0);
        got += size_t(n);
    }
    return reply;
}

// OPEN_DEV of device 1 over TCP: the connection id.
uint32_t open_over_tcp(int socket)
{
    std::string open(8, '\0');
    open[0] = 0x03;
    put32(open, 4, 1);
    const std::string opened = over_tcp(socket, open, 8);
    CHECK(get32(opened, 0) == stlink::server_ok);
    return get32(opened, 4);
}

// A USB command reading `length` bytes back, as the server request of `connection`.
std::string usb_request(uint32_t connection, std::initializer_list<uint8_t> command, uint32_t length)
{
    std::string request(32, '\0');
    request[0] = 0x05;
    put32(request, 4, connection);
    size_t i = 8;
    for (const uint8_t b : command)
        request[i++] = char(b);
    request[24] = 1;
    put32(request, 28, length);
    return request;
}

std::string usb_over_tcp(int socket, uint32_t connection, std::initializer_list<uint8_t> command, uint32_t length)
{
    const std::string reply = over_tcp(socket, usb_request(connection, command, length), 4 + length);
    CHECK(get32(reply, 0) == stlink::server_ok);
    return reply.substr(4);
}

// Two clients connected to `server` at once, each with the device open.
struct TwoClients {
    int a = -1, b = -1;
    uint32_t id_a = 0, id_b = 0;

    explicit TwoClients(const StlinkServer& server)
        : a(vprobe_test::connect_loopback(server.port())), b(vprobe_test::connect_loopback(server.port()))
    {
        REQUIRE(a >= 0);
        REQUIRE(b >= 0);
        id_a = open_over_tcp(a);
        id_b = open_over_tcp(b);
        CHECK(id_a != id_b);
    }
};

} // namespace

TEST_CASE("st-link server: two TCP clients at once; one leaving leaves the other working; ends with the last")
{
    vprobe_test::FakeTarget target;
    target.map(0x20000000, 8, 0x5A);
    VirtualProbe probe(target);
    StlinkServer server(probe, "127.0.0.1", 0);
    std::vector<std::string> gone;
    server.on_disconnected = [&](const std::string& who) { gone.push_back(who); };
    std::thread serving([&] { server.serve(false); });
    const auto [a, b, id_a, id_b] = TwoClients(server);
    // B enters SWD, which powers the debug domain up for both (one probe, one target).
    CHECK(uint8_t(usb_over_tcp(b, id_b, {0xF2, 0x30, 0xA3}, 2)[0]) == stlink::ok);
    const std::initializer_list<uint8_t> read8{0xF2, 0x07, 0x00, 0x00, 0x00, 0x20, 0x08, 0x00};
    for (int round = 0; round < 3; ++round) {
        CHECK(usb_over_tcp(a, id_a, {0xF2, 0x31}, 12).substr(4, 4) == "\x77\x14\xA0\x2B");   // DPIDR
        CHECK(usb_over_tcp(b, id_b, read8, 8) == std::string(8, '\x5A'));
    }
    // A dies (its socket closes without CLOSE_DEV); B goes on.
    ::close(a);
    for (int round = 0; round < 3; ++round)
        CHECK(usb_over_tcp(b, id_b, read8, 8) == std::string(8, '\x5A'));
    ::close(b);
    serving.join();   // the last client gone: serve() returns
    CHECK(gone.size() == 2);
    CHECK(server.probe().usb_commands(id_a) == 3);
    CHECK(server.probe().usb_commands(id_b) == 7);
    CHECK(server.probe().usb_commands() == 10);
    CHECK_FALSE(server.probe().in_use());
}

TEST_CASE("st-link server: the probe runs one command at a time, whichever client sent it")
{
    vprobe_test::FakeTarget target;
    VirtualProbe probe(target);
    StlinkServer server(probe, "127.0.0.1", 0);
    server.reply_latency = std::chrono::milliseconds(40);
    std::thread serving([&] { server.serve(false); });
    const auto [a, b, id_a, id_b] = TwoClients(server);
    // Both send GET_VERSION at once; the second answer leaves a whole latency after the first.
    const std::string to_a = usb_request(id_a, {0xF1}, 6);
    const std::string to_b = usb_request(id_b, {0xF1}, 6);
    const auto sent = std::chrono::steady_clock::now();
    REQUIRE(::send(a, to_a.data(), to_a.size(), 0) == ssize_t(to_a.size()));
    REQUIRE(::send(b, to_b.data(), to_b.size(), 0) == ssize_t(to_b.size()));
    over_tcp(a, "", 10);
    over_tcp(b, "", 10);
    CHECK(std::chrono::steady_clock::now() - sent >= std::chrono::milliseconds(80));
    ::close(a);
    ::close(b);
    serving.join();
}

TEST_CASE("st-link server: GET_NB_OF_DEV_CLIENTS counts the clients that have the device open")
{
    auto clients = [](Host& host, uint32_t device) {
        std::string request(8, '\0');
        request[0] = 0x07;
        put32(request, 4, device);
        const std::string reply = host.exchange(request);
        REQUIRE(reply.size() == 8);
        return std::pair<uint32_t, uint32_t>{get32(reply, 0), get32(reply, 4)};
    };
    Host first;
    CHECK(clients(first, 1) == std::pair<uint32_t, uint32_t>{stlink::server_ok, 1});
    {
        Host second(first.rig);
        CHECK(clients(first, 1) == std::pair<uint32_t, uint32_t>{stlink::server_ok, 2});
        CHECK(clients(second, 1).second == 2);
        CHECK(clients(second, 9).first == stlink::server_bad_parameter);   // no device 9
        std::string close(8, '\0');
        close[0] = 0x04;
        put32(close, 4, second.connection);
        std::string replies;
        CHECK_FALSE(second.server.feed(close, replies));
    }
    CHECK(clients(first, 1).second == 1);
}
