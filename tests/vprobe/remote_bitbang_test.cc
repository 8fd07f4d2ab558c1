#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "mcuprof/vprobe/remote_bitbang.h"
#include "mcuprof/vprobe/virtual_probe.h"
#include "vprobe_test_support.h"

using namespace mcuprof::vprobe;

namespace {

// The bytes OpenOCD's bitbang driver sends for a TMS path: per clock '0'+TMS*2 then
// '4'+TMS*2 (TCK low, TCK high), and TCK low at the end.
std::string tms_path(const std::string& tms)
{
    std::string bytes;
    for (char c : tms) {
        const int bit = c == '1' ? 2 : 0;
        bytes += char('0' + bit);
        bytes += char('4' + bit);
    }
    return bytes + '0';
}

// A 32-bit DR scan from Shift-DR that reads TDO at every bit ('R' between TCK low and
// high), TDI 0, TMS 1 on the last bit.
std::string read_32_bits()
{
    std::string bytes;
    for (int i = 0; i < 32; ++i) {
        const int tms = i == 31 ? 2 : 0;
        bytes += char('0' + tms);
        bytes += 'R';
        bytes += char('4' + tms);
    }
    return bytes;
}

uint32_t from_digits(const std::string& digits)
{
    uint32_t value = 0;
    for (size_t i = 0; i < digits.size(); ++i)
        value |= uint32_t(digits[i] == '1') << i;
    return value;
}

struct Pins : JtagPins {
    std::string log;
    bool level = false;
    void write(bool tck, bool tms, bool tdi) override { log += char('0' + (tck << 2 | tms << 1 | tdi)); }
    bool tdo() override
    {
        level = !level;
        return level;
    }
    void reset(bool trst, bool srst) override { log += char('r' + (trst << 1 | srst)); }
    void blink(bool on) override { log += on ? 'B' : 'b'; }
};

} // namespace

TEST_CASE("remote_bitbang: each byte is a request; 'R' answers a digit; 'Q' ends")
{
    Pins pins;
    RemoteBitbangDecoder decoder(pins);
    std::string replies;
    CHECK(decoder.feed("0427RRtsuBb\nx", replies));
    CHECK(pins.log == "0427tsuBb");
    CHECK(replies == "10");
    CHECK(decoder.unknown() == 1);   // 'x'
    CHECK_FALSE(decoder.feed("3Q5", replies));
    CHECK(pins.log == "0427tsuBb3");   // nothing after 'Q'
}

TEST_CASE("remote_bitbang: OpenOCD's bytes for a TAP reset and a DR scan read the IDCODE")
{
    vprobe_test::FakeTarget target;
    VirtualProbe probe(target);
    RemoteBitbangDecoder decoder(probe);
    std::string replies;
    // Test-Logic-Reset (TMS 1 x5), Run-Test/Idle, Select-DR-Scan, Capture-DR, Shift-DR.
    decoder.feed(tms_path("11111" "0" "100"), replies);
    decoder.feed(read_32_bits(), replies);
    CHECK(replies.size() == 32);
    CHECK(from_digits(replies) == 0x4BA00477);
}

TEST_CASE("remote_bitbang: the server serves one client until 'Q', then until it disconnects")
{
    vprobe_test::FakeTarget target;
    VirtualProbe probe(target);
    for (const bool quit : {true, false}) {
        CAPTURE(quit);
        RemoteBitbangServer server(probe, "127.0.0.1", 0);
        REQUIRE(server.port() != 0);
        RemoteBitbangServer::End end{};
        std::thread serving([&] { end = server.serve(false); });

        const int client = vprobe_test::connect_loopback(server.port());
        REQUIRE(client >= 0);
        const std::string request = tms_path("11111" "0" "100") + read_32_bits();
        REQUIRE(::send(client, request.data(), request.size(), 0) == ssize_t(request.size()));
        std::string replies;
        char buffer[64];
        while (replies.size() < 32) {
            const ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
            REQUIRE(n > 0);
            replies.append(buffer, size_t(n));
        }
        CHECK(from_digits(replies) == 0x4BA00477);
        if (quit)
            ::send(client, "Q", 1, 0);
        ::close(client);
        serving.join();
        CHECK(end == (quit ? RemoteBitbangServer::End::quit : RemoteBitbangServer::End::disconnected));
    }
}

TEST_CASE("remote_bitbang: stop() ends a server that waits for its client")
{
    vprobe_test::FakeTarget target;
    VirtualProbe probe(target);
    RemoteBitbangServer server(probe, "127.0.0.1", 0);
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        server.stop();
    });
    CHECK(server.serve(false) == RemoteBitbangServer::End::stopped);
    stopper.join();
}

TEST_CASE("remote_bitbang: SRST asserted resets the system through the probe")
{
    vprobe_test::FakeTarget target;
    VirtualProbe probe(target);
    RemoteBitbangDecoder decoder(probe);
    std::string replies;
    decoder.feed("rsr", replies);   // SRST asserted once, then released
    CHECK(target.resets == 1);
}
