#include "mcuprof/target/openocd_scripts.h"

#include <algorithm>
#include <sstream>

#include "mcuprof/target/tcl_script.h"
#include "mcuprof/link/error.h"
#include "mcuprof/cortex_m.h"

namespace mcuprof::sources {
namespace {

// The registers: mcuprof/cortex_m.h.
using cortex_m::c_debugen;
using cortex_m::c_halt;
using cortex_m::dbgkey;
using cortex_m::dcrsr;
using cortex_m::dhcsr;
using cortex_m::dhcsr_kept_controls;
using cortex_m::dwt_pcsr;
using cortex_m::regsel_msp;
using cortex_m::regsel_psp;
using cortex_m::s_halt;
using cortex_m::s_regrdy;
using tcl::braced;
using tcl::bracketed;
using tcl::expr;
using tcl::number;
using tcl::Script;

// What every halt sample reads.
const std::vector<CoreRegister> sample_registers = {{"pc", 15}, {"lr", 14}, {"sp", 13}, {"xPSR", 16}};
// For unwinding every general register: the call-frame rules may compute the CFA from any
// of them or take a caller's value from one (with r7 alone the unwound callers were wrong
// often enough to shift the call tree's inclusive shares); PSP is read when a chain needs it.
const std::vector<CoreRegister> stack_registers = {
    {"pc", 15}, {"lr", 14}, {"sp", 13}, {"xPSR", 16}, {"r0", 0}, {"r1", 1}, {"r2", 2},   {"r3", 3},   {"r4", 4},
    {"r5", 5},  {"r6", 6},  {"r7", 7},  {"r8", 8},     {"r9", 9}, {"r10", 10}, {"r11", 11}, {"r12", 12}};

std::vector<uint32_t> regsels_of(const std::vector<CoreRegister>& registers)
{
    std::vector<uint32_t> regsels;
    for (const CoreRegister& r : registers)
        regsels.push_back(r.regsel);
    return regsels;
}

// Reads the registers `regsels` of the halted core into the list `regs`, the first one's DCRSR
// write already made: for each, DHCSR (S_REGRDY: the transfer is done; a few retries, it is set
// long before a probe's next command arrives) read with DCRDR in one three-word read (DHCSR,
// DCRSR, DCRDR are consecutive), then the next DCRSR write. `on`: the target's prefix
// (tcl::on_target). Its other variables: regsel, tries, w.
Script register_reads(const std::vector<uint32_t>& regsels, const std::string& on = "")
{
    std::string next;
    for (size_t i = 1; i < regsels.size(); ++i)
        next += number(regsels[i]) + " ";
    const Script until_ready = {
        "set w " + bracketed(tcl::read_words(on, dhcsr, 3)),
        "if {[lindex $w 0] & " + number(s_regrdy) + "} break",
        "if {[incr tries] == 4} {error \"DHCSR [lindex $w 0]: S_REGRDY never set, the core did not halt or the "
        "register transfer did not end\"}"};
    const Script each = {"set tries 0", "while 1 " + braced(until_ready), "lappend regs [lindex $w 2]",
                         "if {$regsel >= 0} " + braced(tcl::write_words(on, number(dcrsr), "$regsel"))};
    return {"set regs {}", "foreach regsel " + braced(next + "-1") + " " + braced(each)};
}

// After register_reads: the answer's lines, `regs` first, then one line per memory range (its
// words; empty when the target refused it), then (`other_lines`) the items of the list `lines`.
// Its variables: out, address, count, words, line.
Script memory_reads(const HaltRequest& request, bool other_lines = false)
{
    std::string ranges;
    for (const MemoryRange& range : request.memory) {
        const WordRange w = words_of(range);
        ranges += " " + number(w.first) + " " + number(w.words);
    }
    const Script each = {tcl::caught(tcl::read_words("", "$address", "$count"), "words", "{}"), "lappend out $words"};
    Script reads = {"set out [list [join $regs]]", "foreach {address count} " + braced(ranges) + " " + braced(each)};
    if (other_lines)
        reads << "foreach line $lines {lappend out $line}";
    return reads << "join $out \"\\n\"";
}

// Another core's registers `regsels` (halted by its halt request), appended as one line to the
// list `lines`; `on` is its prefix. `window` bytes (0: none): then its stack window too, read from
// its own SP (regsels[2]) as the next line, "ADDRESS WORDS..." (no words where the target refused
// it), ending at `top` when the window would cross it (the top of RAM). Its variables: those of
// register_reads, sp, window.
Script other_core_reads(const std::vector<uint32_t>& regsels, const std::string& on, uint32_t window = 0,
                        std::optional<uint32_t> top = std::nullopt)
{
    Script reads = {tcl::write_word(on, dcrsr, regsels[0])};
    reads << register_reads(regsels, on) << "lappend lines [join $regs]";
    if (window == 0)
        return reads;
    const std::string t = top ? number(*top) : "", bytes = number(window);
    const std::string length =
        top ? expr("$sp < " + t + " && " + t + " - $sp < " + bytes + " ? " + t + " - $sp : " + bytes) : bytes;
    return reads << "set sp " + expr("[lindex $regs 2] & 0xFFFFFFFC")
                 << tcl::caught(tcl::read_words(on, "$sp", expr("(" + length + " + 3) / 4")), "window", "{}")
                 << "lappend lines \"$sp $window\"";
}

// The parts of a halt of several cores through their debug registers, core i by its prefix
// prefixes[i], its DHCSR as found in dhcsr<i>: every DHCSR read, whether any was found halted (a
// Tcl expression, S_HALT to be tested) and their values, the resume values key<i> (DHCSR as found,
// C_HALT clear), the halt requests (DHCSR C_HALT with the first register's DCRSR REGSEL, one
// two-word write) and the resumes. `timed`: the halt requests are timed by OpenOCD's clock (Jim
// Tcl's `clock microseconds`), into the list `stops`: before the first, then after each (core i's
// stop lies between items i and i + 1), which brackets each core's stop after the first's.
struct HaltParts {
    Script read_dhcsr, keys, halts, resumes;
    std::string any_halted = "0", found;
};

HaltParts halt_parts(const std::vector<std::string>& prefixes, uint32_t first_regsel, bool timed)
{
    HaltParts p;
    const std::string now = bracketed("clock microseconds");
    if (timed)
        p.halts << "set stops [list " + now + "]";
    for (size_t i = 0; i < prefixes.size(); ++i) {
        const std::string found = "dhcsr" + number(i), key = "key" + number(i);
        p.read_dhcsr << "set " + found + " " + bracketed(tcl::read_words(prefixes[i], dhcsr, 1));
        p.any_halted += " | $" + found;
        p.found += " $" + found;
        p.keys << "set " + key + " " + expr(number(dbgkey) + " | ($" + found + " & " + number(dhcsr_kept_controls) + ")");
        p.halts << tcl::write_words(prefixes[i], number(dhcsr),
                                    "[list " + expr("$" + key + " | " + number(c_halt | c_debugen)) + " " +
                                        number(first_regsel) + "]");
        if (timed)
            p.halts << "lappend stops " + now;
        p.resumes << tcl::write_words(prefixes[i], number(dhcsr), "$" + key);
    }
    return p;
}

// The frame of both halt scripts: a core found halted is said ("halted DHCSR..."), else
// `halted` runs.
std::string unless_found_halted(const HaltParts& p, const Script& halted)
{
    return "if {(" + p.any_halted + ") & " + number(s_halt) + "} " + braced("set result " + tcl::quoted("halted" + p.found)) +
           " else " + braced(halted);
}

std::vector<std::string> prefixes_of(const std::vector<std::string>& targets)
{
    std::vector<std::string> prefixes;
    for (const std::string& name : targets)
        prefixes.push_back(tcl::on_target(name));
    return prefixes;
}

// One core's registers `registers` from its line of DCRDR words.
core::CoreRegisters parse_core_registers(const std::string& line, const std::vector<CoreRegister>& registers,
                                         const std::string& peer)
{
    const std::vector<uint32_t> values = tcl::parse_words(line, peer, "DCRDR");
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
    const std::vector<uint32_t> words = tcl::parse_words(line, peer, "read_memory");
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

// The first core found with S_HALT among `found` (the last when none has it).
size_t first_halted(const std::vector<uint32_t>& found)
{
    size_t core = 0;
    while (core + 1 < found.size() && !(found[core] & s_halt))
        ++core;
    return core;
}

} // namespace

const std::vector<CoreRegister>& registers_of(const HaltRequest& request)
{
    return request.all_registers ? stack_registers : sample_registers;
}

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

std::string halt_script(const std::vector<std::string>& others, const HaltRequest& request, bool timed)
{
    const std::vector<uint32_t> regsels = regsels_of(registers_of(request));
    std::vector<std::string> prefixes = prefixes_of(others);
    prefixes.insert(prefixes.begin(), "");   // core 0: the current target
    const HaltParts p = halt_parts(prefixes, regsels[0], timed);
    const bool several = !others.empty();
    Script reads = register_reads(regsels);
    if (several) {
        reads << "set regs0 $regs" << "set lines {}";
        for (size_t core = 1; core < prefixes.size(); ++core)
            reads << other_core_reads(regsels, prefixes[core], request.other_cores_stack_bytes, request.stack_top);
        reads << "set regs $regs0";
    }
    reads << memory_reads(request, several);
    Script halted = p.keys;
    halted << p.halts << "set failed [catch " + braced(reads) + " result]";
    // Kept halted for the unwinder's further reads (stay_halted), unless a read failed: then
    // the error ends the sample and no later script knows the halt was ours, so every core is
    // resumed here.
    halted << (request.stay_halted ? "if {$failed} " + braced(p.resumes) : p.resumes.text());
    halted << "if {$failed} {error $result}"
           << "set result " + tcl::quoted(p.found.substr(1) + (timed ? ";$stops" : "") + "\\n$result");
    Script script = p.read_dhcsr;
    return tcl::local(script << unless_found_halted(p, halted) << "set result");
}

std::string halt_state_script(const HaltRequest& request)
{
    const std::vector<uint32_t> regsels = regsels_of(registers_of(request));
    Script script = {tcl::write_word("", dcrsr, regsels[0])};
    return tcl::local(script << register_reads(regsels) << memory_reads(request));
}

// MSP or PSP into `regs`, by DCRSR.
Script stack_pointer_read(const std::string& target, StackPointer which)
{
    const uint32_t regsel = which == StackPointer::main ? regsel_msp : regsel_psp;
    const std::string on = tcl::on_target(target);
    Script script = {tcl::write_word(on, dcrsr, regsel)};
    return script << register_reads({regsel}, on);
}

std::string stack_pointer_script(const std::string& target, StackPointer which)
{
    return tcl::local(stack_pointer_read(target, which) << "join $regs");
}

HaltAnswer parse_halt_answer(const std::string& answer, const std::string& peer)
{
    HaltAnswer out;
    const size_t line_end = answer.find('\n');
    const std::string first = answer.substr(0, line_end);
    if (first.rfind("halted ", 0) == 0) {
        // One DHCSR per sampled core, in core order: name the first found halted.
        out.found = tcl::parse_words(first.substr(7), peer, "DHCSR");
        out.found_halted = first_halted(out.found);
        return out;
    }
    const size_t clock_at = first.find(';');   // "DHCSR words;clock readings" (timed)
    out.found = tcl::parse_words(first.substr(0, clock_at), peer, "DHCSR");
    if (clock_at != std::string::npos)
        out.clock_us = parse_clock_readings(first.substr(clock_at + 1), peer);
    if (line_end != std::string::npos)
        out.rest = answer.substr(line_end + 1);
    return out;
}

HaltState parse_halt_state(const std::string& answer, const HaltRequest& request, const std::string& peer,
                           size_t other_cores, bool windows)
{
    std::vector<std::string> lines;
    std::istringstream in(answer);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    const size_t per_core = windows ? 2 : 1;
    lines.resize(1 + request.memory.size() + per_core * other_cores);   // a trailing empty line is dropped by getline
    HaltState state;
    state.registers = parse_core_registers(lines[0], registers_of(request), peer);
    for (size_t core = 1; core <= other_cores; ++core) {
        const size_t at = 1 + request.memory.size() + per_core * (core - 1);
        state.other_cores.push_back(parse_core_registers(lines[at], registers_of(request), peer));
        if (windows)
            state.other_stack_windows.push_back(parse_window(lines[at + 1], peer));
    }
    for (size_t i = 0; i < request.memory.size(); ++i) {
        const std::string& line = lines[1 + i];
        state.memory.push_back(line.empty() ? std::string()
                                            : bytes_of(tcl::parse_words(line, peer, "read_memory"),
                                                       words_of(request.memory[i]), request.memory[i].second));
    }
    return state;
}

std::vector<core::StopBounds> stops_after_core0(const std::vector<int64_t>& h)
{
    std::vector<core::StopBounds> bounds;
    for (size_t k = 1; k + 1 < h.size(); ++k)
        bounds.push_back(stop_bounds_ns(1000 * (h[k] - h[1]), 1000 * (h[k + 1] - h[0])));
    return bounds;
}

std::string pcsr_batch_script(unsigned count, const std::vector<std::string>& others)
{
    Script round = {"lappend out " + bracketed(tcl::read_words("", dwt_pcsr, 1))};
    for (const std::string& name : others)
        round << "lappend out " + bracketed(tcl::read_words(tcl::on_target(name), dwt_pcsr, 1));
    const Script batch = {"set out {}", "for {set i 0} {$i < " + number(count) + "} {incr i} " + braced(round)};
    // The PCs are the variable's value, not what `capture` returns (the log it caught).
    return tcl::local({tcl::captured(batch), "set out"});
}

std::string result_or(const std::string& command, const std::string& fallback)
{
    return tcl::local({tcl::caught(command, "result", fallback), "set result"});
}

std::string other_cores_halt_script(const std::vector<std::string>& targets, bool timed, const HaltRequest& request)
{
    // The same debug-register halt as halt_script's of the other cores, for cores 1, 2, ...
    // alone: core 0 is the GDB port's own, halted by OpenOCD already.
    const std::vector<uint32_t> regsels = regsels_of(registers_of(request));
    const std::vector<std::string> prefixes = prefixes_of(targets);
    const HaltParts p = halt_parts(prefixes, regsels[0], timed);
    Script reads;
    for (const std::string& on : prefixes)
        reads << other_core_reads(regsels, on, request.other_cores_stack_bytes, request.stack_top);
    Script halted = p.keys;
    halted << p.halts << "set lines {}" << "set failed [catch " + braced(reads) + " result]";
    // Kept halted for the unwinder's reads (stay_halted; other_cores_resume_script resumes them),
    // unless a read failed.
    halted << (request.stay_halted ? "if {$failed} " + braced(p.resumes) : p.resumes.text()) << "if {$failed} {error $result}";
    // Timed: the script's own start and end too, which place the halt requests inside the
    // monitor command's round trip as mcuprof's clock sees it (its first line, "t START END H...").
    if (timed)
        halted << "set lines [linsert $lines 0 \"t $start [clock microseconds] $stops\"]";
    if (request.stay_halted)   // the DHCSR values as found, for the resume ("found D...")
        halted << "set lines [linsert $lines 0 " + tcl::quoted("found" + p.found) + "]";
    halted << "set result [join $lines \"\\n\"]";
    Script body;
    if (timed)
        body << "set start [clock microseconds]";
    body << p.read_dhcsr << unless_found_halted(p, halted);
    return tcl::local({tcl::captured(body), "set result"});
}

std::string other_cores_resume_script(const std::vector<std::string>& targets, const std::vector<uint32_t>& resume)
{
    Script writes;
    for (size_t i = 0; i < targets.size() && i < resume.size(); ++i)
        writes << tcl::write_word(tcl::on_target(targets[i]), dhcsr, resume[i]);
    return tcl::captured(writes);
}

std::string other_core_memory_script(const std::string& target, uint32_t address, uint32_t length)
{
    const WordRange w = words_of({address, length});
    return tcl::read_words(tcl::on_target(target), w.first, w.words);
}

std::string other_core_stack_pointer_script(const std::string& target, StackPointer which)
{
    return tcl::local({tcl::captured(stack_pointer_read(target, which)), "join $regs"});
}

std::string other_core_memory(const std::string& answer, uint32_t address, uint32_t length, const std::string& peer)
{
    return bytes_of(tcl::parse_words(answer, peer, "read_memory"), words_of({address, length}), length);
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
        const std::vector<uint32_t> found = tcl::parse_words(lines[0].substr(7), peer, "DHCSR");
        read.found_halted = first_halted(found);
        read.found_dhcsr = found.empty() ? 0 : found[*read.found_halted];
        return read;
    }
    if (request.stay_halted) {   // the DHCSR values as found: what resumes each core
        if (lines.empty() || lines[0].rfind("found ", 0) != 0)
            throw transport::Error(transport::Error::Kind::protocol, peer, "monitor",
                                   "the other cores' halt gave no DHCSR values: '" + answer.substr(0, 200) + "'");
        for (uint32_t found : tcl::parse_words(lines[0].substr(6), peer, "DHCSR"))
            read.resume.push_back(dbgkey | (found & dhcsr_kept_controls));
        lines.erase(lines.begin());
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
        read.registers.push_back(parse_core_registers(lines[i], registers_of(request), peer));
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

} // namespace mcuprof::sources
