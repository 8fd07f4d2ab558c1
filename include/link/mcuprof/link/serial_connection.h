#pragma once
// A serial line (a tty or a pty) as a ByteStream, on Boost.Asio's serial_port: raw mode,
// 8 data bits, no parity, one stop bit, no flow control, a deadline on every operation.
#include <memory>
#include <string>

#include "mcuprof/link/byte_stream.h"

namespace mcuprof::transport {

class SerialConnection : public ByteStream {
public:
    // Opens `device` and sets its speed; throws transport::Error (connect) naming `peer`
    // when the device cannot be opened or refuses the speed.
    SerialConnection(const std::string& device, unsigned baud, std::string peer);
    ~SerialConnection() override;
    SerialConnection(const SerialConnection&) = delete;
    SerialConnection& operator=(const SerialConnection&) = delete;

    void write(std::string_view bytes, Duration timeout) override;
    void read_some(std::string& into, Duration timeout) override;
    bool try_read_some(std::string& into, Duration timeout) override;
    void close() override;
    const std::string& peer() const override { return peer_; }

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string peer_;
};

} // namespace mcuprof::transport
