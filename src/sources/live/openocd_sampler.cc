#include "mcuprof/sources/openocd_sampler.h"

#include <map>
#include <optional>
#include <sstream>

#include "mcuprof/sources/pcsr_profile_reader.h"
#include "mcuprof/transport/error.h"
#include "mcuprof/transport/tcl_client.h"

namespace mcuprof::sources {
namespace {

constexpr uint32_t dhcsr = 0xE000EDF0;
constexpr uint32_t demcr = 0xE000EDFC;
constexpr uint32_t trcena = 1u << 24;
constexpr uint32_t dwt_pcsr = 0xE000101C;

// The batch runs inside `capture`, which holds off OpenOCD's background polling of the
// target while its script runs (OpenOCD 0.12's command.c, jim_capture): without it OpenOCD
// slips a DHCSR poll between the reads, and a batch costs twice the probe commands
// (docs/live.md, "Through an ST-Link"). The PCs are the variable's value, not what
// `capture` returns (the log it caught).
std::string pcsr_batch_script(unsigned count)
{
    return "capture {set _mcuprof_o {}; for {set _mcuprof_i 0} {$_mcuprof_i < " + std::to_string(count) +
           "} {incr _mcuprof_i} {lappend _mcuprof_o [read_memory " + std::to_string(dwt_pcsr) +
           " 32 1]}}; set _mcuprof_o";
}

// The registers get_reg reads at a halt: pc, lr, sp and xPSR; for unwinding all of r0-r15
// and the banked stack pointers (OpenOCD's armv7m register names).
const std::vector<std::string> few_registers = {"pc", "lr", "sp", "xPSR"};
const std::vector<std::string> all_registers = {"r0", "r1", "r2",  "r3",  "r4",  "r5", "r6", "r7",   "r8", "r9",
                                                "r10", "r11", "r12", "sp", "lr", "pc", "xPSR", "msp", "psp"};

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

// The halting target behind OpenOCD's current target.
class TclTarget : public HaltingTarget {
public:
    explicit TclTarget(const OpenocdSamplerOptions& options) : options_(options)
    {
        tcl_ = connect();
        // The commands below act on the current target; with several (`targets`), that one.
        target_ = tcl_->eval("target current");
        std::istringstream names(tcl_->eval("target names"));
        for (std::string name; names >> name;)
            ++target_count_;
        initial_state_ = tcl_->eval("[target current] curstate");
        if (initial_state_ != "running" && initial_state_ != "halted")
            throw transport::Error(transport::Error::Kind::protocol, tcl_->peer(), "curstate",
                                   "target " + target_ + " is " + initial_state_ + ", neither running nor halted");
        if (!options_.pcsr_profile_gmon.empty())
            profile_reader_.emplace(options_.pcsr_profile_gmon, options_.pacing.resolved_seed());
    }

    nlohmann::json describe() const override
    {
        nlohmann::json d = {
            {"source", "openocd"},
            {"openocd", options_.tcl.text()},
            {"target", target_},
            {"targets", target_count_},
            {"target_selection", "the current target (OpenOCD's `target current`)"},
        };
        if (options_.pacing.pacing == Pacing::pcsr)
            d["round_trip"] = "one Tcl eval per batch of DWT_PCSR reads, the core running";
        else if (options_.extras.stacks)
            d["round_trip"] = "one Tcl eval per sample: halt, get_reg (all core registers), read_memory (the task "
                              "pointer, a stack window); further stack reads while halted, then resume";
        else
            d["round_trip"] = "one Tcl eval per sample: halt, get_reg {pc lr sp xPSR}, resume";
        return d;
    }
    std::string server() const override { return "OpenOCD"; }
    std::string peer() const override { return tcl_ ? tcl_->peer() : "openocd tcl " + options_.tcl.text(); }

    void start(SampleSink& sink) override
    {
        if (initial_state_ == "halted") {
            tcl_->eval("resume");
            sink.event("resume", "the target " + target_ + " was halted; resumed to sample it running");
        }
    }
    void resume() override { tcl_->eval("resume"); }

    // One round trip: halt, read the registers and the memory, resume. The resume runs even
    // when a read fails, so an error never leaves the target halted; the read's error is
    // raised after. A memory read the target refuses gives an empty line.
    Halt halt_and_read(const HaltRequest& request) override
    {
        Halt halt;
        halt.ran_until = Clock::now();   // when it halted inside the round trip is not known
        halt.running = !request.stay_halted;
        const std::string answer = tcl_->eval("halt; set _mcuprof_c [catch {" + read_script(request) +
                                              "} _mcuprof_r]; " + (halt.running ? "resume; " : "") +
                                              "if {$_mcuprof_c} {error $_mcuprof_r}; set _mcuprof_r");
        halt.stopped = Clock::now();
        halt.state = parse_halt_state(answer, request);
        return halt;
    }
    HaltState read_halt_state(const HaltRequest& request) override
    {
        return parse_halt_state(tcl_->eval(read_script(request)), request);
    }
    std::string read_memory(uint32_t address, uint32_t length) override
    {
        const WordRange w = words_of({address, length});
        try {
            const std::string text = tcl_->eval("read_memory " + std::to_string(w.first) + " 32 " +
                                                std::to_string(w.words));
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
        if (profile_reader_)
            hold_off_polling(sink);   // first: the polls it saves start with the next command
        // DEMCR.TRCENA enables the DWT (ARMv7-M ARM, C1.6.5), read-modify-write.
        const uint32_t demcr_value =
            OpenocdSampler::parse_word(tcl_->eval("read_memory " + std::to_string(demcr) + " 32 1"), tcl_->peer(), "DEMCR");
        if (!(demcr_value & trcena))
            tcl_->eval("write_memory " + std::to_string(demcr) + " 32 " + std::to_string(demcr_value | trcena));
        // One plain read, outside the samples; with --pcsr-read profile it places the window.
        const std::vector<uint32_t> probe = read_memory_pcsr(1);
        if (probe.empty() || probe[0] == 0) {
            // A core without a DWT_PCSR (Cortex-M0/M0+, ARMv6-M) reads 0 there (RAZ).
            sink.event("fallback", "DWT_PCSR reads 0 on target " + target_ +
                                       " (not implemented): sampling in halt mode instead");
            restore_polling();
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
    void hold_off_polling(SampleSink& sink)
    {
        if (tcl_->command({"poll"}).find("background polling: on") == std::string::npos)
            return;
        tcl_->eval("poll off");
        polling_held_off_ = true;
        sink.event("poll", "OpenOCD's background polling off while profile chunks run; on again at the end");
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
    std::vector<uint32_t> read_memory_pcsr(unsigned count)
    {
        return OpenocdSampler::parse_words(tcl_->eval(pcsr_batch_script(count)), tcl_->peer(), "DWT_PCSR");
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
            restore_polling();   // before curstate: its dispatch then polls the target
            if (tcl_->eval("[target current] curstate") == "halted") {
                tcl_->eval("resume");
                sink.event("resume", "the target " + target_ + " was halted at the end; resumed");
            }
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

    // The registers on the first line, then one line per memory range (its words).
    static std::string read_script(const HaltRequest& request)
    {
        std::string names;
        for (const std::string& name : request.all_registers ? all_registers : few_registers)
            names += (names.empty() ? "" : " ") + name;
        std::string ranges;
        for (const MemoryRange& range : request.memory) {
            const WordRange w = words_of(range);
            ranges += " " + std::to_string(w.first) + " " + std::to_string(w.words);
        }
        return "set _mcuprof_o [list [get_reg {" + names + "}]]; foreach {_mcuprof_a _mcuprof_n} {" + ranges +
               "} {if {[catch {read_memory $_mcuprof_a 32 $_mcuprof_n} _mcuprof_m]} {set _mcuprof_m {}}; "
               "lappend _mcuprof_o $_mcuprof_m}; join $_mcuprof_o \"\\n\"";
    }

    HaltState parse_halt_state(const std::string& answer, const HaltRequest& request) const
    {
        std::vector<std::string> lines;
        std::istringstream in(answer);
        for (std::string line; std::getline(in, line);)
            lines.push_back(line);
        lines.resize(1 + request.memory.size());   // a trailing empty line is dropped by getline
        const std::vector<std::string>& names = request.all_registers ? all_registers : few_registers;
        const std::vector<uint32_t> values = OpenocdSampler::parse_registers(lines[0], names, tcl_->peer());
        HaltState state;
        for (size_t i = 0; i < names.size(); ++i) {
            const std::string& name = names[i];
            if (name == "xPSR") state.registers.xpsr = values[i];
            else if (name == "msp") state.registers.msp = values[i];
            else if (name == "psp") state.registers.psp = values[i];
            else if (name == "sp") state.registers.r[13] = values[i];
            else if (name == "lr") state.registers.r[14] = values[i];
            else if (name == "pc") state.registers.r[15] = values[i];
            else state.registers.r[std::stoul(name.substr(1))] = values[i];
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
    size_t target_count_ = 0;
    std::string initial_state_;
    std::optional<PcsrProfileReader> profile_reader_;   // --pcsr-read profile
    bool polling_held_off_ = false;                      // `poll off` sent, `poll on` owed
};

} // namespace

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

// get_reg's answer: "pc 0x0800033e lr 0x080003bd sp 0x2001ffd8 xPSR 0x01000000".
std::vector<uint32_t> OpenocdSampler::parse_registers(const std::string& text, const std::vector<std::string>& names,
                                                      const std::string& peer)
{
    std::istringstream in(text);
    std::string name, value;
    std::map<std::string, uint32_t> found;
    while (in >> name >> value) {
        try {
            size_t used = 0;
            const unsigned long long v = std::stoull(value, &used, 0);
            if (used != value.size() || v > 0xFFFFFFFFull)
                throw std::invalid_argument(value);
            found[name] = uint32_t(v);
        } catch (const std::exception&) {
            throw transport::Error(transport::Error::Kind::protocol, peer, "get_reg", "unexpected answer: " + text);
        }
    }
    std::vector<uint32_t> values;
    for (const std::string& wanted : names) {
        auto it = found.find(wanted);
        if (it == found.end())
            throw transport::Error(transport::Error::Kind::protocol, peer, "get_reg", "unexpected answer: " + text);
        values.push_back(it->second);
    }
    return values;
}

OpenocdSampler::OpenocdSampler(const OpenocdSamplerOptions& options)
    : LiveSampler(std::make_unique<TclTarget>(options), options.pacing, options.extras, options.timeout)
{
}

} // namespace mcuprof::sources
