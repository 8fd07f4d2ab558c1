#pragma once
// Where a server is reached: a TCP port, or a serial line (a probe that is itself a GDB
// server on a USB serial port, as a Black Magic Probe's /dev/ttyACM0 is, or a pty).
#include <memory>
#include <string>
#include <string_view>

#include "mcuprof/link/byte_stream.h"
#include "mcuprof/link/tcp_connection.h"

namespace mcuprof::transport {

struct LinkAddress {
    Endpoint tcp;                 // used when `device` is empty
    std::string device;           // a serial device or pty: /dev/ttyACM0
    unsigned baud = 115200;       // the serial line's speed (a pty ignores it)

    LinkAddress() = default;
    LinkAddress(const Endpoint& endpoint) : tcp(endpoint) {}   // NOLINT: a TCP port is a link
    // A path (it starts with '/' or '.') is a serial device, anything else HOST:PORT, ":PORT"
    // or "PORT"; `baud` (0: not given, 115200) goes with a device only. Throws
    // transport::Error (protocol) naming `what` when the text is neither, or a speed is
    // given for a TCP port.
    static LinkAddress parse(std::string_view text, const std::string& what, unsigned baud = 0);
    bool serial() const { return !device.empty(); }
    std::string text() const { return serial() ? device : tcp.text(); }
};

// Connects (TCP) or opens and sets up the line (serial: raw, 8N1, no flow control, `baud`).
// `peer` names the stream in errors; `when_refused`, if given, is what the user should start
// when nothing listens on a TCP port.
std::unique_ptr<ByteStream> open_link(const LinkAddress& address, Duration timeout, std::string peer,
                                      const std::string& when_refused = {});

} // namespace mcuprof::transport
