#include "mcuprof/target/rsp_halting_target.h"

#include <cctype>
#include <thread>

#include "mcuprof/cortex_m.h"
#include "mcuprof/hex.h"
#include "mcuprof/target/tcl_script.h"
#include "mcuprof/target/openocd_scripts.h"
#include "mcuprof/target/stack_pointer_stub.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/rsp_client.h"

namespace mcuprof::sources {
namespace {

std::string describe_stop(const transport::StopReply& s)
{
    switch (s.kind) {
    case transport::StopReply::Kind::exited: return "the target exited with code " + std::to_string(s.value);
    case transport::StopReply::Kind::terminated: return "the target was terminated by signal " + std::to_string(s.value);
    case transport::StopReply::Kind::signal: break;
    }
    return "the target stopped by itself (signal " + std::to_string(s.value) + ")";
}

TargetEnd end_of(const transport::StopReply& s)
{
    return TargetEnd{s.kind != transport::StopReply::Kind::signal, describe_stop(s)};
}

// The halting target over a GDB server.
class RspHaltingTarget : public HaltingTarget {
public:
    static std::optional<uint32_t>& stack_register(core::CoreRegisters& registers, const std::string& name)
    {
        if (name == "msp")
            return registers.msp;
        if (name == "psp")
            return registers.psp;
        return name == "msplim" ? registers.msplim : registers.psplim;
    }

    explicit RspHaltingTarget(const RspTargetOptions& options) : options_(options)
    {
        gdb_ = connect();
        const transport::StopReply initial = gdb_->handshake();
        if (initial.kind != transport::StopReply::Kind::signal)
            throw transport::Error(transport::Error::Kind::protocol, gdb_->peer(), "", describe_stop(initial));
        // The registers read at every halt. IPSR, bits 8:0 of xPSR, tells a handler
        // (exception number) from thread mode (0); LR and SP start the unwinder (ARMv7-M
        // ARM, B1.4.2).
        for (int i = 0; i <= 12; ++i)
            all_registers_.push_back("r" + std::to_string(i));
        for (const char* name : {"sp", "lr", "pc", "xpsr"})
            all_registers_.push_back(name);
        // The banked stack pointers, where the server describes them (OpenOCD does; QEMU
        // 7.2's gdbstub does not): they let the unwinder cross from a handler to a task's stack.
        // ARMv8-M's stack limits too (QEMU 10's m-system feature): a frame below is implausible.
        for (const char* name : {"msp", "psp", "msplim", "psplim"})
            if (gdb_->target().find(name) != nullptr)
                all_registers_.push_back(name);
        qemu_ = gdb_->is_qemu();
        // Every core QEMU shows (one process per CPU cluster, each attached; each CPU a thread),
        // so that one halt reads them all: its interrupt stops every vCPU, its 'c' resumes them.
        // Other servers' threads may be an RTOS's tasks (OpenOCD's -rtos), not cores.
        if (qemu_) {
            threads_ = gdb_->attach_every_process();
            if (threads_.size() > 1)
                gdb_->select_thread(threads_[0]);
        } else if (gdb_->is_openocd()) {
            find_openocd_cores();
        }
    }

    RunHeader::Link link_header() const override
    {
        RunHeader::Link link;
        link.source = LinkKind::gdb;
        link.gdb = options_.gdb.text();
        link.server_is_qemu = qemu_;
        if (threads_.size() > 1) {
            for (size_t i = 0; i < threads_.size(); ++i)
                link.cores.push_back({uint32_t(i), core_name(i), threads_[i], std::nullopt});
            // QEMU's interrupt stops the whole machine for one stop reply (every vCPU at its next
            // instruction boundary), and no per-core stop time comes back.
            link.core_stops = {CoreSkew::none, "QEMU's gdbstub stops every vCPU for one stop reply (all-stop)"};
        }
        if (!openocd_others_.empty()) {
            link.cores.clear();
            for (size_t i = 0; i <= openocd_others_.size(); ++i)
                link.cores.push_back(
                    {uint32_t(i), core_name(i), std::nullopt, i ? openocd_others_[i - 1] : openocd_target_});
            link.target_selection = "the GDB port's target as core 0 (OpenOCD's halt), then every other examined "
                                    "cortex_m target, halted by one monitor script after it";
            link.core_stops =
                openocd_clock_
                    ? RunHeader::CoreStops{CoreSkew::measured,
                                           "core 0 halted by OpenOCD on the GDB interrupt, then the other cores by "
                                           "one monitor script after its stop reply, their halt requests timed by "
                                           "OpenOCD's clock inside the monitor command's round trip: a core's stop "
                                           "after core 0's is at most from the interrupt sent to its own request "
                                           "done, at least from the stop reply to its own request begun"}
                    : RunHeader::CoreStops{CoreSkew::not_measured,
                                           "core 0 halted by OpenOCD on the GDB interrupt, then the other cores by "
                                           "one monitor script after its stop reply; this OpenOCD's Tcl has no "
                                           "`clock microseconds` to time them"};
        }
        return link;
    }
    std::vector<std::string> unsampled_cores() override { return unsampled_; }
    std::vector<std::string> cores() const override
    {
        std::vector<std::string> names;
        const size_t count = openocd_others_.empty() ? threads_.size() : openocd_others_.size() + 1;
        for (size_t i = 0; count > 1 && i < count; ++i)
            names.push_back(core_name(i));
        return names;
    }
    void select_core(size_t core) override
    {
        if (!openocd_others_.empty()) {   // OpenOCD's other cores: read through their own targets
            selected_core_ = core <= openocd_others_.size() ? core : 0;
            return;
        }
        if (threads_.size() > 1 && core < threads_.size() && core != selected_core_) {
            gdb_->select_thread(threads_[core]);
            selected_core_ = core;
            general_registers_read_ = false;   // the stub puts back the registers of the core it found
        }
    }
    std::string server() const override { return "the GDB server"; }
    std::string peer() const override { return gdb_ ? gdb_->peer() : "gdb " + options_.gdb.text(); }

    // Connecting halted the target (QEMU, OpenOCD): let it run. OpenOCD's other cores: their DFSR
    // as found first (the monitor script's halt requests set its HALTED bit, which OpenOCD reads
    // to tell why a core halted next time; put back at the end, as the Tcl path does).
    void start(TargetEvents&) override
    {
        others_dfsr_found_.clear();
        for (const std::string& name : openocd_others_)
            others_dfsr_found_.push_back(tcl::parse_word(
                gdb_->monitor("{" + name + "} read_memory " + std::to_string(cortex_m::dfsr) + " 32 1"), gdb_->peer(),
                "DFSR"));
        resume();
    }
    void resume() override
    {
        // OpenOCD's other cores, kept halted for their stacks: resumed first, as found.
        if (others_kept_halted_) {
            gdb_->monitor(other_cores_resume_script(openocd_others_, others_resume_));
            others_kept_halted_ = false;
        }
        select_core(0);
        gdb_->resume();
        running_ = true;
        general_registers_read_ = false;
    }
    std::optional<TargetEnd> poll_stop() override
    {
        if (auto early = gdb_->poll_stop(transport::Duration::zero())) {
            running_ = false;
            return end_of(*early);
        }
        return std::nullopt;
    }
    std::optional<TargetEnd> wait_stop(transport::Duration timeout) override
    {
        const transport::StopReply reply = gdb_->wait_stop(timeout);
        running_ = false;
        if (reply.kind == transport::StopReply::Kind::signal)
            return std::nullopt;
        return end_of(reply);
    }
    Halt halt_and_read(const HaltRequest& request) override
    {
        Halt halt;
        const Clock::time_point interrupted = Clock::now();
        const transport::StopReply reply = gdb_->interrupt();
        running_ = false;
        halt.stopped = halt.ran_until = Clock::now();
        if (reply.kind != transport::StopReply::Kind::signal) {
            halt.ended = end_of(reply);
            return halt;
        }
        // OpenOCD's other cores, halted as soon as the port's own halt is reported: the skew
        // between the cores' stops is this one round trip (docs/live.md, "Several cores").
        OtherCoresRead others;
        std::vector<core::StopBounds> stop_after;
        if (!openocd_others_.empty()) {
            const Clock::time_point asked = Clock::now();
            const std::string answer = gdb_->monitor(other_cores_halt_script(openocd_others_, openocd_clock_, request));
            const Clock::time_point answered = Clock::now();
            others = parse_other_cores(answer, openocd_others_.size(), gdb_->peer(), request);
            stop_after = other_cores_stop_after(others, interrupted, halt.stopped, asked, answered);
            if (others.found_halted) {
                others_found_halted_ = true;   // someone else's halt: its DFSR is not ours to clear
                halt.ended = TargetEnd{false, "the " + core_name(*others.found_halted + 1) +
                                                  " was found halted by someone else (DHCSR " +
                                                  hex32(others.found_dhcsr) + ": a breakpoint, or another debugger): left halted"};
                return halt;
            }
        }
        halt.state = read_halt_state(request);
        if (!openocd_others_.empty()) {
            others_halted_ = true;
            others_kept_halted_ = request.stay_halted;
            others_resume_ = std::move(others.resume);
            halt.state.other_cores = std::move(others.registers);
            halt.state.other_stack_windows = std::move(others.windows);
            halt.state.stop_after = std::move(stop_after);
        }
        return halt;   // 'c' comes from the caller, after any further reads
    }
    HaltState read_halt_state(const HaltRequest& request) override
    {
        select_core(0);
        HaltState state;
        general_registers_read_ = request.all_registers;
        state.registers = read_core(std::nullopt, request, state.memory);
        // The other cores at the same halt: their registers, each in a round trip of its own.
        std::vector<std::string> none;
        for (size_t core = 1; core < threads_.size(); ++core)
            state.other_cores.push_back(
                read_core(threads_[core], HaltRequest{request.all_registers, {}, true, 0, {}, {}, 0}, none));
        return state;
    }
    // Described by the server: read by name; otherwise (QEMU 7.2) through the MRS stub.
    std::optional<uint32_t> read_stack_pointer(StackPointer which, const core::CoreRegisters& halted) override
    {
        static const char* const names[] = {"msp", "psp", "msp_ns", "psp_ns", "control_ns"};
        const char* name = names[size_t(which)];
        if (selected_core_ > 0 && !openocd_others_.empty()) {   // another core of OpenOCD's, halted by us
            if (!others_kept_halted_ || (which != StackPointer::main && which != StackPointer::process))
                return std::nullopt;
            return tcl::parse_word(
                gdb_->monitor(other_core_stack_pointer_script(openocd_others_[selected_core_ - 1], which)),
                gdb_->peer(), "DCRDR");
        }
        if (gdb_->target().find(name) != nullptr)
            return gdb_->read_registers({name})[0];
        const StubRead read = read_stack_pointer_by_stub(*gdb_, halted, general_registers_read_, which);
        stepped_ += read.stepped;
        return read.value;
    }
    uint64_t instructions_stepped() const override { return stepped_; }
    std::string read_memory(uint32_t address, uint32_t length) override
    {
        try {
            if (selected_core_ > 0 && !openocd_others_.empty()) {   // that core's own view of memory
                const std::string& target = openocd_others_[selected_core_ - 1];
                return other_core_memory(gdb_->monitor(other_core_memory_script(target, address, length)), address,
                                         length, gdb_->peer());
            }
            return gdb_->read_memory(address, length);
        } catch (const transport::Error& e) {
            if (e.kind() != transport::Error::Kind::protocol)
                throw;
            return {};   // an 'E' reply: memory the target does not have
        }
    }
    // Out of step on RSP is out of step for good: any error ends the link.
    bool link_survives(const transport::Error&) const override { return false; }
    std::string monitor(const std::string& command) override { return gdb_->monitor(command); }

    void leave_running(TargetEvents& events, bool link_lost) override
    {
        if (!link_lost) {
            // Leave the target as it was found: running. 'D' resumes a halted target; a
            // running one is halted first, since a byte sent to a running QEMU stops it anyway.
            if (running_)
                gdb_->interrupt();
            running_ = false;
            if (others_kept_halted_) {   // a halt cut short between its reads and its resume
                gdb_->monitor(other_cores_resume_script(openocd_others_, others_resume_));
                others_kept_halted_ = false;
            }
            restore_others_dfsr(*gdb_);
            gdb_->detach();
            return;
        }
        resume_over_a_new_link(events);
    }

private:
    std::string core_name(size_t core) const
    {
        if (!openocd_others_.empty())
            return "core " + std::to_string(core) + " (" + (core ? openocd_others_[core - 1] : openocd_target_) + ")";
        return "core " + std::to_string(core) + " (thread " + threads_[core] + ")";
    }

    // OpenOCD's GDB port serves one target, its monitor commands act on it: the other targets
    // are named as not sampled, except (halt mode without stacks) the examined cortex_m ones,
    // sampled as cores 1, 2, ... (other_cores_halt_script).
    void find_openocd_cores()
    {
        auto answer = [this](const std::string& command) {
            std::string text = gdb_->monitor(command);
            while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
                text.pop_back();
            return text;
        };
        auto answer_or_empty = [&](const std::string& command) {
            try {
                return answer(command);
            } catch (const transport::Error& e) {
                if (e.kind() != transport::Error::Kind::protocol)
                    throw;
                return std::string();
            }
        };
        openocd_target_ = answer("target current");
        unsampled_ = other_openocd_cores(answer("target names"), openocd_target_,
                                         [&](const std::string& name) { return answer_or_empty(name + " cget -type"); });
        // --stacks keeps the other cores halted between monitor commands, where OpenOCD's background
        // poll finds them halted and runs its debug entry (measured: "[qemu.cpu1] halted due to
        // undefined" in the next answer); until polling is held off over this port, they are named
        // as not sampled.
        if (options_.stacks)
            return;
        openocd_others_ = take_examined_cortex_m(
            unsampled_, [&](const std::string& name) { return answer_or_empty(name + " was_examined") == "1"; });
        // The other cores' halt requests are timed by OpenOCD's clock inside the monitor script
        // (other_cores_stop_after), where its Tcl has one.
        if (!openocd_others_.empty())
            openocd_clock_ = answer_or_empty("expr {[catch {clock microseconds}] ? 0 : 1}") == "1";
    }

    // One core's registers (the selected core's, or another thread's), with the request's
    // memory read in the same round trip.
    core::CoreRegisters read_core(const std::optional<std::string>& thread, const HaltRequest& request,
                                  std::vector<std::string>& memory)
    {
        static const std::vector<std::string> few = {"pc", "lr", "sp", "xpsr"};
        const std::vector<std::string>& names = request.all_registers ? all_registers_ : few;
        const std::vector<uint32_t> values = thread ? gdb_->read_registers_of(*thread, names, request.memory, memory)
                                                    : gdb_->read_registers(names, request.memory, memory);
        core::CoreRegisters registers;
        if (request.all_registers) {
            for (size_t i = 0; i < 16; ++i)
                registers.r[i] = values[i];
            registers.xpsr = values[16];
            for (size_t i = 17; i < all_registers_.size(); ++i)
                stack_register(registers, all_registers_[i]) = values[i];
        } else {
            registers.r[cortex_m::core_reg::pc] = values[0];
            registers.r[cortex_m::core_reg::lr] = values[1];
            registers.r[cortex_m::core_reg::sp] = values[2];
            registers.xpsr = values[3];
        }
        return registers;
    }

    // OpenOCD's other cores halted by the monitor script: DFSR.HALTED as found (write one to clear
    // it, ARMv7-M ARM C1.6.1), unless a core was found halted by someone else.
    void restore_others_dfsr(transport::RspClient& gdb) const
    {
        if (!others_halted_ || others_found_halted_)
            return;
        for (size_t i = 0; i < others_dfsr_found_.size() && i < openocd_others_.size(); ++i)
            if (!(others_dfsr_found_[i] & cortex_m::dfsr_halted))
                gdb.monitor("{" + openocd_others_[i] + "} write_memory " + std::to_string(cortex_m::dfsr) + " 32 " +
                            std::to_string(cortex_m::dfsr_halted));
    }

    std::unique_ptr<transport::RspClient> connect() const
    {
        transport::RspClient::Options rsp;
        rsp.timeout = options_.timeout;
        return std::make_unique<transport::RspClient>(options_.gdb, rsp);
    }

    // The link dropped, perhaps not the server (a proxy, a network, a stub that closed one
    // client): the target may be halted by our last interrupt. A new connection stops it (if
    // it ran) and detaching resumes it; a server that is gone refuses at once.
    void resume_over_a_new_link(TargetEvents& events)
    {
        gdb_.reset();   // close the broken connection first: QEMU's gdbstub serves one client
        // A server may not have noticed the old client leave yet and drop the new one (QEMU
        // does, measured through the fault proxy): a few tries, 0.1 s apart.
        constexpr int attempts = 3;
        for (int attempt = 1;; ++attempt) {
            try {
                std::unique_ptr<transport::RspClient> fresh = connect();
                fresh->handshake();
                if (others_kept_halted_)   // the DHCSR values the halt script found
                    fresh->monitor(other_cores_resume_script(openocd_others_, others_resume_));
                others_kept_halted_ = false;
                restore_others_dfsr(*fresh);
                fresh->detach();
                events.event("resume", "reconnected to " + options_.gdb.text() + " and detached: the target runs");
                return;
            } catch (const transport::Error& e) {
                if (attempt == attempts || e.kind() == transport::Error::Kind::connect) {
                    events.event("resume-failed",
                               std::string("could not reconnect to leave the target running: ") + e.what());
                    return;
                }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }

    RspTargetOptions options_;
    std::unique_ptr<transport::RspClient> gdb_;
    std::vector<std::string> all_registers_;
    bool running_ = false;   // on our 'c', no stop reply since
    // r0-r12 were read at this halt (a request with all_registers), and the core has not
    // run since: the stub puts them back from the halt's values instead of reading them.
    bool general_registers_read_ = false;
    uint64_t stepped_ = 0;   // single steps of the stack-pointer stub
    bool qemu_ = false;      // the server is QEMU's gdbstub
    std::vector<std::string> threads_;   // one per core the server shows, core 0 first
    std::string openocd_target_;               // OpenOCD: the GDB port's own target, core 0
    std::vector<std::string> openocd_others_;  // OpenOCD: its other cortex_m targets, cores 1, 2, ...
    std::vector<std::string> unsampled_;       // OpenOCD: its other targets, not sampled
    bool openocd_clock_ = false;               // OpenOCD: its Tcl has `clock microseconds`
    std::vector<uint32_t> others_dfsr_found_;  // OpenOCD: the other cores' DFSR before the first halt
    bool others_halted_ = false;               // OpenOCD: the monitor script halted the other cores
    bool others_found_halted_ = false;         // OpenOCD: it found one halted by someone else
    bool others_kept_halted_ = false;          // OpenOCD: the other cores wait for their resume script
    std::vector<uint32_t> others_resume_;      // what resumes them: each one's DHCSR as found, C_HALT clear
    size_t selected_core_ = 0;
};

} // namespace

std::unique_ptr<HaltingTarget> make_rsp_halting_target(const RspTargetOptions& options)
{
    return std::make_unique<RspHaltingTarget>(options);
}

} // namespace mcuprof::sources
