#pragma once
// OpenOCD's remote_bitbang protocol, the probe side (OpenOCD's doc/manual/jtag/drivers/
// remote_bitbang.txt and src/jtag/drivers/remote_bitbang.c): one ASCII byte per request.
// '0'-'7' write TCK, TMS, TDI (the digit's bits 2, 1, 0); 'R' asks for TDO, answered with
// '0' or '1'; 'r'-'u' set TRST and SRST (bits 1 and 0 of the letter minus 'r', 1 =
// asserted); 'B'/'b' switch a LED; 'Q' ends the session. OpenOCD 0.12 speaks JTAG only.
#include <cstdint>
#include <string>
#include <string_view>

#include "mcuprof/vprobe/probe_server.h"

namespace mcuprof::vprobe {

// The pins a remote_bitbang client drives and reads.
class JtagPins {
public:
    virtual ~JtagPins() = default;
    virtual void write(bool tck, bool tms, bool tdi) = 0;
    virtual bool tdo() = 0;
    virtual void reset(bool trst, bool srst) = 0;
    virtual void blink(bool) {}
};

// The protocol without I/O: bytes in, pin changes and TDO answers out.
class RemoteBitbangDecoder : public ByteProtocol {
public:
    explicit RemoteBitbangDecoder(JtagPins& pins) : pins_(pins) {}

    // Performs the requests in `bytes`, appending each 'R' answer to `replies`. Returns
    // false once 'Q' arrived (what follows it is not performed).
    bool feed(std::string_view bytes, std::string& replies) override;

    uint64_t requests() const { return requests_; }
    uint64_t reads() const { return reads_; }
    // Bytes that are no request of OpenOCD 0.12 (newer versions' SWD requests among them):
    // skipped, counted.
    uint64_t unknown() const { return unknown_; }

private:
    JtagPins& pins_;
    uint64_t requests_ = 0;
    uint64_t reads_ = 0;
    uint64_t unknown_ = 0;
};

// Listens on TCP, accepts one OpenOCD connection and serves remote_bitbang to it.
class RemoteBitbangServer : public ProbeServer {
public:
    // Binds and listens at once (port 0: a free port, see port()); throws vprobe::Error.
    RemoteBitbangServer(JtagPins& pins, const std::string& host, uint16_t port)
        : ProbeServer("remote_bitbang", host, port), decoder_(pins)
    {
    }

    // Serves one connection until 'Q', the client closing, stop(), or (with
    // `stop_on_signals`) SIGINT or SIGTERM; SIGUSR1 then calls on_report.
    End serve(bool stop_on_signals) { return serve_with(decoder_, stop_on_signals); }

    const RemoteBitbangDecoder& decoder() const { return decoder_; }

private:
    RemoteBitbangDecoder decoder_;
};

} // namespace mcuprof::vprobe
