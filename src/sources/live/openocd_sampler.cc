#include "mcuprof/sources/openocd_sampler.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "mcuprof/sources/pcsr_profile_reader.h"
#include "mcuprof/link/error.h"
#include "mcuprof/link/tcl_client.h"
#include "mcuprof/cortex_m.h"
#include "mcuprof/hex.h"

namespace mcuprof::sources {
namespace {

// The registers: mcuprof/cortex_m.h.
using cortex_m::c_debugen;
using cortex_m::c_halt;
using cortex_m::dbgkey;
using cortex_m::dcrsr;
using cortex_m::demcr;
using cortex_m::dfsr;
using cortex_m::dfsr_halted;
using cortex_m::dhcsr;
using cortex_m::dhcsr_kept_controls;
using cortex_m::dwt_pcsr;
using cortex_m::regsel_msp;
using cortex_m::regsel_psp;
using cortex_m::s_halt;
using cortex_m::s_regrdy;
using cortex_m::s_sleep;
using cortex_m::trcena;

// The batch runs inside `capture`, which holds off OpenOCD's background polling of the
// target while its script runs (OpenOCD 0.12's command.c, jim_capture): without it OpenOCD
// slips a DHCSR poll between the reads, and a batch costs twice the probe commands
// (docs/live.md, "Through an ST-Link"). The PCs are the variable's value, not what
// `capture` returns (the log it caught).
// `others`: the other cores' targets, each read after core 0 in every round (one read per core).
std::string pcsr_batch_script(unsigned count, const std::vector<std::string>& others = {})
{
    std::string round = "lappend _mcuprof_o [read_memory " + std::to_string(dwt_pcsr) + " 32 1]";
    for (const std::string& name : others)
        round += "; lappend _mcuprof_o [{" + name + "} read_memory " + std::to_string(dwt_pcsr) + " 32 1]";
    return "capture {set _mcuprof_o {}; for {set _mcuprof_i 0} {$_mcuprof_i < " + std::to_string(count) +
           "} {incr _mcuprof_i} {" + round + "}}; set _mcuprof_o";
}

// Halting through the core's debug registers (ARMv7-M ARM, C1.6), with OpenOCD's memory
// commands, instead of OpenOCD's `halt`, `get_reg` and `resume`: OpenOCD's own halt runs its
// whole debug entry (every core register through DCRSR/DCRDR, DFSR, the FPU state) and its
// resume writes the registers back, about 340 USB commands a sample through an ST-Link
// (docs/live.md, "Halting at probe speed"). Each `read_memory`/`write_memory` here is one
// memory command to the probe; the whole sample is one Tcl script.

// A core register by its DCRSR REGSEL (C1.6.3).
struct CoreRegister {
    const char* name;
    uint32_t regsel;
};
// What every halt sample reads.
const std::vector<CoreRegister> sample_registers = {{"pc", 15}, {"lr", 14}, {"sp", 13}, {"xPSR", 16}};
// For unwinding every general register: the call-frame rules may compute the CFA from any
// of them or take a caller's value from one (with r7 alone the call-tree test's inclusive
// shares were off beyond 4 standard errors); PSP is read when a chain needs it.
const std::vector<CoreRegister> stack_registers = {
    {"pc", 15}, {"lr", 14}, {"sp", 13}, {"xPSR", 16}, {"r0", 0}, {"r1", 1}, {"r2", 2},   {"r3", 3},   {"r4", 4},
    {"r5", 5},  {"r6", 6},  {"r7", 7},  {"r8", 8},     {"r9", 9}, {"r10", 10}, {"r11", 11}, {"r12", 12}};

// Tcl that reads the registers `regsels` of the halted core into the list _mcuprof_v, the
// first one's DCRSR write already made: for each, DHCSR (S_REGRDY: the transfer is done; a
// few retries, it is set long before a probe's next command arrives) read with DCRDR in one
// three-word read (DHCSR, DCRSR, DCRDR are consecutive), then the next DCRSR write.
// `on` is the target's command prefix: empty for the current target, "{NAME} " for another
// (each OpenOCD target is a command whose subcommands act on it).
std::string register_reads(const std::vector<uint32_t>& regsels, const std::string& on = "")
{
    std::string next;
    for (size_t i = 1; i < regsels.size(); ++i)
        next += std::to_string(regsels[i]) + " ";
    return "set _mcuprof_v {}; foreach _mcuprof_s {" + next +
           "-1} {set _mcuprof_t 0; while 1 {set _mcuprof_w [" + on + "read_memory " + std::to_string(dhcsr) +
           " 32 3]; if {[lindex $_mcuprof_w 0] & " + std::to_string(s_regrdy) +
           "} break; if {[incr _mcuprof_t] == 4} {error \"DHCSR [lindex $_mcuprof_w 0]: S_REGRDY never set, the "
           "core did not halt or the register transfer did not end\"}}; lappend _mcuprof_v [lindex $_mcuprof_w 2]; "
           "if {$_mcuprof_s >= 0} {" + on + "write_memory " +
           std::to_string(dcrsr) + " 32 $_mcuprof_s}}; ";
}

std::vector<uint32_t> regsels_of(const std::vector<CoreRegister>& registers)
{
    std::vector<uint32_t> regsels;
    for (const CoreRegister& r : registers)
        regsels.push_back(r.regsel);
    return regsels;
}

// A memory range as the 32-bit reads OpenOCD makes: the words that cover it.
struct WordRange {
    uint32_t first;   // word-aligned address
    uint32_t words;
    uint32_t skip;    // bytes before the range in the first word
};

WordRange words_of(const MemoryRange& range)
{
    const uint32_t first = range.first & ~3u;
    const uint64_t end = uint64_t(range.first) + range.second;
    return {first, uint32_t((end - first + 3) / 4), range.first - first};
}

std::string bytes_of(const std::vector<uint32_t>& words, const WordRange& w, uint32_t length)
{
    std::string bytes;
    for (uint32_t word : words)
        for (int shift = 0; shift < 32; shift += 8)
            bytes.push_back(char(word >> shift & 0xFF));
    if (bytes.size() < uint64_t(w.skip) + length)
        return {};
    return bytes.substr(w.skip, length);
}

// The parts of a halt of several cores through their debug registers, core i by its command
// prefix prefixes[i] ("" for the current target, "{NAME} " for another), its DHCSR as found in
// _mcuprof_d<i>: every DHCSR read, whether any was found halted (a Tcl expression, S_HALT to be
// tested) and their values, the resume values (DHCSR as found, C_HALT clear), the halt requests
// (DHCSR C_HALT with the first register's DCRSR REGSEL, one two-word write) and the resumes.
// `timed`: the halt requests are timed by OpenOCD's clock (Jim Tcl's `clock microseconds`), into
// the list _mcuprof_h: before the first, then after each (core i's stop lies between items i and
// i + 1), which brackets each core's stop after the first's.
struct HaltScriptParts {
    std::string read_dhcsr, any_halted = "0", found, keys, halts, resumes;
};

HaltScriptParts halt_script_parts(const std::vector<std::string>& prefixes, uint32_t first_regsel, bool timed)
{
    const std::string d = std::to_string(dhcsr);
    auto var = [](const char* name, size_t i) { return std::string("_mcuprof_") + name + std::to_string(i); };
    HaltScriptParts p;
    const std::string now = "[clock microseconds]";
    if (timed)
        p.halts = "set _mcuprof_h [list " + now + "]; ";
    for (size_t i = 0; i < prefixes.size(); ++i) {
        p.read_dhcsr += "set " + var("d", i) + " [" + prefixes[i] + "read_memory " + d + " 32 1]; ";
        p.any_halted += " | $" + var("d", i);
        p.found += " $" + var("d", i);
        p.keys += "set " + var("k", i) + " [expr {" + std::to_string(dbgkey) + " | ($" + var("d", i) + " & " +
                  std::to_string(dhcsr_kept_controls) + ")}]; ";
        p.halts += prefixes[i] + "write_memory " + d + " 32 [list [expr {$" + var("k", i) + " | " +
                   std::to_string(c_halt | c_debugen) + "}] " + std::to_string(first_regsel) + "]; ";
        if (timed)
            p.halts += "lappend _mcuprof_h " + now + "; ";
        p.resumes += prefixes[i] + "write_memory " + d + " 32 $" + var("k", i) + "; ";
    }
    return p;
}

// Another core's registers `regsels` (halted by its halt request), appended as one line to the
// Tcl list _mcuprof_x; `on` is its command prefix. `window` bytes (0: none): then its stack window
// too, read from its own SP (regsels[2]) as the next line, "ADDRESS WORDS..." (no words where the
// target refused it), ending at `top` when the window would cross it (the top of RAM).
std::string other_core_reads(const std::vector<uint32_t>& regsels, const std::string& on, uint32_t window = 0,
                             std::optional<uint32_t> top = std::nullopt)
{
    std::string reads = on + "write_memory " + std::to_string(dcrsr) + " 32 " + std::to_string(regsels[0]) + "; " +
                        register_reads(regsels, on) + "lappend _mcuprof_x [join $_mcuprof_v]; ";
    if (window == 0)
        return reads;
    const std::string length =
        top ? "[expr {$_mcuprof_a < " + std::to_string(*top) + " && " + std::to_string(*top) + " - $_mcuprof_a < " +
                  std::to_string(window) + " ? " + std::to_string(*top) + " - $_mcuprof_a : " + std::to_string(window) + "}]"
            : std::to_string(window);
    return reads + "set _mcuprof_a [expr {[lindex $_mcuprof_v 2] & 0xFFFFFFFC}]; if {[catch {" + on +
           "read_memory $_mcuprof_a 32 [expr {(" + length + " + 3) / 4}]} _mcuprof_m]} {set _mcuprof_m {}}; "
           "lappend _mcuprof_x \"$_mcuprof_a $_mcuprof_m\"; ";
}

// One core's registers `registers` from its line of DCRDR words.
core::CoreRegisters parse_core_registers(const std::string& line, const std::vector<CoreRegister>& registers,
                                         const std::string& peer)
{
    const std::vector<uint32_t> values = OpenocdSampler::parse_words(line, peer, "DCRDR");
    if (values.size() != registers.size())
        throw transport::Error(transport::Error::Kind::protocol, peer, "DCRDR",
                               "read " + std::to_string(values.size()) + " core registers, not " +
                                   std::to_string(registers.size()) + ": " + line);
    core::CoreRegisters out;
    for (size_t i = 0; i < registers.size(); ++i) {
        if (registers[i].regsel == 16)
            out.xpsr = values[i];
        else
            out.r[registers[i].regsel] = values[i];   // REGSEL 0-15 are r0-r15
    }
    return out;
}

// A stack window's line of other_core_reads, "ADDRESS WORDS..." (the address alone: refused).
MemoryWindow parse_window(const std::string& line, const std::string& peer)
{
    const std::vector<uint32_t> words = OpenocdSampler::parse_words(line, peer, "read_memory");
    MemoryWindow window;
    if (!words.empty()) {
        window.address = words[0];
        const WordRange w{words[0], uint32_t(words.size() - 1), 0};
        window.bytes = bytes_of({words.begin() + 1, words.end()}, w, 4 * w.words);
    }
    return window;
}

// OpenOCD's clock readings (`clock microseconds`: microseconds since 1970, beyond 32 bits).
std::vector<int64_t> parse_clock_readings(const std::string& text, const std::string& peer)
{
    std::vector<int64_t> readings;
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        try {
            size_t used = 0;
            readings.push_back(std::stoll(word, &used, 10));
            if (used != word.size())
                throw std::invalid_argument(word);
        } catch (const std::exception&) {
            throw transport::Error(transport::Error::Kind::protocol, peer, "clock microseconds",
                                   "not a clock reading: '" + word + "'");
        }
    }
    return readings;
}

// A stop's bounds, in ns, each with one difference of OpenOCD's clock readings in it: a reading
// is the clock's whole microseconds, so such a difference is within 1 us of the true interval,
// which widens each bound by 1 us (and no stop comes before core 0's).
core::StopBounds stop_bounds_ns(int64_t at_least_ns, int64_t at_most_ns)
{
    return {uint64_t(std::max<int64_t>(0, at_least_ns - 1000)), uint64_t(std::max<int64_t>(0, at_most_ns + 1000))};
}

// The halting target behind OpenOCD's current target.
class TclHaltingTarget : public HaltingTarget {
public:
    explicit TclHaltingTarget(const OpenocdSamplerOptions& options) : options_(options)
    {
        tcl_ = connect();
        // The commands below act on the current target; with several (`targets`), that one.
        target_ = tcl_->eval("target current");
        const std::string names = tcl_->eval("target names");
        std::istringstream words(names);
        for (std::string name; words >> name;)
            ++target_count_;
        unsampled_ = other_openocd_cores(names, target_, [this](const std::string& name) {
            return tcl_->eval("if {[catch {{" + name + "} cget -type} _mcuprof_t]} {set _mcuprof_t {}}; set _mcuprof_t");
        });
        // Halt mode samples every other Cortex-M target OpenOCD has examined at the same halt:
        // their halt requests are written back to back in the halt's script (with --stacks, each
        // core's stack window read from its own SP in the same script). DWT_PCSR mode reads each
        // core's in every round of its batch (not OpenOCD's `profile`, which reads the current
        // target's only).
        if (options_.pacing.pacing != Pacing::pcsr || options_.pcsr_profile_gmon.empty())
            for (auto it = unsampled_.begin(); it != unsampled_.end();) {
                const std::string name = it->substr(0, it->find(' '));
                if (*it == name + " (cortex_m)" &&
                    tcl_->eval("if {[catch {{" + name + "} was_examined} _mcuprof_t]} {set _mcuprof_t 0}; set _mcuprof_t") == "1") {
                    others_.push_back(name);
                    it = unsampled_.erase(it);
                } else {
                    ++it;
                }
            }
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
            profile_reader_.emplace(options_.pcsr_profile_gmon, options_.pacing.resolved_seed());
    }

    RunHeader::Link link_header() const override
    {
        RunHeader::Link link;
        link.source = LinkKind::openocd;
        link.openocd = options_.tcl.text();
        link.target = target_;
        link.targets = target_count_;
        link.target_selection = "the current target (OpenOCD's `target current`)";
        const bool pcsr = options_.pacing.pacing == Pacing::pcsr;
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
        else if (options_.extras.stacks)
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
        if (options_.pacing.pacing == Pacing::pcsr)
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

    void start(SampleSink& sink) override
    {
        if (initial_state_ == "halted") {
            tcl_->eval("resume");
            sink.event("resume", "the target " + target_ + " was halted; resumed to sample it running");
        }
        if (options_.pacing.pacing != Pacing::pcsr)
            hold_off_halting_polls(sink);
    }
    // Halt mode halts behind OpenOCD's back: its poll must not see those halts (it would run
    // its debug entry, and then believe the target halted). Polling stays off until the end;
    // DFSR is read once, to leave its HALTED bit as it was found.
    void hold_off_halting_polls(SampleSink& sink)
    {
        hold_off_polling(sink, "OpenOCD's background polling off while mcuprof halts the core through its debug "
                               "registers; on again at the end");
        dfsr_found_ = OpenocdSampler::parse_word(tcl_->eval("read_memory " + std::to_string(dfsr) + " 32 1"),
                                                 tcl_->peer(), "DFSR");
        others_dfsr_found_.clear();
        for (const std::string& other : others_)
            others_dfsr_found_.push_back(OpenocdSampler::parse_word(
                tcl_->eval("{" + other + "} read_memory " + std::to_string(dfsr) + " 32 1"), tcl_->peer(), "DFSR"));
    }
    // After a halt this sampler made (stay_halted): DHCSR as it was found, C_HALT clear.
    // Several cores: each as it was found, core 0's first, in one script.
    void resume() override
    {
        if (halted_by_us_) {
            std::string script = "write_memory " + std::to_string(dhcsr) + " 32 " + std::to_string(dhcsr_resume_);
            for (size_t i = 0; i < others_resume_.size() && i < others_.size(); ++i)
                script += "; {" + others_[i] + "} write_memory " + std::to_string(dhcsr) + " 32 " +
                          std::to_string(others_resume_[i]);
            tcl_->eval(script);
        } else {
            tcl_->eval("resume");
        }
        halted_by_us_ = false;
        selected_ = 0;
    }
    // Later reads (the unwinder's memory, a stack pointer) go to that core's target: its own
    // access port, whose view of memory may differ (an STM32H745's Cortex-M7 TCMs).
    void select_core(size_t core) override { selected_ = core <= others_.size() ? core : 0; }
    std::string selected_prefix() const { return selected_ == 0 ? std::string() : "{" + others_[selected_ - 1] + "} "; }

    // One Tcl script: DHCSR read (a core halted already, by a breakpoint or another debugger,
    // is left alone: the recording ends there); DHCSR C_HALT written together with the first
    // register's DCRSR (one two-word write: the DCRSR word follows the halt request by a whole
    // bus transfer, when the core has long stopped; the next read checks S_HALT and S_REGRDY);
    // the registers; the memory ranges; DHCSR as found again (the resume), even when a read
    // failed, whose error is raised after. A memory read the target refuses gives an empty line.
    Halt halt_and_read(const HaltRequest& request) override
    {
        Halt halt;
        halt.ran_until = Clock::now();   // when it halted inside the round trip is not known
        halt.running = !request.stay_halted;
        const std::vector<uint32_t> regsels = regsels_of(registers_of(request));
        const std::string d = std::to_string(dhcsr);
        const std::string script = !others_.empty() ? multi_core_halt_script(request, regsels) :
            "set _mcuprof_d [read_memory " + d + " 32 1]; if {$_mcuprof_d & " + std::to_string(s_halt) +
            "} {set _mcuprof_r \"halted $_mcuprof_d\"} else {set _mcuprof_k [expr {" + std::to_string(dbgkey) +
            " | ($_mcuprof_d & " + std::to_string(dhcsr_kept_controls) + ")}]; write_memory " + d +
            " 32 [list [expr {$_mcuprof_k | " + std::to_string(c_halt | c_debugen) + "}] " +
            std::to_string(regsels[0]) + "]; set _mcuprof_c [catch {" + register_reads(regsels) +
            memory_reads(request) + "} _mcuprof_r]; " +
            (halt.running ? "write_memory " + d + " 32 $_mcuprof_k; " : "") +
            "if {$_mcuprof_c} {error $_mcuprof_r}; set _mcuprof_r \"$_mcuprof_d\\n$_mcuprof_r\"}; set _mcuprof_r";
        const std::string answer = tcl_->eval(script);
        halt.stopped = Clock::now();
        const size_t line_end = answer.find('\n');
        const std::string first = answer.substr(0, line_end);
        if (first.rfind("halted ", 0) == 0) {
            // Someone else's halt: not ours to end, and not a sample of the running program.
            halted_by_other_ = true;
            // One DHCSR per sampled core, in core order: name the first found halted.
            const std::vector<uint32_t> found = OpenocdSampler::parse_words(first.substr(7), tcl_->peer(), "DHCSR");
            size_t core = 0;
            while (core + 1 < found.size() && !(found[core] & s_halt))
                ++core;
            halt.ended = TargetEnd{false, (others_.empty() ? std::string("the core") : "the " + core_name(core)) +
                                              " was found halted by someone else (DHCSR " +
                                              hex32(found.empty() ? 0 : found[core]) +
                                              ": a breakpoint, or another debugger): left halted"};
            return halt;
        }
        // DHCSR as each core was found, core 0 first: its S_SLEEP says whether the halt caught
        // that core asleep, which only this read before the halt can tell (the halt wakes it).
        const size_t clock_at = first.find(';');   // "DHCSR words;clock readings" (timed)
        const std::vector<uint32_t> found =
            OpenocdSampler::parse_words(first.substr(0, clock_at), tcl_->peer(), "DHCSR");
        if (found.size() != others_.size() + 1)
            throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "DHCSR",
                                   "the halt script gave " + std::to_string(found.size()) + " words, not " +
                                       std::to_string(others_.size() + 1));
        dhcsr_resume_ = dbgkey | (found[0] & dhcsr_kept_controls);
        others_resume_.clear();
        for (size_t i = 1; i < found.size(); ++i)
            others_resume_.push_back(dbgkey | (found[i] & dhcsr_kept_controls));
        halted_by_us_ = !halt.running;
        halted_once_ = true;
        halt.state = parse_halt_state(line_end == std::string::npos ? std::string() : answer.substr(line_end + 1),
                                      request, others_.size(), request.other_cores_stack_bytes > 0);
        for (uint32_t word : found)
            halt.state.asleep.push_back((word & s_sleep) != 0);
        if (clock_at != std::string::npos) {
            // h[k] before core k's halt request, h[k + 1] after it: core k stopped in between,
            // core 0 between h[0] and h[1] (OpenOCD's clock, microseconds).
            const std::vector<int64_t> h = parse_clock_readings(first.substr(clock_at + 1), tcl_->peer());
            if (h.size() != others_.size() + 2)
                throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "clock microseconds",
                                       "the halt script gave " + std::to_string(h.size()) + " clock readings, not " +
                                           std::to_string(others_.size() + 2));
            for (size_t k = 1; k <= others_.size(); ++k)
                halt.state.stop_after.push_back(stop_bounds_ns(1000 * (h[k] - h[1]), 1000 * (h[k + 1] - h[0])));
        }
        return halt;
    }
    HaltState read_halt_state(const HaltRequest& request) override
    {
        const std::vector<uint32_t> regsels = regsels_of(registers_of(request));
        return parse_halt_state(tcl_->eval("write_memory " + std::to_string(dcrsr) + " 32 " +
                                           std::to_string(regsels[0]) + "; " + register_reads(regsels) +
                                           memory_reads(request)),
                                request);
    }
    // MSP or PSP of the core this sampler halted, by DCRSR like the others.
    std::optional<uint32_t> read_stack_pointer(StackPointer which, const core::CoreRegisters&) override
    {
        if (!halted_by_us_)
            return std::nullopt;
        const uint32_t regsel = which == StackPointer::main ? regsel_msp : regsel_psp;
        const std::string on = selected_prefix();
        return OpenocdSampler::parse_word(tcl_->eval(on + "write_memory " + std::to_string(dcrsr) + " 32 " +
                                                     std::to_string(regsel) + "; " + register_reads({regsel}, on) +
                                                     "join $_mcuprof_v"),
                                          tcl_->peer(), "DCRDR");
    }
    std::string read_memory(uint32_t address, uint32_t length) override
    {
        const WordRange w = words_of({address, length});
        try {
            const std::string text = tcl_->eval(selected_prefix() + "read_memory " + std::to_string(w.first) +
                                                " 32 " + std::to_string(w.words));
            return bytes_of(OpenocdSampler::parse_words(text, tcl_->peer(), "read_memory"), w, length);
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
            return OpenocdSampler::parse_words(tcl_->eval("read_memory " + std::to_string(dhcsr) + " 32 1"),
                                               tcl_->peer(), "DHCSR")
                       .size() == 1;
        } catch (const transport::Error&) {
            return false;
        }
    }

    bool enable_pcsr(SampleSink& sink) override
    {
        if (profile_reader_)   // first: the polls it saves start with the next command
            hold_off_polling(sink, "OpenOCD's background polling off while profile chunks run; on again at the end");
        // DEMCR.TRCENA enables the DWT (ARMv7-M ARM, C1.6.5), read-modify-write.
        const uint32_t demcr_value =
            OpenocdSampler::parse_word(tcl_->eval("read_memory " + std::to_string(demcr) + " 32 1"), tcl_->peer(), "DEMCR");
        if (!(demcr_value & trcena))
            tcl_->eval("write_memory " + std::to_string(demcr) + " 32 " + std::to_string(demcr_value | trcena));
        for (const std::string& name : others_) {   // each core's own DEMCR
            const std::string on = "{" + name + "} ";
            const uint32_t value = OpenocdSampler::parse_word(
                tcl_->eval(on + "read_memory " + std::to_string(demcr) + " 32 1"), tcl_->peer(), "DEMCR");
            if (!(value & trcena))
                tcl_->eval(on + "write_memory " + std::to_string(demcr) + " 32 " + std::to_string(value | trcena));
        }
        // One plain read (a round: one per core), outside the samples; with --pcsr-read profile it
        // places the window.
        const std::vector<uint32_t> probe = read_memory_pcsr(1);
        for (size_t core = 0; core <= others_.size(); ++core)
            if (probe.size() <= core || probe[core] == 0) {
                // A core without a DWT_PCSR (Cortex-M0/M0+, ARMv6-M) reads 0 there (RAZ).
                sink.event("fallback", "DWT_PCSR reads 0 on target " + (core ? others_[core - 1] : target_) +
                                           " (not implemented): sampling in halt mode instead");
                hold_off_halting_polls(sink);   // halt mode follows
                return false;
            }
        if (profile_reader_)
            profile_reader_->place(probe[0]);
        return true;
    }
    // OpenOCD polls the target (a DHCSR read, 3 USB commands through an ST-Link) before each
    // command it runs and 10 times a second while idle (OpenOCD 0.12's command.c, exec_command
    // -> target_call_timer_callbacks_now; target.c, handle_target), which comes on top of a
    // `profile` call's own three polls. `poll off` stops that until the end (leave_running
    // turns it back on); `profile` still polls, so OpenOCD's idea of the target stays fresh.
    void hold_off_polling(SampleSink& sink, const std::string& why)
    {
        if (polling_held_off_ || tcl_->command({"poll"}).find("background polling: on") == std::string::npos)
            return;
        tcl_->eval("poll off");
        polling_held_off_ = true;
        sink.event("poll", why);
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
            OpenocdSampler::parse_words(tcl_->eval(pcsr_batch_script(count, others_)), tcl_->peer(), "DWT_PCSR");
        if (reads.size() != size_t(count) * (others_.size() + 1))
            throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "DWT_PCSR",
                                   "read " + std::to_string(reads.size()) + " words, not " +
                                       std::to_string(size_t(count) * (others_.size() + 1)));
        return reads;
    }

    // Never leave the target halted: the halt script resumes in the same round trip, and this
    // checks once more (an error, a signal between halt and resume, someone else's halt).
    void leave_running(SampleSink& sink, bool link_lost) override
    {
        if (profile_reader_)
            sink.event("pcsr", "OpenOCD's profile read DWT_PCSR " + std::to_string(profile_reader_->reads()) +
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
                OpenocdSampler::parse_word(tcl_->eval("read_memory " + std::to_string(dhcsr) + " 32 1"),
                                           tcl_->peer(), "DHCSR") & s_halt) {
                tcl_->eval("write_memory " + std::to_string(dhcsr) + " 32 " + std::to_string(dhcsr_resume_));
                sink.event("resume", "the core " + target_ + " was left halted by a sample cut short; resumed");
            } else if (halted_by_us_) {
                resume();
            }
            // The other cores that script halted: their control bits as they are now (C_HALT,
            // ours, is not among them) resume them.
            for (const std::string& other : others_) {
                if (!link_lost || !halted_once_ || halted_by_other_)
                    break;
                const uint32_t now = OpenocdSampler::parse_word(
                    tcl_->eval("{" + other + "} read_memory " + std::to_string(dhcsr) + " 32 1"), tcl_->peer(), "DHCSR");
                if (now & s_halt) {
                    tcl_->eval("{" + other + "} write_memory " + std::to_string(dhcsr) + " 32 " +
                               std::to_string(dbgkey | (now & dhcsr_kept_controls)));
                    sink.event("resume", "the core " + other + " was left halted by a sample cut short; resumed");
                }
            }
            halted_by_us_ = false;
            // DFSR.HALTED as found: our halt requests set it (OpenOCD reads it to tell why
            // the core halted next time).
            if (halted_once_ && !halted_by_other_ && !(dfsr_found_ & dfsr_halted))
                tcl_->eval("write_memory " + std::to_string(dfsr) + " 32 " + std::to_string(dfsr_halted));
            for (size_t i = 0; halted_once_ && !halted_by_other_ && i < others_dfsr_found_.size(); ++i)
                if (!(others_dfsr_found_[i] & dfsr_halted))
                    tcl_->eval("{" + others_[i] + "} write_memory " + std::to_string(dfsr) + " 32 " +
                               std::to_string(dfsr_halted));
            restore_polling();   // before curstate: its dispatch then polls the target
            // Our own halts are undone above; a core halted now was halted by someone else (a
            // debugger beside us: DWT_PCSR reads go on while it holds the core, and read as
            // halted), and stays so.
            if (halted_by_other_ || tcl_->eval("[target current] curstate") == "halted")
                sink.event("left-halted", "the core " + target_ + " was halted by someone else; left halted");
        } catch (const transport::Error& e) {
            sink.event("resume-failed", std::string("could not make sure the target runs: ") + e.what());
        }
    }

private:
    std::unique_ptr<transport::TclClient> connect() const
    {
        transport::TclClient::Options tcl;
        tcl.timeout = options_.timeout;
        return std::make_unique<transport::TclClient>(options_.tcl, tcl);
    }

    // The halt of every sampled core in one script: each core's DHCSR read (any found halted
    // ends the recording: someone else's halt), then the halt requests written back to back
    // (core 0's first; the cores stop one probe command apart on silicon, at one instant on
    // the all-stop vprobe), each core's registers, core 0's memory ranges, and every core
    // resumed as found, even when a read failed.
    std::string multi_core_halt_script(const HaltRequest& request, const std::vector<uint32_t>& regsels) const
    {
        std::vector<std::string> prefixes = {""};
        for (const std::string& name : others_)
            prefixes.push_back("{" + name + "} ");
        const HaltScriptParts p = halt_script_parts(prefixes, regsels[0], clock_);
        std::string others;
        for (size_t core = 1; core < prefixes.size(); ++core)
            others += other_core_reads(regsels, prefixes[core], request.other_cores_stack_bytes, request.stack_top);
        return p.read_dhcsr + "if {(" + p.any_halted + ") & " + std::to_string(s_halt) + "} {set _mcuprof_r \"halted" +
               p.found + "\"} else {" + p.keys + p.halts + "set _mcuprof_c [catch {" + register_reads(regsels) +
               "set _mcuprof_v0 $_mcuprof_v; set _mcuprof_x {}; " + others + "set _mcuprof_v $_mcuprof_v0; " +
               memory_reads(request, "_mcuprof_x") + "} _mcuprof_r]; " +
               // Kept halted for the unwinder's further reads (stay_halted), unless a read failed.
               (request.stay_halted ? "if {$_mcuprof_c} {" + p.resumes + "}; " : p.resumes) +
               "if {$_mcuprof_c} {error $_mcuprof_r}; set _mcuprof_r \"" + p.found.substr(1) +
               (clock_ ? ";$_mcuprof_h" : "") + "\\n$_mcuprof_r\"}; set _mcuprof_r";
    }

    static const std::vector<CoreRegister>& registers_of(const HaltRequest& request)
    {
        return request.all_registers ? stack_registers : sample_registers;
    }
    // After register_reads: the registers on the first line, then one line per memory range
    // (its words; empty when the target refused it).
    // `other_lines`: a Tcl list variable whose items (other cores' register lines) end the answer.
    static std::string memory_reads(const HaltRequest& request, const std::string& other_lines = "")
    {
        std::string ranges;
        for (const MemoryRange& range : request.memory) {
            const WordRange w = words_of(range);
            ranges += " " + std::to_string(w.first) + " " + std::to_string(w.words);
        }
        return "set _mcuprof_o [list [join $_mcuprof_v]]; foreach {_mcuprof_a _mcuprof_n} {" + ranges +
               "} {if {[catch {read_memory $_mcuprof_a 32 $_mcuprof_n} _mcuprof_m]} {set _mcuprof_m {}}; "
               "lappend _mcuprof_o $_mcuprof_m}; " +
               (other_lines.empty() ? "" : "foreach _mcuprof_l $" + other_lines + " {lappend _mcuprof_o $_mcuprof_l}; ") +
               "join $_mcuprof_o \"\\n\"";
    }

    // The registers of one core from its line of DCRDR words.
    core::CoreRegisters parse_registers(const std::string& line, const HaltRequest& request) const
    {
        return parse_core_registers(line, registers_of(request), tcl_->peer());
    }

    // The registers' line, one line per memory range, then one register line per other core, each
    // followed by its stack window's line ("ADDRESS WORDS...") with `windows`.
    HaltState parse_halt_state(const std::string& answer, const HaltRequest& request, size_t other_cores = 0,
                               bool windows = false) const
    {
        std::vector<std::string> lines;
        std::istringstream in(answer);
        for (std::string line; std::getline(in, line);)
            lines.push_back(line);
        const size_t per_core = windows ? 2 : 1;
        lines.resize(1 + request.memory.size() + per_core * other_cores);   // a trailing empty line is dropped by getline
        HaltState state;
        state.registers = parse_registers(lines[0], request);
        for (size_t core = 1; core <= other_cores; ++core) {
            const size_t at = 1 + request.memory.size() + per_core * (core - 1);
            state.other_cores.push_back(parse_registers(lines[at], request));
            if (windows)
                state.other_stack_windows.push_back(parse_window(lines[at + 1], tcl_->peer()));
        }
        for (size_t i = 0; i < request.memory.size(); ++i) {
            const WordRange w = words_of(request.memory[i]);
            state.memory.push_back(lines[1 + i].empty() ? std::string()
                                                        : bytes_of(OpenocdSampler::parse_words(lines[1 + i],
                                                                                               tcl_->peer(),
                                                                                               "read_memory"),
                                                                   w, request.memory[i].second));
        }
        return state;
    }

    OpenocdSamplerOptions options_;
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

std::string other_cores_halt_script(const std::vector<std::string>& targets, bool timed, const HaltRequest& request)
{
    // The same debug-register halt as a halt of the Tcl path's other cores (multi_core_halt_script),
    // for cores 1, 2, ... alone: core 0 is the GDB port's own, halted by OpenOCD already. Inside
    // `capture`, which holds off OpenOCD's background polling (a poll of a core halted here would
    // run OpenOCD's debug entry and leave it believing the core halted).
    const std::vector<uint32_t> regsels = regsels_of(request.all_registers ? stack_registers : sample_registers);
    std::vector<std::string> prefixes;
    for (const std::string& name : targets)
        prefixes.push_back("{" + name + "} ");
    const HaltScriptParts p = halt_script_parts(prefixes, regsels[0], timed);
    std::string reads;
    for (const std::string& on : prefixes)
        reads += other_core_reads(regsels, on, request.other_cores_stack_bytes, request.stack_top);
    // Timed: the script's own start and end too, which place the halt requests inside the
    // monitor command's round trip as mcuprof's clock sees it (its first line, "t START END H...").
    // The start's variable is its own: register_reads' loop variable is _mcuprof_s, and the
    // start once shared that name, so every first bound came out as the clock's whole reading.
    return "capture {" + std::string(timed ? "set _mcuprof_t0 [clock microseconds]; " : "") + p.read_dhcsr + "if {(" +
           p.any_halted + ") & " + std::to_string(s_halt) + "} {set _mcuprof_r \"halted" + p.found + "\"} else {" +
           p.keys + p.halts + "set _mcuprof_x {}; set _mcuprof_c [catch {" + reads + "} _mcuprof_r]; " +
           // Kept halted for the unwinder's reads (stay_halted; other_cores_resume_script resumes
           // them by the DHCSR values kept in _mcuprof_k0, ...), unless a read failed.
           (request.stay_halted ? "if {$_mcuprof_c} {" + p.resumes + "}; " : p.resumes) +
           "if {$_mcuprof_c} {error $_mcuprof_r}; " +
           (timed ? "set _mcuprof_x [linsert $_mcuprof_x 0 \"t $_mcuprof_t0 [clock microseconds] $_mcuprof_h\"]; " : "") +
           "set _mcuprof_r [join $_mcuprof_x \"\\n\"]}}; set _mcuprof_r";
}

std::string other_cores_resume_script(const std::vector<std::string>& targets)
{
    std::vector<std::string> prefixes;
    for (const std::string& name : targets)
        prefixes.push_back("{" + name + "} ");
    return "capture {" + halt_script_parts(prefixes, 0, false).resumes + "}";
}

std::string other_core_memory_script(const std::string& target, uint32_t address, uint32_t length)
{
    const WordRange w = words_of({address, length});
    return "{" + target + "} read_memory " + std::to_string(w.first) + " 32 " + std::to_string(w.words);
}

std::string other_core_memory(const std::string& answer, uint32_t address, uint32_t length, const std::string& peer)
{
    return bytes_of(OpenocdSampler::parse_words(answer, peer, "read_memory"), words_of({address, length}), length);
}

std::string other_core_stack_pointer_script(const std::string& target, StackPointer which)
{
    const uint32_t regsel = which == StackPointer::main ? regsel_msp : regsel_psp;
    const std::string on = "{" + target + "} ";
    return "capture {" + on + "write_memory " + std::to_string(dcrsr) + " 32 " + std::to_string(regsel) + "; " +
           register_reads({regsel}, on) + "}; join $_mcuprof_v";
}

OtherCoresRead parse_other_cores(const std::string& answer, size_t count, const std::string& peer,
                                 const HaltRequest& request)
{
    OtherCoresRead read;
    std::vector<std::string> lines;
    std::istringstream in(answer);
    for (std::string line; std::getline(in, line);)
        if (line.find_first_not_of(" \t\r") != std::string::npos)
            lines.push_back(line);
    if (!lines.empty() && lines[0].rfind("halted ", 0) == 0) {
        const std::vector<uint32_t> found = OpenocdSampler::parse_words(lines[0].substr(7), peer, "DHCSR");
        size_t core = 0;
        while (core + 1 < found.size() && !(found[core] & s_halt))
            ++core;
        read.found_halted = core;
        read.found_dhcsr = found.empty() ? 0 : found[core];
        return read;
    }
    if (!lines.empty() && lines[0].rfind("t ", 0) == 0) {   // the timed script's clock readings
        read.clock_us = parse_clock_readings(lines[0].substr(2), peer);
        if (read.clock_us.size() != count + 3)
            throw transport::Error(transport::Error::Kind::protocol, peer, "monitor",
                                   "the other cores' halt gave " + std::to_string(read.clock_us.size()) +
                                       " clock readings, not " + std::to_string(count + 3) + ": '" + lines[0] + "'");
        lines.erase(lines.begin());
    }
    // Each core's registers, then (with windows) its stack window.
    const size_t per_core = request.other_cores_stack_bytes > 0 ? 2 : 1;
    if (lines.size() != per_core * count)
        throw transport::Error(transport::Error::Kind::protocol, peer, "monitor",
                               "the other cores' halt gave " + std::to_string(lines.size()) + " lines, not " +
                                   std::to_string(per_core * count) + ": '" + answer.substr(0, 200) + "'");
    for (size_t i = 0; i < lines.size(); i += per_core) {
        read.registers.push_back(
            parse_core_registers(lines[i], request.all_registers ? stack_registers : sample_registers, peer));
        if (per_core == 2)
            read.windows.push_back(parse_window(lines[i + 1], peer));
    }
    return read;
}

std::vector<core::StopBounds> other_cores_stop_after(const OtherCoresRead& read, Clock::time_point interrupted,
                                                     Clock::time_point reported, Clock::time_point asked,
                                                     Clock::time_point answered)
{
    std::vector<core::StopBounds> bounds;
    if (read.clock_us.size() < 3)
        return bounds;
    auto ns = [](Clock::duration d) { return int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()); };
    const int64_t start = read.clock_us[0], end = read.clock_us[1];
    const std::vector<int64_t> h(read.clock_us.begin() + 2, read.clock_us.end());
    for (size_t j = 0; j + 1 < h.size(); ++j) {
        // Core j + 1 stopped between h[j] and h[j + 1]: by mcuprof's clock no earlier than `asked`
        // plus what the script ran before h[j], no later than `answered` less what it ran after
        // h[j + 1]; core 0 between `interrupted` and `reported`.
        const int64_t earliest = ns(asked - reported) + 1000 * (h[j] - start);
        const int64_t latest = ns(answered - interrupted) - 1000 * (end - h[j + 1]);
        bounds.push_back(stop_bounds_ns(earliest, latest));
    }
    return bounds;
}

std::vector<uint32_t> OpenocdSampler::parse_words(const std::string& text, const std::string& peer,
                                                  const std::string& what)
{
    std::vector<uint32_t> words;
    std::istringstream in(text);
    std::string word;
    while (in >> word) {
        try {
            size_t used = 0;
            const unsigned long long v = std::stoull(word, &used, 0);
            if (used != word.size() || v > 0xFFFFFFFFull)
                throw std::invalid_argument(word);
            words.push_back(uint32_t(v));
        } catch (const std::exception&) {
            throw transport::Error(transport::Error::Kind::protocol, peer, what, "not a 32-bit word: '" + word + "'");
        }
    }
    return words;
}

uint32_t OpenocdSampler::parse_word(const std::string& text, const std::string& peer, const std::string& what)
{
    const std::vector<uint32_t> words = parse_words(text, peer, what);
    if (words.size() != 1)
        throw transport::Error(transport::Error::Kind::protocol, peer, what,
                               "read_memory gave " + std::to_string(words.size()) + " words, not 1");
    return words[0];
}

OpenocdSampler::OpenocdSampler(const OpenocdSamplerOptions& options)
    : LiveSampler(std::make_unique<TclHaltingTarget>(options), options.pacing, options.extras, options.timeout)
{
}

} // namespace mcuprof::sources
