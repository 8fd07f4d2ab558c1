// The serial link: a pty pair stands for the line (the test holds the master side, as a USB
// serial GDB server would hold the far end), and --gdb's address parsing.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "mcuprof/link/error.h"
#include "mcuprof/link/link.h"
#include "mcuprof/link/serial_connection.h"

using namespace mcuprof::transport;
using namespace std::chrono_literals;

namespace {

// A pty: the master's descriptor, the slave's path.
struct Pty {
    int master = -1;
    std::string slave;

    Pty()
    {
        master = posix_openpt(O_RDWR | O_NOCTTY);
        REQUIRE(master >= 0);
        REQUIRE(grantpt(master) == 0);
        REQUIRE(unlockpt(master) == 0);
        slave = ptsname(master);
    }
    ~Pty() { close_master(); }
    void close_master()
    {
        if (master >= 0)
            ::close(master);
        master = -1;
    }
    std::string read_master(size_t wanted)
    {
        std::string got;
        while (got.size() < wanted) {
            char buffer[256];
            const ssize_t n = ::read(master, buffer, sizeof buffer);
            REQUIRE(n > 0);
            got.append(buffer, size_t(n));
        }
        return got;
    }
};

} // namespace

TEST_CASE("serial link: bytes both ways unchanged (raw mode: no echo, no CR/LF translation)")
{
    Pty pty;
    SerialConnection line(pty.slave, 115200, "gdb " + pty.slave);
    // Every byte value, including ^C (GDB's interrupt), CR, LF and XON/XOFF, which a tty in
    // its default mode would turn into a signal, a translation or flow control.
    std::string all;
    for (int b = 0; b < 256; ++b)
        all += char(b);
    line.write(all, 1s);
    CHECK(pty.read_master(all.size()) == all);
    REQUIRE(::write(pty.master, all.data(), all.size()) == ssize_t(all.size()));
    std::string got;
    while (got.size() < all.size())
        line.read_some(got, 1s);
    CHECK(got == all);
    // Nothing sent back: the line does not echo what it was sent.
    std::string nothing;
    CHECK_FALSE(line.try_read_some(nothing, 50ms));
    CHECK(nothing.empty());
}

TEST_CASE("serial link: a silent line is a time-out, a line whose far end closed an error, both naming it")
{
    Pty pty;
    SerialConnection line(pty.slave, 9600, "gdb " + pty.slave);
    std::string got;
    try {
        line.read_some(got, 50ms);
        FAIL("no time-out");
    } catch (const Error& e) {
        CHECK(e.kind() == Error::Kind::timeout);
        CHECK(std::string(e.what()).find(pty.slave) != std::string::npos);
    }
    pty.close_master();
    try {
        line.read_some(got, 1s);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind() == Error::Kind::closed);
        CHECK(std::string(e.what()).find(pty.slave) != std::string::npos);
    }
}

TEST_CASE("serial link: a missing device or a speed the line refuses is a connect error naming the device")
{
    try {
        SerialConnection line("/dev/mcuprof-no-such-tty", 115200, "gdb /dev/mcuprof-no-such-tty");
        FAIL("opened");
    } catch (const Error& e) {
        CHECK(e.kind() == Error::Kind::connect);
        CHECK(std::string(e.what()).find("cannot open /dev/mcuprof-no-such-tty") != std::string::npos);
    }
    Pty pty;
    CHECK_THROWS_AS(SerialConnection(pty.slave, 12345, "gdb " + pty.slave), Error);   // not a termios speed
}

TEST_CASE("link address: a path is a serial device with its speed, anything else HOST:PORT")
{
    const LinkAddress device = LinkAddress::parse("/dev/ttyACM0", "--gdb");
    CHECK(device.serial());
    CHECK(device.device == "/dev/ttyACM0");
    CHECK(device.baud == 115200);
    CHECK(device.text() == "/dev/ttyACM0");
    CHECK(LinkAddress::parse("./tty-bridge", "--gdb", 9600).baud == 9600);

    const LinkAddress tcp = LinkAddress::parse("localhost:3333", "--gdb");
    CHECK_FALSE(tcp.serial());
    CHECK(tcp.tcp.host == "localhost");
    CHECK(tcp.tcp.port == 3333);
    CHECK(LinkAddress::parse(":1234", "--gdb").text() == "127.0.0.1:1234");

    CHECK_THROWS_AS(LinkAddress::parse("localhost:3333", "--gdb", 9600), Error);   // a speed for TCP
    CHECK_THROWS_AS(LinkAddress::parse("ttyACM0", "--gdb"), Error);                 // neither
}
