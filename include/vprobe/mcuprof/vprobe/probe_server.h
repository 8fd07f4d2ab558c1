#pragma once
// The TCP side of a virtual probe: one debugger connection (remote_bitbang) or several at
// once (the ST-Link server protocol), a byte protocol per connection in front of the one
// debug model, an idle callback, signals and an optional delay on every reply that models a
// USB probe's round trip (Boost.Asio, one thread: requests are performed one at a time).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace mcuprof::vprobe {

// A probe's protocol without I/O: bytes in, answers out.
class ByteProtocol {
public:
    virtual ~ByteProtocol() = default;
    // Performs the requests in `bytes` (a request may arrive in pieces: the rest is kept for
    // the next call), appending the answers to `replies`. Returns false once the client
    // ended the session (the answers so far are still sent).
    virtual bool feed(std::string_view bytes, std::string& replies) = 0;
    // The client closed its socket or died without ending the session.
    virtual void disconnected() {}
    // Whether the last feed's answers needed the probe (the reply latency, one probe for every
    // client), or only the server (ST's stlink-server answers its own requests at once).
    virtual bool used_probe() const { return true; }
};

class ProbeServer {
public:
    enum class End { quit, disconnected, stopped };

    // Binds and listens at once (port 0: a free port, see port()); throws vprobe::Error.
    // `protocol_name` names the listening socket in errors ("remote_bitbang", "st-link").
    ProbeServer(const std::string& protocol_name, const std::string& host, uint16_t port);
    ~ProbeServer();

    uint16_t port() const;
    // Serves one connection with `protocol` until it ends the session, the client closes,
    // stop(), or (with `stop_on_signals`) SIGINT or SIGTERM; SIGUSR1 then calls on_report.
    // Errors of the target end it by exception.
    End serve_with(ByteProtocol& protocol, bool stop_on_signals);
    // Serves every client that connects, at once, each with its own protocol from
    // `open_session`, until the last one has gone (the End is how it went), stop(), or a
    // signal as above. A client that leaves does not disturb the others.
    using SessionFactory = std::function<std::unique_ptr<ByteProtocol>()>;
    End serve_clients(const SessionFactory& open_session, bool stop_on_signals);
    // From any thread: ends serve_with().
    void stop();

    // Called once a client is connected, with its address, and when it has gone.
    std::function<void(const std::string&)> on_connected;
    std::function<void(const std::string&)> on_disconnected;
    // Called when no client has sent anything for `idle_after` (each waits for its user,
    // its poll timer or its Tcl script): the moment to let a held target run.
    std::function<void()> on_idle;
    std::chrono::microseconds idle_after{1000};
    // With `stop_on_signals`: called on SIGUSR1, the session going on (the command prints
    // its counters, so a benchmark can read them between phases of one session).
    std::function<void()> on_report;
    // Every answer leaves this long after its request arrived, as over a USB probe, where
    // each command waits for the bus's (micro)frames (docs/vprobe.md, "Probe latency"); with
    // several clients the probe is busy for that long per command, so a request that
    // arrives while another client's is in flight waits for it first.
    std::chrono::nanoseconds reply_latency{0};

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace mcuprof::vprobe
