#pragma once
// The DebugTarget of the virtual probe: a core behind a GDB remote server (QEMU's
// gdbstub), through transport::RspClient. Registers are read once per halt in one round
// trip and kept; memory in the Code and SRAM regions is read in 1 KiB lines while halted
// and kept until the core runs or anything is written. QEMU has no access to memory while
// the guest runs: a running core is held (halted, still "running" for the debugger) for an
// access, and stays held while accesses follow one another; it runs again when the
// debugger pauses (idle()) or asks for anything that needs it running.
//
// Several cores (QEMU's mps2-an521: each CPU cluster a GDB process, each CPU a thread) are one
// machine behind one all-stop gdbstub: an interrupt stops every core, 'c' resumes every core.
// Each core has a DebugTarget of its own (core(i)); a core the debugger halted stops the whole
// machine, and the other cores, still running for their debuggers, are stalled (they retire
// nothing) until every halted core is resumed. Registers and uncached memory accesses go to the
// core's own thread (Hg, Hc); a core's step runs that core alone (vCont;s), the others stay stopped.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "mcuprof/link/rsp_client.h"
#include "mcuprof/link/special_register_stub.h"
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
        // A multi-core machine: for each halt of a core that came while another core's halt
        // had stopped the machine, the time since that first halt (seconds). On silicon each
        // core stops when its own halt request reaches it, so this is the skew between the
        // cores' stops a probe as fast as this one gives; here the later core was stalled
        // meanwhile, stopped at the same instant as the first.
        std::vector<double> halt_skews;
    };

    // `rsp` has done its handshake; `halted` is the core's state now.
    RspTarget(transport::RspClient& rsp, bool halted);
    ~RspTarget() override;

    // Attaches every core the server has (RspClient::attach_every_process) and returns how
    // many there are; 1 (this object alone) where the server shows one thread. Call before the
    // first resume. `halted` as for the constructor: every core's state now.
    unsigned attach_cores(bool halted);
    unsigned cores() const { return unsigned(cores_.size()); }
    // Core i's DebugTarget; core 0 is this object.
    DebugTarget& core(unsigned i);

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
    void let_run() override { idle(); }
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
    class OtherCore;
    // The DebugTarget operations of core `c`.
    bool poll_halted(unsigned c);
    void halt(unsigned c);
    void resume(unsigned c);
    void step(unsigned c);
    void reset(unsigned c, bool halt_after);
    bool read_memory(unsigned c, uint32_t address, unsigned size, uint32_t& value);
    bool write_memory(unsigned c, uint32_t address, unsigned size, uint32_t value);
    std::optional<uint64_t> read_register(unsigned c, const std::string& name);
    bool write_register(unsigned c, const std::string& name, uint64_t value);
    std::optional<uint32_t> read_special_register(unsigned c, const std::string& name);
    bool write_special_register(unsigned c, const std::string& name, uint32_t value);
    std::optional<bool> read_security_state(unsigned c);
    std::optional<uint32_t> sample_pc(unsigned c);
    void set_breakpoints(unsigned c, const std::set<uint32_t>& addresses);

    // Runs `access` with the machine stopped: a running machine is halted and held, unless a
    // core turns out to have stopped by itself (a breakpoint) meanwhile.
    template <class Access> auto while_stopped(Access access);
    // Interrupts the running machine and takes its stop reply.
    void stop_machine();
    // A stop reply: an exit makes the target gone; a breakpoint halts the core it names.
    void stopped(const transport::StopReply& stop);
    // Every core resumed for its debugger: the machine runs again.
    void resume_machine();
    bool any_halted() const;
    // Later register and memory requests (and steps) go to core `c`'s thread, with its
    // registers' description.
    void select(unsigned c);
    const transport::TargetDescription& description(unsigned c) const;
    bool has_register(unsigned c, const std::string& name) const;
    struct Gone {};
    [[noreturn]] void lose(const std::string& reason);
    template <class Result, class Body> Result unless_gone(Result if_gone, Body body);
    void release_hold();
    void invalidate();
    bool load_registers(unsigned c);
    transport::HaltedCore halted_core(unsigned c);
    const std::string* cached_line(unsigned c, uint32_t line_address);

    transport::RspClient& rsp_;
    // running: the machine runs. stopped: some core is halted for its debugger, or none is and
    // the machine is held for accesses while every debugger believes it runs.
    enum class Machine { running, stopped, gone };
    Machine machine_;
    struct Core {
        std::string thread;   // the server's thread id; empty on a one-core server (never selected)
        transport::TargetDescription description;   // its registers (multi-core only; else the client's)
        bool halted = false;  // halted for the debugger
        std::map<std::string, std::string> registers;   // name -> little-endian bytes, while halted
        // The special registers read by the stub at this halt (each nullopt where it could not);
        // empty until read, cleared with registers and by any register write.
        std::map<std::string, std::optional<uint32_t>> special;
        std::set<uint32_t> breakpoints;   // this core's FPB and software breakpoints
    };
    std::vector<Core> cores_;
    std::vector<std::unique_ptr<OtherCore>> others_;
    std::string selected_;   // the thread the server's Hg/Hc select now; empty: not known
    unsigned described_ = 0; // the core whose description the client uses
    std::unordered_map<uint32_t, std::string> lines_; // line address -> bytes ("" = not readable); memory is shared
    std::chrono::steady_clock::time_point first_halt_;   // when a core's halt last stopped the machine
    std::set<uint32_t> inserted_;   // breakpoints given to the server (every core's: Z0 acts on every CPU)
    Stats stats_;
    std::string gone_reason_;
};

} // namespace mcuprof::vprobe
