#pragma once
// The DebugTarget of the virtual probe: a core behind a GDB remote server (QEMU's
// gdbstub), through transport::RspClient. Registers are read once per halt in one round
// trip and kept; memory in the Code and SRAM regions is read in 1 KiB lines while halted
// and kept until the core runs or anything is written. QEMU has no access to memory while
// the guest runs: a running core is held (halted, still "running" for the debugger) for an
// access, and stays held while accesses follow one another; it runs again when the
// debugger pauses (idle()) or asks for anything that needs it running.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "mcuprof/transport/rsp_client.h"
#include "mcuprof/transport/special_register_stub.h"
#include "mcuprof/vprobe/debug_target.h"

namespace mcuprof::vprobe {

class RspTarget : public DebugTarget {
public:
    struct Stats {
        uint64_t access_halts = 0;      // halts made only to access a running core (each holds it for a burst)
        uint64_t memory_requests = 0;   // 'm' and 'M' packets
        uint64_t cache_hits = 0;        // memory reads answered from a cached line
        uint64_t pc_samples = 0;
        uint64_t register_loads = 0;    // register sets read ('g' + 'p' in one round trip)
        uint64_t stub_runs = 0;         // special registers read or written by the stub
        uint64_t stub_steps = 0;        // single steps those took
    };

    // `rsp` has done its handshake; `halted` is the core's state now.
    RspTarget(transport::RspClient& rsp, bool halted);

    bool poll_halted() override;
    void halt() override;
    void resume() override;
    void step() override;
    void reset(bool halt_after) override;
    bool read_memory(uint32_t address, unsigned size, uint32_t& value) override;
    bool write_memory(uint32_t address, unsigned size, uint32_t value) override;
    bool has_register(const std::string& name) const override;
    std::optional<uint64_t> read_register(const std::string& name) override;
    bool write_register(const std::string& name, uint64_t value) override;
    // Where the server does not describe them: MRS/MSR instructions run below SP
    // (transport/special_register_stub.h), all six read in one run, once per halt.
    std::optional<uint32_t> read_special_register(const std::string& name) override;
    bool write_special_register(const std::string& name, uint32_t value) override;
    std::optional<bool> read_security_state() override;
    std::optional<uint32_t> sample_pc() override;
    void set_breakpoints(const std::set<uint32_t>& addresses) override;

    // The debugger paused: a core held for accesses runs again.
    void idle();
    // Removes the breakpoints it set and detaches; the server resumes the core.
    void detach();

    // A target that exits (QEMU's semihosting exit) or whose connection closes is gone: from
    // then on the core runs for the debugger but answers nothing (every access fails, a halt
    // never comes), like a board that lost power, so OpenOCD stays up and reports errors.
    // Empty while the target is there.
    const std::string& gone_reason() const { return gone_reason_; }
    std::function<void(const std::string&)> on_gone;

    const Stats& stats() const { return stats_; }
    static constexpr uint32_t cache_line = 1024;

private:
    // Runs `access` with the core stopped: a running core is halted and held, unless it
    // turns out to have stopped by itself (a breakpoint) meanwhile.
    template <class Access> auto while_stopped(Access access);
    // The stop reply of a halt; an exit makes the target gone.
    void stopped(const transport::StopReply& stop);
    struct Gone {};
    [[noreturn]] void lose(const std::string& reason);
    template <class Result, class Body> Result unless_gone(Result if_gone, Body body);
    void release_hold();
    void invalidate();
    bool load_registers();
    transport::HaltedCore halted_core();
    const std::string* cached_line(uint32_t line_address);

    transport::RspClient& rsp_;
    // running: the core runs. halted: halted for the debugger. held: halted for accesses
    // while the debugger believes it runs.
    enum class Core { running, halted, held, gone };
    Core core_;
    std::map<std::string, std::string> registers_;   // name -> little-endian bytes, while halted
    // The special registers read by the stub at this halt (each nullopt where it could not);
    // empty until read, cleared with registers_ and by any register write.
    std::map<std::string, std::optional<uint32_t>> special_;
    std::unordered_map<uint32_t, std::string> lines_; // line address -> bytes ("" = not readable)
    std::set<uint32_t> breakpoints_;
    Stats stats_;
    std::string gone_reason_;
};

} // namespace mcuprof::vprobe
