#include "mcuprof/target/openocd_halting_target.h"

#include <optional>
#include <sstream>

#include "mcuprof/target/openocd_scripts.h"
#include "mcuprof/target/pcsr_profile_reader.h"
#include "mcuprof/target/tcl_script.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/tcl_client.h"
#include "mcuprof/cortex_m.h"
#include "mcuprof/hex.h"

namespace mcuprof::sources {
namespace {

// The registers: mcuprof/cortex_m.h.
using cortex_m::dbgkey;
using cortex_m::demcr;
using cortex_m::dfsr;
using cortex_m::dfsr_halted;
using cortex_m::dhcsr;
using cortex_m::dhcsr_kept_controls;
using cortex_m::s_halt;
using cortex_m::s_sleep;
using cortex_m::trcena;

// The halting target behind OpenOCD's current target.
class TclHaltingTarget : public HaltingTarget {
public:
    explicit TclHaltingTarget(const TclTargetOptions& options) : options_(options)
    {
        tcl_ = connect();
        // The commands below act on the current target; with several (`targets`), that one.
        target_ = tcl_->eval("target current");
        const std::string names = tcl_->eval("target names");
        std::istringstream words(names);
        for (std::string name; words >> name;)
            ++target_count_;
        unsampled_ = other_openocd_cores(names, target_, [this](const std::string& name) {
            return tcl_->eval(result_or(tcl::on_target(name) + "cget -type", "{}"));
        });
        // Halt mode samples every other Cortex-M target OpenOCD has examined at the same halt:
        // their halt requests are written back to back in the halt's script (with --stacks, each
        // core's stack window read from its own SP in the same script). DWT_PCSR mode reads each
        // core's in every round of its batch (not OpenOCD's `profile`, which reads the current
        // target's only).
        if (!options_.pcsr || options_.pcsr_profile_gmon.empty())
            others_ = take_examined_cortex_m(unsampled_, [this](const std::string& name) {
                return tcl_->eval(result_or(tcl::on_target(name) + "was_examined", "0")) == "1";
            });
        // Jim Tcl's clock (OpenOCD built with its bundled Jim may lack it): times the halt requests.
        if (!others_.empty())
            clock_ = tcl_->eval("expr {[catch {clock microseconds}] ? 0 : 1}") == "1";
        initial_state_ = tcl_->eval("[target current] curstate");
        // OpenOCD calls a target's state "unknown" until it has polled it once; its background
        // polling starts from a timer after `init` (target.c, handle_target), so a client that
        // connects as soon as the Tcl port opens can ask first (Debian 13's OpenOCD, measured).
        // `poll` polls the current target now.
        if (initial_state_ == "unknown") {
            tcl_->eval("poll");
            initial_state_ = tcl_->eval("[target current] curstate");
        }
        if (initial_state_ != "running" && initial_state_ != "halted")
            throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "curstate",
                                   "target " + target_ + " is " + initial_state_ + ", neither running nor halted");
        if (!options_.pcsr_profile_gmon.empty())
            profile_reader_.emplace(options_.pcsr_profile_gmon, options_.profile_seed);
    }

    RunHeader::Link link_header() const override
    {
        RunHeader::Link link;
        link.source = LinkKind::openocd;
        link.openocd = options_.tcl.text();
        link.target = target_;
        link.targets = target_count_;
        link.target_selection = "the current target (OpenOCD's `target current`)";
        const bool pcsr = options_.pcsr;
        if (!others_.empty()) {
            link.target_selection = "the current target (OpenOCD's `target current`) as core 0, then every other "
                                    "examined cortex_m target, " +
                                    std::string(pcsr ? "its DWT_PCSR read in every round" : "halted in the same script");
            for (size_t i = 0; i <= others_.size(); ++i)
                link.cores.push_back({uint32_t(i), core_name(i), std::nullopt, i ? others_[i - 1] : target_});
            link.core_stops = core_stops();
        }
        if (pcsr)
            link.round_trip = others_.empty() ? "one Tcl eval per batch of DWT_PCSR reads, the core running"
                                              : "one Tcl eval per batch of rounds, each a DWT_PCSR read of every "
                                                "core in turn, the cores running";
        else if (options_.stacks)
            link.round_trip = "one Tcl eval per sample through the debug registers (DHCSR C_HALT, DCRSR/DCRDR): "
                              "r0-r12, sp, lr, pc, xPSR, the task pointer and a stack window; further stack reads "
                              "while halted, then the resume (DHCSR)";
        else
            link.round_trip = "one Tcl eval per sample through the debug registers: DHCSR C_HALT, pc, lr, sp and "
                              "xPSR by DCRSR/DCRDR, DHCSR again to resume";
        return link;
    }
    // How the cores stop (the recording's "core_stops", docs/formats.md).
    RunHeader::CoreStops core_stops() const
    {
        if (options_.pcsr)
            return {CoreSkew::not_measured,
                    "DWT_PCSR reads stop no core: each round reads core 0's, then each other core's, one memory read "
                    "after another, the cores running (a fallback to halts is timed as halts)"};
        if (!clock_)
            return {CoreSkew::not_measured, "halt requests written back to back in one Tcl script; this OpenOCD's "
                                            "Tcl has no `clock microseconds` to time them"};
        return {CoreSkew::measured,
                "halt requests written back to back in one Tcl script, core 0's first, each timed by OpenOCD's "
                "clock: a core stops while its request is written (a few cycles after it arrives), so its stop "
                "after core 0's lies between the start of its own request less the end of core 0's and the end "
                "of its own less the start of core 0's"};
    }
    std::string server() const override { return "OpenOCD"; }
    std::vector<std::string> unsampled_cores() override { return unsampled_; }
    std::vector<std::string> cores() const override
    {
        std::vector<std::string> names;
        for (size_t i = 0; !others_.empty() && i <= others_.size(); ++i)
            names.push_back(core_name(i));
        return names;
    }
    std::string core_name(size_t core) const
    {
        return "core " + std::to_string(core) + " (" + (core ? others_[core - 1] : target_) + ")";
    }
    std::string peer() const override { return tcl_ ? tcl_->peer() : "openocd tcl " + options_.tcl.text(); }

    void start(TargetEvents& events) override
    {
        if (initial_state_ == "halted") {
            tcl_->eval("resume");
            events.event("resume", "the target " + target_ + " was halted; resumed to sample it running");
        }
        if (!options_.pcsr)
            hold_off_halting_polls(events);
    }
    // Halt mode halts behind OpenOCD's back: its poll must not see those halts (it would run
    // its debug entry, and then believe the target halted). Polling stays off until the end;
    // DFSR is read once, to leave its HALTED bit as it was found.
    void hold_off_halting_polls(TargetEvents& events)
    {
        hold_off_polling(events, "OpenOCD's background polling off while mcuprof halts the core through its debug "
                               "registers; on again at the end");
        dfsr_found_ = read_word("", dfsr, "DFSR");
        others_dfsr_found_.clear();
        for (const std::string& other : others_)
            others_dfsr_found_.push_back(read_word(other, dfsr, "DFSR"));
    }
    // After a halt this sampler made (stay_halted): DHCSR as it was found, C_HALT clear.
    // Several cores: each as it was found, core 0's first, in one script.
    void resume() override
    {
        if (halted_by_us_) {
            tcl::Script script = {tcl::write_word("", dhcsr, dhcsr_resume_)};
            for (size_t i = 0; i < others_resume_.size() && i < others_.size(); ++i)
                script << tcl::write_word(tcl::on_target(others_[i]), dhcsr, others_resume_[i]);
            tcl_->eval(script.text());
        } else {
            tcl_->eval("resume");
        }
        halted_by_us_ = false;
        selected_ = 0;
    }
    // Later reads (the unwinder's memory, a stack pointer) go to that core's target: its own
    // access port, whose view of memory may differ (an STM32H745's Cortex-M7 TCMs).
    void select_core(size_t core) override { selected_ = core <= others_.size() ? core : 0; }
    // The target later reads go to: empty for the current one.
    std::string selected_target() const { return selected_ == 0 ? std::string() : others_[selected_ - 1]; }

    // One Tcl script (halt_script): every core's DHCSR read (a core halted already, by a
    // breakpoint or another debugger, is left alone: the recording ends there), the halt
    // requests, the registers and memory ranges, and the resume in the same script unless the
    // request stays halted.
    Halt halt_and_read(const HaltRequest& request) override
    {
        Halt halt;
        halt.ran_until = Clock::now();   // when it halted inside the round trip is not known
        halt.running = !request.stay_halted;
        const std::string answer = tcl_->eval(halt_script(others_, request, clock_));
        halt.stopped = Clock::now();
        const HaltAnswer a = parse_halt_answer(answer, tcl_->peer());
        if (a.found_halted) {
            // Someone else's halt: not ours to end, and not a sample of the running program.
            halted_by_other_ = true;
            const size_t core = *a.found_halted;
            halt.ended = TargetEnd{false, (others_.empty() ? std::string("the core") : "the " + core_name(core)) +
                                              " was found halted by someone else (DHCSR " +
                                              hex32(a.found.empty() ? 0 : a.found[core]) +
                                              ": a breakpoint, or another debugger): left halted"};
            return halt;
        }
        // DHCSR as each core was found, core 0 first: its S_SLEEP says whether the halt caught
        // that core asleep, which only this read before the halt can tell (the halt wakes it).
        if (a.found.size() != others_.size() + 1)
            throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "DHCSR",
                                   "the halt script gave " + std::to_string(a.found.size()) + " words, not " +
                                       std::to_string(others_.size() + 1));
        dhcsr_resume_ = dbgkey | (a.found[0] & dhcsr_kept_controls);
        others_resume_.clear();
        for (size_t i = 1; i < a.found.size(); ++i)
            others_resume_.push_back(dbgkey | (a.found[i] & dhcsr_kept_controls));
        halted_by_us_ = !halt.running;
        halted_once_ = true;
        halt.state = parse_halt_state(a.rest, request, tcl_->peer(), others_.size(), request.other_cores_stack_bytes > 0);
        for (uint32_t word : a.found)
            halt.state.asleep.push_back((word & s_sleep) != 0);
        if (clock_) {
            // OpenOCD's clock, microseconds: h[0] before core 0's halt request, h[k + 1] after core k's.
            if (a.clock_us.size() != others_.size() + 2)
                throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "clock microseconds",
                                       "the halt script gave " + std::to_string(a.clock_us.size()) +
                                           " clock readings, not " + std::to_string(others_.size() + 2));
            halt.state.stop_after = stops_after_core0(a.clock_us);
        }
        return halt;
    }
    HaltState read_halt_state(const HaltRequest& request) override
    {
        return parse_halt_state(tcl_->eval(halt_state_script(request)), request, tcl_->peer());
    }
    // MSP or PSP of the core this sampler halted, by DCRSR like the others.
    std::optional<uint32_t> read_stack_pointer(StackPointer which, const core::CoreRegisters&) override
    {
        if (!halted_by_us_)
            return std::nullopt;
        return tcl::parse_word(tcl_->eval(stack_pointer_script(selected_target(), which)), tcl_->peer(),
                                          "DCRDR");
    }
    std::string read_memory(uint32_t address, uint32_t length) override
    {
        const WordRange w = words_of({address, length});
        try {
            const std::string text = tcl_->eval(tcl::read_words(tcl::on_target(selected_target()), w.first, w.words));
            return bytes_of(tcl::parse_words(text, tcl_->peer(), "read_memory"), w, length);
        } catch (const transport::Error& e) {
            if (e.kind() != transport::Error::Kind::protocol)
                throw;
            return {};   // OpenOCD could not read it (a bus fault)
        }
    }
    // A protocol error here is OpenOCD's answer to a command that failed: the link is up.
    bool link_survives(const transport::Error& e) const override
    {
        return e.kind() == transport::Error::Kind::protocol;
    }

    // DHCSR answers whenever the debug port does, whatever the core is doing (ARMv7-M ARM,
    // C1.6.2): when OpenOCD cannot read it, its probe link (a USB cable, stlink-server) or the
    // probe's wires to the target are gone.
    bool reaches_target() override
    {
        try {
            return tcl::parse_words(tcl_->eval(tcl::read_words("", dhcsr, 1)), tcl_->peer(), "DHCSR").size() ==
                   1;
        } catch (const transport::Error&) {
            return false;
        }
    }

    bool enable_pcsr(TargetEvents& events) override
    {
        // Each core's own DEMCR (empty: the current target's), then one plain read (a round: one
        // per core); with --pcsr-read profile that read places the window.
        std::vector<DebugWordAccess> cores;
        for (size_t core = 0; core <= others_.size(); ++core) {
            const std::string target = core ? others_[core - 1] : "";
            cores.push_back({"target " + (core ? target : target_),
                             [this, target](uint32_t address) { return read_word(target, address, hex32(address)); },
                             [this, target](uint32_t address, uint32_t value) {
                                 tcl_->eval(tcl::write_word(tcl::on_target(target), address, value));
                             }});
        }
        const auto probe = set_up_pcsr(events, cores, [this] { return read_memory_pcsr(1); });
        if (!probe)
            return false;   // polling as it was: the loop refuses, or halts after fall_back_to_halts
        if (profile_reader_) {
            hold_off_polling(events, "OpenOCD's background polling off while profile chunks run; on again at the end");
            profile_reader_->place((*probe)[0]);
        }
        return true;
    }
    // Halt mode after all (--mode pcsr,halt on a core without DWT_PCSR): as start() prepares it.
    void fall_back_to_halts(TargetEvents& events) override { hold_off_halting_polls(events); }
    // OpenOCD polls the target (a DHCSR read, 3 USB commands through an ST-Link) before each
    // command it runs and 10 times a second while idle (OpenOCD 0.12's command.c, exec_command
    // -> target_call_timer_callbacks_now; target.c, handle_target), which comes on top of a
    // `profile` call's own three polls. `poll off` stops that until the end (leave_running
    // turns it back on); `profile` still polls, so OpenOCD's idea of the target stays fresh.
    void hold_off_polling(TargetEvents& events, const std::string& why)
    {
        if (polling_held_off_ || tcl_->command({"poll"}).find("background polling: on") == std::string::npos)
            return;
        tcl_->eval("poll off");
        polling_held_off_ = true;
        events.event("poll", why);
    }
    void restore_polling()
    {
        if (polling_held_off_)
            tcl_->eval("poll on");
        polling_held_off_ = false;
    }
    std::vector<uint32_t> read_pcsr(unsigned count) override
    {
        return profile_reader_ ? profile_reader_->read(*tcl_, count) : read_memory_pcsr(count);
    }
    // OpenOCD's profile chunks: each round trip is one `profile` call (the batch figure is
    // their mean reads), and the reads no sample came from are the reader's to count.
    void account_pcsr(PcsrStats& stats) const override
    {
        if (!profile_reader_)
            return;
        stats.batch = profile_reader_->reads_per_call();
        stats.reads = profile_reader_->reads();
        stats.unused_reads = profile_reader_->outside() + profile_reader_->unused();
    }
    size_t pcsr_cores() const override { return profile_reader_ ? 1 : others_.size() + 1; }
    std::vector<uint32_t> read_memory_pcsr(unsigned count)
    {
        std::vector<uint32_t> reads =
            tcl::parse_words(tcl_->eval(pcsr_batch_script(count, others_)), tcl_->peer(), "DWT_PCSR");
        if (reads.size() != size_t(count) * (others_.size() + 1))
            throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "DWT_PCSR",
                                   "read " + std::to_string(reads.size()) + " words, not " +
                                       std::to_string(size_t(count) * (others_.size() + 1)));
        return reads;
    }

    // Never leave the target halted: the halt script resumes in the same round trip, and this
    // checks once more (an error, a signal between halt and resume, someone else's halt).
    void leave_running(TargetEvents& events, bool link_lost) override
    {
        if (profile_reader_ && profile_reader_->reads() > 0)   // none: it never ran (no DWT_PCSR)
            events.event("pcsr", "OpenOCD's profile read DWT_PCSR " + std::to_string(profile_reader_->reads()) +
                                   " times: " + std::to_string(profile_reader_->outside()) +
                                   " outside the 256 KiB window (or halted), " +
                                   std::to_string(profile_reader_->unused()) + " placing it or past the count");
        try {
            if (link_lost) {
                // The link dropped, perhaps not OpenOCD: ask over a new connection.
                tcl_.reset();
                tcl_ = connect();
            }
            // A halt of ours the script could not undo (the link failed inside it): the core is
            // halted behind OpenOCD's back; DHCSR as found resumes it. Someone else's halt stays.
            if (link_lost && halted_once_ && !halted_by_other_ &&
                read_word("", dhcsr, "DHCSR") & s_halt) {
                tcl_->eval(tcl::write_word("", dhcsr, dhcsr_resume_));
                events.event("resume", "the core " + target_ + " was left halted by a sample cut short; resumed");
            } else if (halted_by_us_) {
                resume();
            }
            // The other cores that script halted: their control bits as they are now (C_HALT,
            // ours, is not among them) resume them.
            for (const std::string& other : others_) {
                if (!link_lost || !halted_once_ || halted_by_other_)
                    break;
                const uint32_t now = read_word(other, dhcsr, "DHCSR");
                if (now & s_halt) {
                    tcl_->eval(tcl::write_word(tcl::on_target(other), dhcsr, dbgkey | (now & dhcsr_kept_controls)));
                    events.event("resume", "the core " + other + " was left halted by a sample cut short; resumed");
                }
            }
            halted_by_us_ = false;
            // DFSR.HALTED as found: our halt requests set it (OpenOCD reads it to tell why
            // the core halted next time).
            if (halted_once_ && !halted_by_other_ && !(dfsr_found_ & dfsr_halted))
                tcl_->eval(tcl::write_word("", dfsr, dfsr_halted));
            for (size_t i = 0; halted_once_ && !halted_by_other_ && i < others_dfsr_found_.size(); ++i)
                if (!(others_dfsr_found_[i] & dfsr_halted))
                    tcl_->eval(tcl::write_word(tcl::on_target(others_[i]), dfsr, dfsr_halted));
            restore_polling();   // before curstate: its dispatch then polls the target
            // Our own halts are undone above; a core halted now was halted by someone else (a
            // debugger beside us: DWT_PCSR reads go on while it holds the core, and read as
            // halted), and stays so.
            if (halted_by_other_ || tcl_->eval("[target current] curstate") == "halted")
                events.event("left-halted", "the core " + target_ + " was halted by someone else; left halted");
        } catch (const transport::Error& e) {
            events.event("resume-failed", std::string("could not make sure the target runs: ") + e.what());
        }
    }

private:
    // One word of `target`'s memory (empty: the current target's), a register.
    uint32_t read_word(const std::string& target, uint32_t address, const std::string& what)
    {
        return tcl::parse_word(tcl_->eval(tcl::read_words(tcl::on_target(target), address, 1)),
                                          tcl_->peer(), what);
    }
    std::unique_ptr<transport::TclClient> connect() const
    {
        transport::TclClient::Options tcl;
        tcl.timeout = options_.timeout;
        return std::make_unique<transport::TclClient>(options_.tcl, tcl);
    }

    TclTargetOptions options_;
    std::unique_ptr<transport::TclClient> tcl_;
    std::string target_;
    std::vector<std::string> unsampled_;   // OpenOCD's other targets, not sampled
    std::vector<std::string> others_;      // OpenOCD's other cortex_m targets, sampled as cores 1, 2, ...
    std::vector<uint32_t> others_dfsr_found_;
    std::vector<uint32_t> others_resume_;   // the other cores' DHCSR as found, C_HALT clear
    size_t selected_ = 0;                   // the core later reads go to (select_core)
    size_t target_count_ = 0;
    std::string initial_state_;
    std::optional<PcsrProfileReader> profile_reader_;   // --pcsr-read profile
    bool polling_held_off_ = false;                      // `poll off` sent, `poll on` owed
    uint32_t dhcsr_resume_ = 0;     // DHCSR as found, C_HALT clear: what resumes the core
    uint32_t dfsr_found_ = 0;
    bool clock_ = false;            // OpenOCD's Tcl has `clock microseconds`: the halt requests are timed
    bool halted_by_us_ = false;     // a halt of ours awaits its resume (stay_halted)
    bool halted_once_ = false;
    bool halted_by_other_ = false;  // found halted: left so
};

} // namespace

std::unique_ptr<HaltingTarget> make_openocd_halting_target(const TclTargetOptions& options)
{
    return std::make_unique<TclHaltingTarget>(options);
}

} // namespace mcuprof::sources
