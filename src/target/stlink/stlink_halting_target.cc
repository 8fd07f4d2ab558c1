#include "mcuprof/target/stlink_halting_target.h"

#include "mcuprof/cortex_m.h"
#include "mcuprof/hex.h"
#include "mcuprof/link/error.h"
#include "mcuprof/target/stlink_link.h"

namespace mcuprof::sources {
namespace {

// The halting target behind an ST-Link.
class StlinkHaltingTarget : public HaltingTarget {
public:
    explicit StlinkHaltingTarget(const StlinkTargetOptions& options) : options_(options)
    {
        link_ = connect();
    }

    RunHeader::Link link_header() const override
    {
        RunHeader::Link link;
        link.source = LinkKind::stlink;
        link.stlink = options_.usb_serial ? "usb" + (options_.usb_serial->empty() ? "" : ":" + *options_.usb_serial)
                                          : options_.server.text();
        link.stlink_probe = link_->device() + ", firmware " + version_.text();
        link.round_trip =
            options_.pcsr ? std::string(version_.reads_one_address()
                                            ? "USB commands per batch: one READMEM_32BIT_NO_ADDR_INC of DWT_PCSR, up to "
                                              "1024 reads, the core never halted"
                                            : "USB commands per sample: READDEBUGREG DWT_PCSR (this firmware has no "
                                              "READMEM_32BIT_NO_ADDR_INC), the core never halted")
                          : "USB commands per sample: READDEBUGREG DHCSR (someone else's halt, S_SLEEP), WRITEDEBUGREG "
                            "DHCSR C_HALT, READALLREGS (r0-r15, xPSR, MSP, PSP, CONTROL), with stacks one READMEM_32BIT "
                            "of the window from the new SP, then further windows as frames need, WRITEDEBUGREG DHCSR "
                            "as found to resume";
        return link;
    }
    std::string server() const override { return "the ST-Link"; }
    std::string peer() const override
    {
        return link_ ? link_->peer() : options_.usb_serial ? "ST-Link on USB" : "stlink-server " + options_.server.text();
    }
    std::optional<uint64_t> probe_commands() const override { return commands_before_ + (link_ ? link_->commands() : 0); }

    // A core found halted at the start is resumed, as on OpenOCD's Tcl port, with an event,
    // unless another program shares the probe (its debugger's halt, left to it); DFSR as
    // found, to leave its HALTED bit as it was (our halt requests set it: C1.6.1).
    void start(TargetEvents& events) override
    {
        const std::optional<unsigned> clients = options_.halt_shared ? std::nullopt : link_->clients();
        if (!clients && !options_.pcsr && !options_.halt_shared)
            events.event("shared-unknown", "the stlink-server does not say how many programs share the probe "
                                           "(GET_NB_OF_DEV_CLIENTS): a debugger beside this sampler would see "
                                           "its halts, and a halt of its own could be undone by a resume");
        const uint32_t found = link_->read_debug_register(cortex_m::dhcsr);
        dfsr_found_ = link_->read_debug_register(cortex_m::dfsr);
        if ((found & cortex_m::s_halt) && clients && *clients > 1) {
            events.event("left-halted", "the core is halted and " + std::to_string(*clients) +
                                            " programs have the ST-Link open: left halted for the other's debugger");
            return;
        }
        if (found & cortex_m::s_halt) {
            const uint32_t controls = (found & cortex_m::dhcsr_kept_controls) | cortex_m::c_debugen;
            link_->write_debug_register(cortex_m::dhcsr, cortex_m::dbgkey | controls);
            events.event("resume", "the core was halted; resumed to sample it running");
        }
    }
    void resume() override
    {
        if (halted_by_us_)
            link_->write_debug_register(cortex_m::dhcsr, dhcsr_resume_);
        halted_by_us_ = false;
    }
    Halt halt_and_read(const HaltRequest& request) override
    {
        Halt halt;
        // Another program on the probe (a debugger through the same stlink-server): halting
        // beside it would show its poll halts it never made, and a halt of its own that came
        // between ours and our resume would be undone by it (DHCSR reads the same either way).
        // So while it has the probe open, no halts; a debugger that opens the probe during a
        // sample is still initialising when the resume goes out (OpenOCD's examine alone is
        // more USB commands than one sample's four), so its first halt comes after it.
        if (const std::optional<unsigned> clients = options_.halt_shared ? std::nullopt : link_->clients();
            clients && *clients > 1) {
            halt.yielded = std::to_string(*clients - 1) + " other program" + (*clients > 2 ? "s have" : " has") +
                           " the ST-Link open on the stlink-server (a debugger?): halting beside it would "
                           "show it halts it never made (--mode pcsr samples without halting)";
            return halt;
        }
        // DHCSR first (ARMv7-M ARM, C1.6.2): a core halted already (a breakpoint, a debugger
        // sharing the probe) is someone else's, and S_SLEEP is known only before our halt wakes it.
        const uint32_t found = link_->read_debug_register(cortex_m::dhcsr);
        if (found & cortex_m::s_halt) {
            halted_by_other_ = true;
            halt.ran_until = halt.stopped = Clock::now();
            halt.ended = TargetEnd{false, "the core was found halted by someone else (DHCSR " + hex32(found) +
                                              ": a breakpoint, or another debugger): left halted"};
            return halt;
        }
        // C_DEBUGEN set with C_HALT: a halt request is ignored without it (C1.6.2); the other
        // controls as found, and as found again to resume.
        const uint32_t controls = (found & cortex_m::dhcsr_kept_controls) | cortex_m::c_debugen;
        dhcsr_resume_ = cortex_m::dbgkey | controls;
        halt.ran_until = Clock::now();
        link_->write_debug_register(cortex_m::dhcsr, cortex_m::dbgkey | controls | cortex_m::c_halt);
        halt.stopped = Clock::now();
        halted_by_us_ = halted_once_ = true;
        try {
            halt.state = read_halt_state(request);
        } catch (const transport::Error& e) {
            if (e.kind() != transport::Error::Kind::protocol)
                throw;
            not_halted_check();   // READALLREGS fails on a running core: say why it runs
            throw;
        }
        halt.state.asleep.push_back((found & cortex_m::s_sleep) != 0);
        if (!request.stay_halted) {
            resume();
            halt.running = true;
        }
        return halt;
    }
    HaltState read_halt_state(const HaltRequest& request) override
    {
        HaltState state;
        const stlink::AllRegisters all = link_->read_all_registers();
        for (size_t i = 0; i < 16; ++i)
            state.registers.r[i] = all.words[i];
        state.registers.xpsr = all.words[cortex_m::regsel_xpsr];
        state.registers.msp = all.words[cortex_m::regsel_msp];
        state.registers.psp = all.words[cortex_m::regsel_psp];
        for (size_t i = 0; i < request.memory.size(); ++i)
            state.memory.push_back(request.stack_guess == i ? std::string()
                                                            : read_memory(request.memory[i].first, request.memory[i].second));
        if (request.stack_bytes > 0)
            state.stack_window = stack_window(state.registers.r[cortex_m::core_reg::sp], request);
        return state;
    }
    std::string read_memory(uint32_t address, uint32_t length) override
    {
        // READMEM_32BIT reads whole aligned words: the words around the range, then the range.
        const uint32_t first = address & ~3u;
        const uint32_t words_end = uint32_t((uint64_t(address) + length + 3) & ~uint64_t(3));
        const std::string words = link_->read_memory(first, words_end - first, true);
        return words.empty() ? words : words.substr(address - first, length);
    }
    // DEMCR.TRCENA and the check that DWT_PCSR is there, as every link makes them (set_up_pcsr),
    // through READDEBUGREG/WRITEDEBUGREG, which carry their own status.
    bool enable_pcsr(TargetEvents& events) override
    {
        const DebugWordAccess core{"the ST-Link's core",
                                   [this](uint32_t address) { return link_->read_debug_register(address); },
                                   [this](uint32_t address, uint32_t value) {
                                       link_->write_debug_register(address, value);
                                   }};
        return set_up_pcsr(events, {core}, [this] {
                   return std::vector<uint32_t>{link_->read_debug_register(cortex_m::dwt_pcsr)};
               }).has_value();
    }
    // A batch: the running core's PC `count` times (ARMv7-M ARM, C1.8.4: 0xFFFFFFFF while it is
    // halted, which the loop drops), as many to a USB command as the firmware allows.
    std::vector<uint32_t> read_pcsr(unsigned count) override
    {
        if (version_.reads_one_address())
            return link_->read_word_repeatedly(cortex_m::dwt_pcsr, count);
        std::vector<uint32_t> reads;
        for (unsigned i = 0; i < count; ++i)
            reads.push_back(link_->read_debug_register(cortex_m::dwt_pcsr));
        return reads;
    }

    // A status the probe answered is the probe's refusal: the link is up.
    bool link_survives(const transport::Error& e) const override { return e.kind() == transport::Error::Kind::protocol; }
    // DHCSR answers whenever the debug port does (C1.6.2).
    bool reaches_target() override
    {
        try {
            link_->read_debug_register(cortex_m::dhcsr);
            return true;
        } catch (const transport::Error&) {
            return false;
        }
    }

    void leave_running(TargetEvents& events, bool link_lost) override
    {
        try {
            if (link_lost) {
                // The server may be there still (a dropped connection): ask over a new one.
                commands_before_ += link_->commands();
                link_.reset();
                link_ = connect();
                const uint32_t now = link_->read_debug_register(cortex_m::dhcsr);
                if (halted_once_ && !halted_by_other_ && (now & cortex_m::s_halt)) {
                    link_->write_debug_register(cortex_m::dhcsr, dhcsr_resume_);
                    events.event("resume", "the core was left halted by a sample cut short; resumed");
                }
                halted_by_us_ = false;
            }
            resume();
            if (halted_once_ && !halted_by_other_ && !(dfsr_found_ & cortex_m::dfsr_halted))
                link_->write_debug_register(cortex_m::dfsr, cortex_m::dfsr_halted);   // write one to clear (C1.6.1)
            if (halted_by_other_)
                events.event("left-halted", "the core was halted by someone else; left halted");
            link_->close();
        } catch (const transport::Error& e) {
            events.event("resume-failed", std::string("could not make sure the target runs: ") + e.what());
        }
    }

private:
    std::unique_ptr<stlink::StlinkLink> connect()
    {
        auto link = std::make_unique<stlink::StlinkLink>(
            options_.usb_serial ? stlink::open_stlink_usb(*options_.usb_serial, options_.timeout)
                                : stlink::make_stlink_server_transport(options_.server, options_.timeout));
        version_ = link->read_version();
        link->enter_swd();
        return link;
    }

    // The window from SP in one command: up to the request's bytes, the top of the stack, and
    // the end of SP's 1 KiB block (one READMEM_32BIT never crosses it, stlink_link.h); deeper
    // frames are read as the unwinder needs them. Unchecked: GETLASTRWSTATUS2 would be a sixth
    // command, and SP is memory the core itself stacks exception frames to, so it is readable;
    // the stack's top bounds the window.
    MemoryWindow stack_window(uint32_t sp, const HaltRequest& request)
    {
        MemoryWindow window;
        window.address = sp & ~3u;
        uint64_t end = uint64_t(window.address) + request.stack_bytes;
        if (request.stack_top && window.address < *request.stack_top)
            end = std::min<uint64_t>(end, *request.stack_top);
        end = std::min<uint64_t>(end, (uint64_t(window.address) | (stlink::tar_block - 1)) + 1);
        if (end > window.address)
            window.bytes = link_->read_memory(window.address, uint32_t(end - window.address), false);
        return window;
    }

    // After a halt request whose registers could not be read: a core still running did not
    // halt. C_DEBUGEN reading 0 after we set it means the part does not allow halting debug
    // (RAZ/WI then: ARMv8-M ARM, DDI 0553, DHCSR; a secured part's debug authentication);
    // otherwise the halt did not take (the core held in reset, locked up, its clock off).
    void not_halted_check()
    {
        const uint32_t now = link_->read_debug_register(cortex_m::dhcsr);
        if (now & cortex_m::s_halt)
            return;
        halted_by_us_ = false;   // nothing of ours to resume
        throw transport::Error(transport::Error::Kind::protocol, peer(), "halt",
                               "the core did not halt (DHCSR " + hex32(now) + " after C_HALT" +
                                   ((now & cortex_m::c_debugen)
                                        ? "; held in reset, locked up or without a clock?)"
                                        : ": C_DEBUGEN reads 0, so this part does not allow halting debug); "
                                          "--mode pcsr samples the PC without halting"));
    }

    StlinkTargetOptions options_;
    std::unique_ptr<stlink::StlinkLink> link_;
    stlink::Version version_;
    uint64_t commands_before_ = 0;   // the commands of links lost before this one
    uint32_t dhcsr_resume_ = cortex_m::dbgkey | cortex_m::c_debugen;
    uint32_t dfsr_found_ = 0;
    bool halted_by_us_ = false;      // a halt of ours awaits its resume
    bool halted_once_ = false;
    bool halted_by_other_ = false;   // found halted: left so
};

} // namespace

std::unique_ptr<HaltingTarget> make_stlink_halting_target(const StlinkTargetOptions& options)
{
    return std::make_unique<StlinkHaltingTarget>(options);
}

} // namespace mcuprof::sources
