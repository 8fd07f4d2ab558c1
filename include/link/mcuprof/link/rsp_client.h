#pragma once
// A client of the GDB remote serial protocol over TCP or a serial line: QEMU's gdbstub,
// OpenOCD's GDB port, probe servers (a Black Magic Probe is one on /dev/ttyACM0). It knows
// packets, acknowledgements, stop replies and registers; it knows nothing of samples.
//
// QEMU 7.2 facts this client respects (measured): it offers no no-ack mode, so every
// packet it sends is acknowledged at once, while the target is still stopped, because
// any byte that reaches it while the guest runs stops the guest; 'p' answers only after
// the target description was read; a semihosting exit sends W and closes the socket.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/link/rsp_packet.h"
#include "mcuprof/link/target_description.h"
#include "mcuprof/link/link.h"

namespace mcuprof::transport {

struct StopReply {
    enum class Kind { signal, exited, terminated };
    Kind kind = Kind::signal;
    int value = 0;            // signal number, or exit code
    std::string raw;
};

class RspClient {
public:
    struct Options {
        Duration timeout = std::chrono::seconds(3);
    };

    RspClient(const LinkAddress& address, Options options);
    // Over a stream already open: what its reads deliver is the server's side (the fuzz
    // target of the replies, tests/fuzz/fuzz_rsp_replies.cc).
    RspClient(std::unique_ptr<ByteStream> connection, Options options);
    ~RspClient();

    // qSupported, QStartNoAckMode where offered, the target description. Returns the
    // halt reason ('?'): connecting stops the target on QEMU and OpenOCD.
    StopReply handshake();

    // One request, its reply (console 'O' packets are passed to on_console on the way).
    std::string request(std::string_view payload);
    // Several requests sent at once, their replies in order: one round trip for all.
    std::vector<std::string> request_all(const std::vector<std::string>& payloads);

    // 'c': the target runs; no reply comes until it stops.
    void resume();
    // Interrupt (0x03) and wait for the stop reply.
    StopReply interrupt();
    // 's': one instruction, and its stop reply. With step_selected_thread_alone and a thread
    // selected, 'vCont;s:THREAD' instead: that core steps and the others stay stopped (QEMU's
    // 's' resumes the whole machine, the selected core single-stepping).
    StopReply step();
    bool step_selected_thread_alone = false;
    // While running: a stop reply if one arrives within `timeout` (the target exited,
    // hit a breakpoint), else nothing. Never sends a byte. A zero timeout looks at what
    // has arrived already, without waiting.
    std::optional<StopReply> poll_stop(Duration timeout);
    // Waits for the stop reply of a running target (one that stops by itself).
    StopReply wait_stop(Duration timeout);

    // Registers by name, in one round trip ('g', plus 'p' for registers the 'g' reply
    // does not carry). Throws when a name is not in the target description.
    std::vector<uint32_t> read_registers(const std::vector<std::string>& names);
    // Registers of any width by name ("d0" is 64 bits), in one round trip like
    // read_registers, each as the target's little-endian bytes.
    std::vector<std::string> read_register_bytes(const std::vector<std::string>& names);
    // The same, with more requests ("m..." reads) sent in the same round trip; their
    // replies go to *also_replies, raw.
    std::vector<std::string> read_register_bytes(const std::vector<std::string>& names,
                                                 const std::vector<std::string>& also,
                                                 std::vector<std::string>* also_replies);
    // Registers by name plus memory reads in one round trip. A memory read the target
    // refuses gives an empty string; values are little-endian 32-bit registers.
    std::vector<uint32_t> read_registers(const std::vector<std::string>& names,
                                         const std::vector<std::pair<uint32_t, uint32_t>>& reads,
                                         std::vector<std::string>& memory);
    // The threads the server lists (qfThreadInfo, qsThreadInfo), in its order: QEMU's gdbstub
    // lists each CPU of the processes attached as a thread ("p01.01" in multiprocess mode).
    std::vector<std::string> threads();
    // Attaches every process the server has besides the first (QEMU: one per CPU cluster;
    // vAttach until it refuses one) and returns every thread then listed. A server without
    // multiprocess+ gets no vAttach.
    std::vector<std::string> attach_every_process();
    // Hg and Hc: later register reads, writes and steps go to this thread (core).
    void select_thread(const std::string& thread);
    // read_registers(names, reads, memory) of another thread, in one round trip: Hg to it
    // first and Hg back to the selected thread at the end.
    std::vector<uint32_t> read_registers_of(const std::string& thread, const std::vector<std::string>& names,
                                            const std::vector<std::pair<uint32_t, uint32_t>>& reads,
                                            std::vector<std::string>& memory);
    // 'P': one register by name from its little-endian bytes. Throws when refused.
    void write_register(const std::string& name, std::string_view bytes);
    std::string read_memory(uint32_t address, size_t length);
    void write_memory(uint32_t address, std::string_view bytes);
    // A breakpoint at an instruction (Z0/z0, software; Thumb kind 2). Throws when the
    // server refuses.
    void insert_breakpoint(uint32_t address);
    void remove_breakpoint(uint32_t address);
    // A command for the server's own monitor (qRcmd: QEMU's HMP, OpenOCD's commands);
    // returns what it printed. Throws when the server answers with an error.
    std::string monitor(const std::string& command);
    // Leaves the target running and closes: 'D;PID' for every process attached besides the
    // first, then 'D' (or 'D;1' where QEMU insists on multiprocess), after which the server resumes the target; OpenOCD, which leaves it
    // halted, is told to `resume` first. A server that refuses both gets 'c' before the
    // connection closes.
    void detach();

    // What the server is, asked once per connection. QEMU's gdbstub answers its own query
    // qqemu.Supported; OpenOCD names itself in `monitor version` (asked only of a server
    // that is not QEMU).
    bool is_qemu();
    bool is_openocd();

    const TargetDescription& target() const { return target_; }
    // The target description of the selected thread's process, read again (QEMU describes each
    // CPU cluster apart: mps2-an521's core 1 has an FPU, core 0 none, so its 'p' numbers differ).
    TargetDescription read_target_description();
    // Later register requests use this description (a core's own, after Hg to it).
    void use_target_description(TargetDescription description) { target_ = std::move(description); }
    bool no_ack() const { return no_ack_; }
    const std::string& peer() const { return connection_->peer(); }
    std::function<void(const std::string&)> on_console;

    static StopReply parse_stop(const std::string& payload, const std::string& peer);

private:
    void send_frame(std::string_view framed);
    rsp::Frame next_frame(Duration timeout);
    std::optional<rsp::Frame> try_next_frame(Duration timeout);
    std::string read_reply(std::string_view framed_request);
    std::string first_reply(std::string_view framed_query);
    std::string fetch_annex(const std::string& annex);
    // A monitor command's output; nothing when the server refuses it.
    std::optional<std::string> monitor_unless_refused(const std::string& command);
    [[noreturn]] void protocol_error(const std::string& place, const std::string& problem) const;

    std::unique_ptr<ByteStream> connection_;
    Options options_;
    rsp::FrameReader reader_;
    bool no_ack_ = false;
    size_t packet_size_ = 4096;
    std::optional<size_t> g_length_;
    TargetDescription target_;
    std::optional<bool> qemu_, openocd_;   // the server's identity, once known
    bool multiprocess_ = false;            // the server offered multiprocess+
    static constexpr uint32_t max_processes = 16;
    std::vector<uint32_t> attached_;       // processes attached besides the first (vAttach)
    std::string selected_;                 // the thread Hg selected last; empty: the server's choice
    std::string batch_thread_;             // read_registers_of: the thread of this batch
};

} // namespace mcuprof::transport
