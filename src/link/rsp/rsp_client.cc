#include "mcuprof/link/rsp_client.h"

#include <charconv>
#include <cstdio>

#include "mcuprof/link/error.h"
#include "mcuprof/link/rsp_packet.h"

namespace mcuprof::transport {

using rsp::Frame;
namespace {

constexpr int max_retransmits = 3;

bool is_stop_reply(const std::string& p)
{
    return !p.empty() && (p[0] == 'T' || p[0] == 'S' || p[0] == 'W' || p[0] == 'X');
}

// 'O' + hex text is console output; "OK" is a reply.
// 'O' followed by hex text is console output (GDB's "Stop Reply Packets"); OpenOCD sends a bare
// 'O', no text, as a keep-alive while the target runs and it is busy (gdb_server.c,
// gdb_keep_alive), which a loaded machine makes happen in the middle of a recording.
bool is_console(const std::string& p)
{
    return !p.empty() && p[0] == 'O' && p != "OK";
}

} // namespace

RspClient::RspClient(const LinkAddress& address, Options options)
    : connection_(open_link(address, options.timeout, "gdb " + address.text(),
                            "start the GDB server first: OpenOCD (its GDB port is 3333 by default), or QEMU with "
                            "-gdb tcp::" + std::to_string(address.tcp.port))),
      options_(options)
{
}

RspClient::RspClient(std::unique_ptr<ByteStream> connection, Options options)
    : connection_(std::move(connection)), options_(options)
{
}

RspClient::~RspClient() = default;

void RspClient::protocol_error(const std::string& place, const std::string& problem) const
{
    throw Error(Error::Kind::protocol, connection_->peer(), place, problem);
}

std::optional<Frame> RspClient::try_next_frame(Duration timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (auto f = reader_.next())
            return f;
        const auto left = deadline - std::chrono::steady_clock::now();
        std::string bytes;
        if (timeout == Duration::zero()) {
            // A look without waiting: only what has arrived already (a wait, however
            // short, costs a millisecond in the reactor).
            if (!connection_->try_read_some(bytes, Duration::zero()))
                return std::nullopt;
            reader_.feed(bytes);
            if (auto f = reader_.next())
                return f;
            return std::nullopt;
        }
        if (left <= Duration::zero())
            return std::nullopt;
        if (!connection_->try_read_some(bytes, left))
            return std::nullopt;
        reader_.feed(bytes);
    }
}

Frame RspClient::next_frame(Duration timeout)
{
    if (auto f = try_next_frame(timeout))
        return *f;
    throw Error(Error::Kind::timeout, connection_->peer(), "", "no reply within the time-out");
}

void RspClient::send_frame(std::string_view framed)
{
    connection_->write(framed, options_.timeout);
}

// Reads frames until a reply packet: acks are consumed, a NAK retransmits the request,
// a packet with a bad checksum is NAKed, console output goes to on_console. Every packet
// is acknowledged as soon as it is whole (QEMU: never late, or it stops the guest).
std::string RspClient::read_reply(std::string_view framed_request)
{
    int retransmits = 0;
    for (;;) {
        Frame f = next_frame(options_.timeout);
        switch (f.kind) {
        case Frame::Kind::ack:
        case Frame::Kind::interrupt:
            continue;
        case Frame::Kind::nack:
            if (framed_request.empty() || ++retransmits > max_retransmits)
                protocol_error("", "the server refused the packet " + std::to_string(retransmits) + " times");
            send_frame(framed_request);
            continue;
        case Frame::Kind::bad_checksum:
            if (!no_ack_)
                send_frame("-");
            continue;
        case Frame::Kind::packet:
            if (!no_ack_)
                send_frame("+");
            if (is_console(f.payload)) {
                std::string text;
                if (on_console && rsp::from_hex(std::string_view(f.payload).substr(1), text))
                    on_console(text);
                continue;
            }
            return f.payload;
        }
    }
}

std::string RspClient::request(std::string_view payload)
{
    const std::string framed = rsp::frame(payload);
    send_frame(framed);
    return read_reply(framed);
}

std::vector<std::string> RspClient::request_all(const std::vector<std::string>& payloads)
{
    std::string framed;
    for (const std::string& p : payloads)
        framed += rsp::frame(p);
    send_frame(framed);
    std::vector<std::string> replies;
    for (size_t i = 0; i < payloads.size(); ++i)
        replies.push_back(read_reply({}));   // a NAK here is an error: which packet to resend is unclear
    return replies;
}

StopReply RspClient::parse_stop(const std::string& p, const std::string& peer)
{
    StopReply s;
    s.raw = p;
    unsigned value = 0;
    if (p.size() < 3 || std::sscanf(p.c_str() + 1, "%2x", &value) != 1)
        throw Error(Error::Kind::protocol, peer, "stop reply", "'" + p.substr(0, 40) + "' is not a stop reply");
    s.value = static_cast<int>(value);
    s.kind = p[0] == 'W' ? StopReply::Kind::exited : p[0] == 'X' ? StopReply::Kind::terminated : StopReply::Kind::signal;
    return s;
}

TargetDescription RspClient::read_target_description()
{
    return TargetDescription::parse([this](const std::string& annex) { return fetch_annex(annex); },
                                    connection_->peer());
}

std::string RspClient::fetch_annex(const std::string& annex)
{
    std::string document;
    for (;;) {
        char range[64];
        std::snprintf(range, sizeof range, ":%zx,%zx", document.size(), packet_size_ - 16);
        const std::string reply = request("qXfer:features:read:" + annex + range);
        if (reply.empty() || (reply[0] != 'm' && reply[0] != 'l'))
            protocol_error("qXfer:features:read:" + annex, "unexpected reply '" + reply.substr(0, 40) + "'");
        document.append(reply, 1);
        if (reply[0] == 'l')
            return document;
    }
}

// The first reply tells a GDB server from the other servers a user may point us at by
// mistake: OpenOCD's Tcl port waits for a 0x1a-terminated command and says nothing; a telnet
// port (OpenOCD's 4444) echoes what it is sent, so our own packet comes back.
std::string RspClient::first_reply(std::string_view framed_query)
{
    std::string reply;
    try {
        reply = read_reply(framed_query);
    } catch (const Error& e) {
        if (e.kind() != Error::Kind::timeout)
            throw;
        protocol_error("qSupported", "no reply from a GDB server: is this OpenOCD's Tcl port (6666 by default, "
                                     "for --openocd)? OpenOCD's GDB port is 3333 by default");
    }
    if (reply.rfind("qSupported:", 0) == 0)
        protocol_error("qSupported", "the server echoes what it is sent, as a terminal does: is this OpenOCD's "
                                     "telnet port (4444 by default)? Its GDB port is 3333 by default");
    return reply;
}

StopReply RspClient::handshake()
{
    // xmlRegisters=arm: we read target descriptions (GDB sends its list of architectures;
    // QEMU offers qXfer:features:read only to a client that names one). multiprocess+, as GDB
    // sends it: QEMU's gdbstub shows each CPU cluster of a machine (the SSE-200's two cores) as
    // a process, and thread ids pPID.TID name a core whatever mode an earlier client left it in
    // (QEMU 7.2 keeps multiprocess mode once any client asked for it). detach() gives the
    // process ids that mode wants.
    const std::string query = rsp::frame("qSupported:multiprocess+;swbreak+;hwbreak+;vContSupported+;xmlRegisters=arm");
    send_frame(query);
    // QEMU stops a running guest when a client connects and says so unasked, with a stop
    // reply that may come before the answer to our first packet.
    std::string supported = first_reply(query);
    while (is_stop_reply(supported))
        supported = read_reply(query);
    size_t at = supported.find("PacketSize=");
    if (at != std::string::npos) {
        // PacketSize=HEX (GDB manual, "General Query Packets", qSupported); an unreadable
        // or absurd one keeps the 256-byte minimum every stub must take.
        const std::string hex = supported.substr(at + 11, supported.find(';', at) - at - 11);
        uint32_t size = 0;
        const auto [end, failed] = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
        if (failed == std::errc() && end == hex.data() + hex.size())
            packet_size_ = std::max<size_t>(256, size);
    }
    multiprocess_ = supported.find("multiprocess+") != std::string::npos;
    if (supported.find("QStartNoAckMode+") != std::string::npos && request("QStartNoAckMode") == "OK")
        no_ack_ = true;
    if (supported.find("qXfer:features:read+") == std::string::npos)
        protocol_error("qSupported", "the server offers no target description (qXfer:features:read), so register "
                                     "numbers are unknown");
    target_ = read_target_description();
    const std::string reason = request("?");
    if (!is_stop_reply(reason))
        protocol_error("?", "'" + reason.substr(0, 40) + "' is not a stop reply");
    return parse_stop(reason, connection_->peer());
}

std::vector<std::string> RspClient::threads()
{
    std::vector<std::string> ids;
    for (std::string reply = request("qfThreadInfo"); !reply.empty() && reply[0] == 'm'; reply = request("qsThreadInfo")) {
        for (size_t at = 1; at < reply.size();) {
            const size_t comma = std::min(reply.find(',', at), reply.size());
            if (comma > at)
                ids.push_back(reply.substr(at, comma - at));
            at = comma + 1;
        }
        if (ids.size() > 4096)
            protocol_error("qsThreadInfo", "more than 4096 threads: the list does not end");
    }
    return ids;
}

std::vector<std::string> RspClient::attach_every_process()
{
    // QEMU's gdbstub numbers its processes from 1 (one per CPU cluster, hw/core/cpu-cluster.c)
    // and attaches only the first when a client connects; vAttach of a process it does not
    // have answers E22. A server without multiprocess+ has no processes to attach.
    if (multiprocess_)
        for (uint32_t pid = 2; pid <= max_processes; ++pid) {
            const std::string reply = request("vAttach;" + rsp::number_to_hex(pid));
            if (!is_stop_reply(reply))
                break;
            attached_.push_back(pid);
        }
    return threads();
}

void RspClient::select_thread(const std::string& thread)
{
    const std::string reply = request("Hg" + thread);
    if (reply != "OK")
        protocol_error("Hg" + thread, "the server would not select the thread ('" + reply.substr(0, 20) + "')");
    if (request("Hc" + thread) != "OK")   // steps (the stack-pointer stub) go to this core too
        protocol_error("Hc" + thread, "the server would not select the thread for steps");
    selected_ = thread;
}

std::vector<uint32_t> RspClient::read_registers_of(const std::string& thread, const std::vector<std::string>& names,
                                                   const std::vector<std::pair<uint32_t, uint32_t>>& reads,
                                                   std::vector<std::string>& memory)
{
    batch_thread_ = thread;
    try {
        std::vector<uint32_t> values = read_registers(names, reads, memory);
        batch_thread_.clear();
        return values;
    } catch (...) {
        batch_thread_.clear();
        throw;
    }
}

void RspClient::resume()
{
    // The server's '+' for this packet arrives while the target runs; it is consumed
    // with the next stop reply. Nothing is sent back until then.
    send_frame(rsp::frame("c"));
}

StopReply RspClient::wait_stop(Duration timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = deadline - std::chrono::steady_clock::now();
        if (auto stop = poll_stop(left > Duration::zero() ? left : Duration::zero()))
            return *stop;
        if (std::chrono::steady_clock::now() >= deadline)
            throw Error(Error::Kind::timeout, connection_->peer(), "", "the target did not stop within the time-out");
    }
}

std::optional<StopReply> RspClient::poll_stop(Duration timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = deadline - std::chrono::steady_clock::now();
        auto f = try_next_frame(left > Duration::zero() ? left : Duration::zero());
        if (!f)
            return std::nullopt;
        if (f->kind == Frame::Kind::bad_checksum && !no_ack_) {
            send_frame("-");   // a damaged stop reply: the server sends it again
            continue;
        }
        if (f->kind != Frame::Kind::packet)
            continue;   // the '+' of our 'c'
        if (!no_ack_)
            send_frame("+");   // the target is stopped now: acknowledging cannot disturb it
        if (is_console(f->payload)) {
            std::string text;
            if (on_console && rsp::from_hex(std::string_view(f->payload).substr(1), text))
                on_console(text);
            continue;
        }
        if (!is_stop_reply(f->payload))
            protocol_error("stop reply", "unexpected packet '" + f->payload.substr(0, 40) + "' while running");
        return parse_stop(f->payload, connection_->peer());
    }
}

StopReply RspClient::interrupt()
{
    send_frame("\x03");
    return wait_stop(options_.timeout);
}

std::vector<uint32_t> RspClient::read_registers(const std::vector<std::string>& names)
{
    std::vector<std::string> none;
    return read_registers(names, {}, none);
}

std::vector<uint32_t> RspClient::read_registers(const std::vector<std::string>& names,
                                                const std::vector<std::pair<uint32_t, uint32_t>>& reads,
                                                std::vector<std::string>& memory)
{
    for (const std::string& name : names) {
        const RegisterInfo* r = target_.find(name);
        if (r == nullptr || r->bits != 32)
            protocol_error("target description", "no 32-bit register '" + name + "'");
    }
    std::vector<std::string> also;
    for (const auto& [address, length] : reads)
        also.push_back("m" + rsp::number_to_hex(address) + "," + rsp::number_to_hex(length));
    std::vector<std::string> replies;
    const std::vector<std::string> registers = read_register_bytes(names, also, &replies);
    memory.clear();
    for (const std::string& reply : replies) {
        std::string bytes;
        if (reply.empty() || reply[0] == 'E' || !rsp::from_hex(reply, bytes))
            bytes.clear();
        memory.push_back(std::move(bytes));
    }
    std::vector<uint32_t> values;
    for (const std::string& bytes : registers)
        values.push_back(uint32_t(uint8_t(bytes[0])) | uint32_t(uint8_t(bytes[1])) << 8 |
                         uint32_t(uint8_t(bytes[2])) << 16 | uint32_t(uint8_t(bytes[3])) << 24);
    return values;
}

std::vector<std::string> RspClient::read_register_bytes(const std::vector<std::string>& names)
{
    return read_register_bytes(names, {}, nullptr);
}

std::vector<std::string> RspClient::read_register_bytes(const std::vector<std::string>& names,
                                                        const std::vector<std::string>& also,
                                                        std::vector<std::string>* also_replies)
{
    std::vector<const RegisterInfo*> wanted;
    for (const std::string& name : names) {
        const RegisterInfo* r = target_.find(name);
        if (r == nullptr || r->bits % 8 != 0)
            protocol_error("target description", "no register '" + name + "'");
        wanted.push_back(r);
    }
    // 'g' carries the registers in number order up to some length the server chooses
    // (QEMU: r0-r15 and xpsr); the rest need 'p'. The length is learnt from the first 'g';
    // all requests go out at once.
    auto in_g = [this](const RegisterInfo* r) { return !g_length_ || r->g_offset + r->bits / 8 <= *g_length_; };
    std::vector<std::string> requests;
    bool use_g = false;
    for (const RegisterInfo* r : wanted) {
        if (in_g(r))
            use_g = true;
        else
            requests.push_back("p" + rsp::number_to_hex(r->number));
    }
    if (use_g)
        requests.insert(requests.begin(), "g");
    // Another core's registers (and memory as it sees it): Hg selects it in the same round
    // trip, and Hg back to the selected core ends the batch, so that later reads (the stub's,
    // 'p') find that core.
    const bool other_core = !batch_thread_.empty() && batch_thread_ != selected_;
    if (other_core && selected_.empty())
        protocol_error("Hg" + batch_thread_, "no thread selected to come back to");   // select_thread first
    const size_t register_requests = requests.size();
    requests.insert(requests.end(), also.begin(), also.end());
    if (other_core) {
        requests.insert(requests.begin(), "Hg" + batch_thread_);
        requests.push_back("Hg" + selected_);
    }
    std::vector<std::string> replies = request_all(requests);
    if (other_core) {
        const std::string& refused = replies.front() != "OK" ? replies.front() : replies.back();
        if (refused != "OK")
            protocol_error("Hg" + batch_thread_, "the server would not select the thread ('" + refused.substr(0, 20) + "')");
        replies.pop_back();
        replies.erase(replies.begin());
        requests.pop_back();
        requests.erase(requests.begin());
    }
    if (also_replies != nullptr)
        also_replies->assign(replies.begin() + long(register_requests), replies.end());
    replies.resize(register_requests);
    requests.resize(register_requests);
    // An error ('Exx') or a short answer to 'g' is the server's refusal, not register bytes.
    if (use_g && (replies[0].size() % 2 != 0 || (g_length_ && replies[0].size() < *g_length_ * 2)))
        protocol_error("g", "the server would not give the registers ('" + replies[0].substr(0, 20) + "')");
    if (use_g && !g_length_)
        g_length_ = replies[0].size() / 2;

    std::vector<std::string> values;
    size_t next_p = use_g ? 1 : 0;
    for (const RegisterInfo* r : wanted) {
        const size_t width = r->bits / 8;
        std::string hex;
        if (use_g && r->g_offset + width <= *g_length_)
            hex = replies[0].substr(r->g_offset * 2, width * 2);
        else if (next_p < replies.size() && requests[next_p] == "p" + rsp::number_to_hex(r->number))
            hex = replies[next_p++];
        else if (!other_core)
            hex = request("p" + rsp::number_to_hex(r->number));
        std::string bytes;
        if (hex.size() != width * 2 || !rsp::from_hex(hex, bytes))
            protocol_error("register " + r->name, "unreadable value '" + hex.substr(0, 20) + "'");
        values.push_back(std::move(bytes));
    }
    return values;
}

void RspClient::write_register(const std::string& name, std::string_view bytes)
{
    const RegisterInfo* r = target_.find(name);
    if (r == nullptr)
        protocol_error("target description", "no register '" + name + "'");
    const std::string reply = request("P" + rsp::number_to_hex(r->number) + "=" + rsp::to_hex(bytes));
    if (reply != "OK")
        protocol_error("register " + r->name, "write refused ('" + reply.substr(0, 20) + "')");
}

StopReply RspClient::step()
{
    // The '+' for 's' and the stop reply both arrive once the instruction ran.
    send_frame(rsp::frame(step_selected_thread_alone && !selected_.empty() ? "vCont;s:" + selected_ : std::string("s")));
    return wait_stop(options_.timeout);
}

std::string RspClient::read_memory(uint32_t address, size_t length)
{
    std::string data;
    while (data.size() < length) {
        const size_t chunk = std::min(length - data.size(), (packet_size_ - 16) / 2);
        const std::string reply = request("m" + rsp::number_to_hex(address + uint32_t(data.size())) + "," + rsp::number_to_hex(uint32_t(chunk)));
        std::string bytes;
        if (reply.empty() || reply[0] == 'E' || !rsp::from_hex(reply, bytes) || bytes.empty())
            protocol_error("memory 0x" + rsp::number_to_hex(address + uint32_t(data.size())), "read failed: '" + reply.substr(0, 20) + "'");
        data += bytes;
    }
    return data;
}

void RspClient::write_memory(uint32_t address, std::string_view bytes)
{
    const std::string reply =
        request("M" + rsp::number_to_hex(address) + "," + rsp::number_to_hex(uint32_t(bytes.size())) + ":" + rsp::to_hex(bytes));
    if (reply != "OK")
        protocol_error("memory 0x" + rsp::number_to_hex(address), "write failed: '" + reply.substr(0, 20) + "'");
}

void RspClient::insert_breakpoint(uint32_t address)
{
    const std::string reply = request("Z0," + rsp::number_to_hex(address) + ",2");
    if (reply != "OK")
        protocol_error("breakpoint 0x" + rsp::number_to_hex(address), "refused ('" + reply.substr(0, 20) + "')");
}

void RspClient::remove_breakpoint(uint32_t address)
{
    const std::string reply = request("z0," + rsp::number_to_hex(address) + ",2");
    if (reply != "OK")
        protocol_error("breakpoint 0x" + rsp::number_to_hex(address), "removal refused ('" + reply.substr(0, 20) + "')");
}

std::string RspClient::monitor(const std::string& command)
{
    std::string printed;
    auto previous = on_console;
    on_console = [&](const std::string& text) { printed += text; };
    std::string reply;
    try {
        reply = request("qRcmd," + rsp::to_hex(command));
    } catch (...) {
        on_console = previous;
        throw;
    }
    on_console = previous;
    if (reply != "OK" && !reply.empty() && reply[0] == 'E')
        protocol_error("monitor " + command, "the server refused it (" + reply + ")" +
                                                 (printed.empty() ? "" : ": " + printed));
    std::string text;
    if (reply != "OK" && rsp::from_hex(reply, text))   // some servers answer with the output itself
        printed += text;
    return printed;
}

bool RspClient::is_qemu()
{
    // QEMU's gdbstub answers qqemu.Supported ("sstepbits;sstep;PhyMemMode", QEMU 7.2); other
    // servers answer a query they do not know with an empty packet (GDB RSP, "General Query
    // Packets"). One round trip with no side effect: a monitor command would run on OpenOCD,
    // and the qSupported features are not QEMU's alone.
    if (!qemu_)
        qemu_ = request("qqemu.Supported").find("sstep") != std::string::npos;
    return *qemu_;
}

std::optional<std::string> RspClient::monitor_unless_refused(const std::string& command)
{
    try {
        return monitor(command);
    } catch (const Error& e) {
        if (e.kind() != Error::Kind::protocol)
            throw;
        return std::nullopt;
    }
}

bool RspClient::is_openocd()
{
    if (!openocd_) {
        // A server without this monitor command refuses it: not OpenOCD.
        const std::optional<std::string> version = is_qemu() ? std::nullopt : monitor_unless_refused("version");
        openocd_ = version && version->find("Open On-Chip Debugger") != std::string::npos;
    }
    return *openocd_;
}

void RspClient::detach()
{
    // OpenOCD halts the target when a GDB client connects (startup.tcl's default gdb-attach
    // handler, "halt 1000") and leaves it halted when the client detaches (there is no
    // default gdb-detach handler), so a plain 'D' would leave the target halted.
    if (is_openocd())
        monitor_unless_refused("resume");   // refused: the target runs already
    // Every process attached besides the first, then the first: QEMU resumes the machine when
    // the last attached process is detached.
    for (auto pid = attached_.rbegin(); pid != attached_.rend(); ++pid)
        request("D;" + rsp::number_to_hex(*pid));
    attached_.clear();
    std::string reply = request("D");
    if (reply != "OK") {
        // QEMU 7.2 keeps multiprocess mode on once any client (gdb itself) negotiated it, and
        // then refuses a plain 'D' (E22) from every later client: it wants the process id.
        reply = request("D;1");
    }
    if (reply != "OK") {
        // The server would not detach: resume the target ourselves before leaving, so it
        // is never left halted. Leaving it running is all a detach is for.
        send_frame(rsp::frame("c"));
    }
    connection_->close();
}

} // namespace mcuprof::transport
