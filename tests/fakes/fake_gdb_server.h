#pragma once
// A GDB remote server on loopback for the transport's unit tests: it acknowledges each
// packet, hands its payload to a script, and sends back whatever raw bytes the script
// returns (framed packets, stray acks, NAKs). Only for tests of the RSP layer.
#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "loopback_server.h"
#include "mcuprof/link/rsp_packet.h"

namespace fakes {

class FakeGdbServer : public LoopbackServer {
public:
    // script(payload) -> raw bytes to send; payload "\x03" stands for an interrupt byte.
    // received() holds every payload, in order ("+" and "-" from the client included).
    using Script = std::function<std::string(const std::string& payload)>;

    explicit FakeGdbServer(Script script, std::string greeting = {}) : script_(std::move(script))
    {
        start(std::move(greeting), [this](std::string_view bytes) {
            reader_.feed(bytes);
            while (auto frame = reader_.next())
                answer(*frame);
            return true;
        });
    }

    ~FakeGdbServer() override { stop(); }

    // How many received payloads are `payload`, or start with `prefix`.
    long count(const std::string& payload)
    {
        const auto got = received();
        return std::count(got.begin(), got.end(), payload);
    }
    long count_prefix(const std::string& prefix)
    {
        const auto got = received();
        return std::count_if(got.begin(), got.end(), [&](const std::string& p) { return p.rfind(prefix, 0) == 0; });
    }
    // The packets received after the first `skip` payloads, acknowledgements left out: what
    // one operation sent, when `skip` is received().size() from before it.
    std::vector<std::string> packets_after(size_t skip)
    {
        const auto got = received();
        std::vector<std::string> packets;
        for (size_t i = skip; i < got.size(); ++i)
            if (got[i] != "+" && got[i] != "-")
                packets.push_back(got[i]);
        return packets;
    }
    // How many of `packets` there are of each kind, the kind being the first byte ('p', 'M',
    // 's', '\x03' for an interrupt).
    static std::map<char, long> kinds(const std::vector<std::string>& packets)
    {
        std::map<char, long> count;
        for (const std::string& p : packets)
            if (!p.empty())
                ++count[p[0]];
        return count;
    }

private:
    void answer(const mcuprof::transport::rsp::Frame& frame)
    {
        using Kind = mcuprof::transport::rsp::Frame::Kind;
        std::string payload;
        if (frame.kind == Kind::ack)
            payload = "+";
        else if (frame.kind == Kind::nack)
            payload = "-";
        else if (frame.kind == Kind::interrupt)
            payload = "\x03";
        else
            payload = frame.payload;
        log(payload);
        if (frame.kind == Kind::ack || frame.kind == Kind::nack)
            return;
        std::string reply = frame.kind == Kind::packet ? "+" : "";
        reply += script_(payload);
        send(reply);
    }

    Script script_;
    mcuprof::transport::rsp::FrameReader reader_;
};

} // namespace fakes
