// Fuzz target: what a GDB server answers to the client's own requests, read by RspClient itself:
// the qSupported reply (PacketSize, features), QStartNoAckMode, the target description
// (qXfer:features:read, its includes), '?', 'g' and 'p' for registers of any width, 'm' for
// memory (one batch and in chunks), vAttach and the thread lists, Hg/Hc, qRcmd and its console
// output, qqemu.Supported, 'D'. (fuzz_rsp covers the framing and the stop replies alone.)
//
// The input is the server's side: its reply payloads, separated by NUL bytes. The stream frames
// each one itself, with its checksum, so that the fuzzer explores what a reply holds rather
// than checksums, and hands them over in order whatever the client sends; when they run out
// the server is silent (a time-out, at once). The calls below run in turn, each after the
// last one's error, as a sampler's do after a refused request.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mcuprof/link/byte_stream.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/rsp_client.h"
#include "mcuprof/link/rsp_packet.h"

using namespace mcuprof::transport;

namespace {

class ScriptedServer : public ByteStream {
public:
    explicit ScriptedServer(const std::string& input)
    {
        for (size_t at = 0; at <= input.size();) {
            const size_t end = std::min(input.find('\0', at), input.size());
            replies_.push_back(rsp::frame(std::string_view(input).substr(at, end - at)));
            at = end + 1;
        }
    }
    void write(std::string_view, Duration) override {}   // the requests: answered in order anyway
    void read_some(std::string& into, Duration) override
    {
        if (!try_read_some(into, Duration::zero()))
            throw Error(Error::Kind::closed, peer_, "", "the scripted server has no more replies");
    }
    bool try_read_some(std::string& into, Duration) override
    {
        if (next_ == replies_.size())
            return false;
        into += replies_[next_++];
        return true;
    }
    void close() override {}
    const std::string& peer() const override { return peer_; }

private:
    std::vector<std::string> replies_;
    size_t next_ = 0;
    std::string peer_ = "fuzz";
};

template <typename Call> void attempt(Call call)
{
    try {
        call();
    } catch (const Error&) {   // transport::Error: a refusal or malformed reply, said as one
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string input(reinterpret_cast<const char*>(data), size);
    RspClient client(std::make_unique<ScriptedServer>(input), RspClient::Options{});
    std::vector<std::string> memory;
    attempt([&] { (void)client.handshake(); });
    attempt([&] { (void)client.read_registers({"r0", "sp", "lr", "pc", "xpsr"}); });
    attempt([&] { (void)client.read_registers({"pc", "msp", "psp"}, {{0x20000000, 8}, {0x20000100, 4}}, memory); });
    attempt([&] { (void)client.read_register_bytes({"d0", "fpscr"}); });
    attempt([&] { (void)client.read_memory(0x20000000, 600); });
    attempt([&] { (void)client.attach_every_process(); });
    attempt([&] { client.select_thread("p2.1"); });
    attempt([&] { (void)client.read_registers_of("p1.1", {"pc"}, {{0x20000000, 4}}, memory); });
    attempt([&] { (void)client.monitor("version"); });
    attempt([&] { (void)client.is_openocd(); });
    attempt([&] { client.detach(); });
    return 0;
}
