#pragma once
// A TCP byte stream with a deadline on every operation, on Boost.Asio. The protocol
// clients (RSP, QMP, OpenOCD Tcl) sit on it; it knows nothing of their framing.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mcuprof/link/byte_stream.h"

namespace mcuprof::transport {

struct Endpoint {
    std::string host = "127.0.0.1";
    uint16_t port = 0;
    // "HOST:PORT" or ":PORT" or "PORT"; throws transport::Error (protocol) naming `what`.
    static Endpoint parse(std::string_view text, const std::string& what);
    std::string text() const { return host + ":" + std::to_string(port); }
};

class TcpConnection : public ByteStream {
public:
    // Connects within `timeout`; `peer` names the connection in errors ("gdb 127.0.0.1:1234").
    // `when_refused`, if given, is what the user should start when nothing listens there.
    TcpConnection(const Endpoint& endpoint, Duration timeout, std::string peer, const std::string& when_refused = {});
    ~TcpConnection() override;
    TcpConnection(const TcpConnection&) = delete;
    TcpConnection& operator=(const TcpConnection&) = delete;

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
