#pragma once
// OpenOCD's side of a halt through the core's debug registers (ARMv7-M ARM, C1.6), as Tcl
// scripts built with tcl_script.h, and the parsers of their answers: the OpenOCD halting target
// (openocd_halting_target.cc) sends them over the Tcl port, the GDB adapter (rsp_sampler.cc)
// sends the other cores' ones as monitor commands.
//
// Why not OpenOCD's `halt`, `get_reg` and `resume`: OpenOCD's own halt runs its whole debug
// entry (every core register through DCRSR/DCRDR, DFSR, the FPU state) and its resume writes
// the registers back, about 340 USB commands a sample through an ST-Link (docs/live.md,
// "Halting at probe speed"). Each `read_memory`/`write_memory` here is one memory command to the
// probe; a whole sample is one script, each run in its own scope (tcl::local).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mcuprof/target/halting_target.h"

namespace mcuprof::sources {

// A core register by its DCRSR REGSEL (ARMv7-M ARM, C1.6.3).
struct CoreRegister {
    const char* name;
    uint32_t regsel;
};
// The registers a halt reads: pc, lr, sp and xPSR; with request.all_registers also r0-r12.
const std::vector<CoreRegister>& registers_of(const HaltRequest& request);

// The halt of the current target and of the other targets `others` (OpenOCD's examined cortex_m
// targets, cores 1, 2, ...) in one script: each core's DHCSR read (a core found halted ends the
// recording: someone else's halt; the answer is "halted DHCSR..."), then the halt requests written
// back to back (DHCSR C_HALT with the first register's DCRSR REGSEL, one two-word write: the DCRSR
// word follows the halt request by a whole bus transfer, when the core has long stopped), each
// core's registers, core 0's memory ranges, and every core resumed as found (DHCSR with C_HALT
// clear), even when a read failed, whose error is raised after; with request.stay_halted the cores
// stay halted, except that several cores are resumed when a read failed. The answer: the DHCSR
// words as found (with `timed`, then ";" and OpenOCD's clock readings before the first halt
// request and after each), then the lines parse_halt_state reads. A memory read the target
// refuses gives an empty line.
std::string halt_script(const std::vector<std::string>& others, const HaltRequest& request, bool timed);
// The registers and memory of a core halted already (the current target).
std::string halt_state_script(const HaltRequest& request);
// MSP or PSP by DCRSR, of the current target (empty name) or of the target `target`; the answer
// is the one word.
std::string stack_pointer_script(const std::string& target, StackPointer which);

// halt_script's answer, its first line: the DHCSR words as found, core 0's first, and the clock
// readings of a timed script; `found_halted`: the first core found with S_HALT set.
struct HaltAnswer {
    std::vector<uint32_t> found;
    std::optional<size_t> found_halted;
    std::vector<int64_t> clock_us;
    std::string rest;   // the lines after the first
};
HaltAnswer parse_halt_answer(const std::string& answer, const std::string& peer);
// The registers' line, one line per memory range, then one register line per other core (`other_cores`
// of them), each followed by its stack window's line ("ADDRESS WORDS...") with `windows`.
HaltState parse_halt_state(const std::string& lines, const HaltRequest& request, const std::string& peer,
                           size_t other_cores = 0, bool windows = false);
// Each other core's stop after core 0's from a timed halt script's clock readings h (h[k] before core
// k's halt request, h[k + 1] after it).
std::vector<core::StopBounds> stops_after_core0(const std::vector<int64_t>& h);

// The DWT_PCSR batch (ARMv7-M ARM, C1.8.4): `count` rounds, each a read of the current target's
// DWT_PCSR, then of each of `others`' (one read per core); the answer is the words, in order.
// The batch runs inside `capture`, which holds off OpenOCD's background polling of the target
// while its script runs: without it OpenOCD slips a DHCSR poll between the reads, and a batch
// costs twice the probe commands (docs/live.md, "Through an ST-Link").
std::string pcsr_batch_script(unsigned count, const std::vector<std::string>& others);

// `command`'s result, or `fallback` (a Tcl word) where it fails: one script.
std::string result_or(const std::string& command, const std::string& fallback);

// A memory range as the 32-bit reads OpenOCD makes: the words that cover it.
struct WordRange {
    uint32_t first;   // word-aligned address
    uint32_t words;
    uint32_t skip;    // bytes before the range in the first word
};
WordRange words_of(const MemoryRange& range);
// The range's `length` bytes from the words read for it; empty when they are too few.
std::string bytes_of(const std::vector<uint32_t>& words, const WordRange& w, uint32_t length);

// OpenOCD's GDB port halts its own target only (each target has a port of its own; OpenOCD
// 0.12's cortex_m has no SMP halt, and a `target smp` group's hwthread port answers a running
// core's 'g' with the port target's registers). The other examined cortex_m targets `targets`
// are halted right after it in one monitor script through their debug registers: every DHCSR
// read (one found halted is someone else's halt), the halt requests back to back, each core's
// pc, lr, sp and xPSR (DCRSR/DCRDR), each core resumed as found, even after a failed read.
// `timed` (OpenOCD's Tcl has `clock microseconds`): the script also reads OpenOCD's clock at its
// start, around each halt request and at its end.
// `request`: all registers and each core's stack window from its own SP (--stacks), the cores
// kept halted (stay_halted) until other_cores_resume_script. Inside `capture`, which holds off
// OpenOCD's background polling (a poll of a core halted here would run OpenOCD's debug entry and
// leave it believing the core halted).
std::string other_cores_halt_script(const std::vector<std::string>& targets, bool timed,
                                    const HaltRequest& request = {});
// Resumes the cores a stay_halted script left halted: each target's DHCSR written with `resume`
// (OtherCoresRead::resume, the values as found with C_HALT clear).
std::string other_cores_resume_script(const std::vector<std::string>& targets, const std::vector<uint32_t>& resume);
// Reads of a core the script halted, through its own target: memory (the words that cover
// [address, address + length), and the bytes from the command's answer, empty where refused) and
// its MSP or PSP (stack_pointer_script's, inside `capture`).
std::string other_core_memory_script(const std::string& target, uint32_t address, uint32_t length);
std::string other_core_memory(const std::string& answer, uint32_t address, uint32_t length, const std::string& peer);
std::string other_core_stack_pointer_script(const std::string& target, StackPointer which);
struct OtherCoresRead {
    std::vector<core::CoreRegisters> registers;   // core 1, 2, ... in `targets` order
    std::optional<size_t> found_halted;           // index into targets of a core found halted
    uint32_t found_dhcsr = 0;
    // A timed script's readings of OpenOCD's clock, microseconds: its start, its end, then
    // before the first halt request and after each (core i + 1 stopped between items 2 + i and
    // 3 + i); empty when not timed.
    std::vector<int64_t> clock_us;
    std::vector<MemoryWindow> windows;            // with the request's stack windows, core 1's first
    // With a stay_halted request: what resumes each core (its DHCSR as found, C_HALT clear).
    std::vector<uint32_t> resume;
};
// The script's answer (monitor output) for `count` cores and the `request` it was made for;
// throws transport::Error.
OtherCoresRead parse_other_cores(const std::string& answer, size_t count, const std::string& peer,
                                 const HaltRequest& request = {});
// From a timed script's readings, each other core's stop after core 0's, bracketed: core 0 (the
// GDB port's target, halted by OpenOCD on the interrupt) stopped between the interrupt sent
// (`interrupted`) and its stop reply (`reported`); the script ran between its monitor command
// sent (`asked`) and answered (`answered`), all by mcuprof's clock; inside it, OpenOCD's clock
// places each halt request. Empty when the script was not timed.
std::vector<core::StopBounds> other_cores_stop_after(const OtherCoresRead& read, Clock::time_point interrupted,
                                                     Clock::time_point reported, Clock::time_point asked,
                                                     Clock::time_point answered);

} // namespace mcuprof::sources
