#pragma once
// What every source of samples hands to the core. A source fills the parts it has:
// an ordered PC sequence (live halting, the on-chip ring, SWO), exact per-address counts
// (the truth plugin), or histogram buckets (the on-chip histogram, gmon.out).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/image/unwind/call_stack.h"
#include "mcuprof/profile/sampler_figures.h"

namespace mcuprof::core {

struct AddressCount {
    uint32_t address = 0;
    uint64_t count = 0;
    uint32_t core = 0;       // the core that executed them (a census of a multi-core machine)
};

// One histogram bucket: `count` samples fell somewhere in [start, start + size).
struct Bucket {
    uint32_t start = 0;
    uint32_t size = 0;
    uint64_t count = 0;
};

// A run of consecutive samples in `pcs` taken by one sampling session (one dump chunk,
// one recording). Sequence analysis (lockstep) never looks across a boundary.
struct Sequence {
    size_t begin = 0;
    size_t end = 0;
};

// What a profile cannot be sure of, by kind, so that a diff can give its hint. A source may
// carry some with its samples (a recording's "emulator-bias"); attribution adds its own.
struct Warning {
    std::string kind;       // "lockstep", "unattributed", "outside-histogram", "emulator-bias", ...
    std::string message;
};

// How a multi-core link stopped the cores at each halt (issue 29): every core at one instant
// (QEMU's gdbstub stops every vCPU for one stop reply), or one after another (OpenOCD writes each
// core's halt request in turn), each halt's spread from the first core's stop to the last's then
// bracketed by the link's clocks (docs/live.md, "The skew between the cores' stops").
// One core's stop after core 0's at one halt, bracketed: at least, at most, nanoseconds.
struct StopBounds {
    uint64_t at_least_ns = 0;
    uint64_t at_most_ns = 0;
};
struct CoreStops {
    std::string how;              // the link's words for it (the recording's header)
    bool simultaneous = false;    // one instant: no skew
    // Per halt whose spread was measured, microseconds: its lower and its upper bound.
    std::vector<double> at_least_us, at_most_us;
};

struct SampleSet {
    std::string origin;                       // e.g. "on-chip dump, raw ring"
    std::vector<uint32_t> pcs;                // sampled PCs, in the order taken
    std::vector<uint32_t> tags;               // empty, or one tag (task pointer) per pc
    // Multi-core: empty (one core, or core 0 alone), or the core of each pc; the names of
    // the cores sampled (core index -> name), which a report lists even where a core has no
    // samples. A census has its cores in counts[].core.
    std::vector<uint32_t> cores;
    std::map<uint32_t, std::string> core_names;
    std::optional<CoreStops> core_stops;      // a multi-core recording: how its halts stopped the cores
    std::vector<Sequence> sequences;          // partition of pcs; empty means one sequence
    std::vector<CallStack> stacks;            // empty, or the callers of each pc (one per pc)
    // Where each burst of back-to-back reads begins (indices into pcs, ascending, the first 0):
    // a DWT_PCSR batch or one `profile` chunk. Reads within a burst are correlated (the core
    // barely ran between them), so standard errors come from the spread between bursts.
    // Empty: every sample was taken on its own (a random wait before each).
    std::vector<size_t> bursts;
    // The samples are wall-clock halts, each taken on its own, in the order taken. How far the
    // core runs between two halts is up to the link and the host, not the sampler (a slow probe,
    // a host loaded by other work, a core halted most of the time), and when it runs little,
    // neighbours fall in the same code: binomial errors would then be too small. Their errors
    // come from the spread between batches of consecutive halts instead (batch means).
    bool wall_clock_halts = false;
    // The samples (indices into pcs, ascending) whose halt found the core asleep by the debug
    // registers (DHCSR.S_SLEEP read before the halt): "(sleep)" whatever their PC, which on
    // sleep-on-exit (SCR.SLEEPONEXIT) is no WFI's. Empty for every other source.
    std::vector<size_t> found_asleep;
    std::vector<uint64_t> times_ns;           // empty, or when each pc was taken (ns since the start)
    // Empty, or the exception each pc was taken in (IPSR, xPSR bits 8:0: 0 Thread mode, 15
    // SysTick, 16 + n IRQ n; ARMv7-M ARM B1.4.2), for --by exception.
    std::vector<uint32_t> exceptions;
    std::vector<AddressCount> counts;         // exact counts per instruction address
    std::vector<Bucket> buckets;              // histogram buckets
    uint64_t outside_buckets = 0;             // histogram samples that fell outside every bucket
    // Samples that caught no address, by the name of their row: "(sleep)" for the DWT's
    // sleep packets (SWO). They count in the total, not as unattributed.
    std::map<std::string, uint64_t> without_address;
    std::map<uint32_t, std::string> tag_names; // tag value -> task name
    // A watched global variable (--by var:NAME): its name, its value at each pc (the bits
    // read, zero-extended), and each value's name (an enumerator, else the number).
    std::string variable;
    std::vector<uint32_t> values;
    std::map<uint32_t, std::string> value_names;
    bool exact = false;                       // a census (every instruction), not a sample
    // The samples are instants of time (a timer interrupt, wall-clock halts, DWT_PCSR, SWO),
    // not executed instructions (a census, instruction-count pacing): only then can a sample
    // catch the core asleep, and a PC just past a WFI or WFE counts as "(sleep)".
    bool measures_time = false;
    // The addresses are DWT_PCSR reads (a recording in PCSR mode, OpenOCD's gmon.out), the
    // address of an instruction recently executed: a core asleep may read as its WFI/WFE.
    bool reads_pcsr = false;
    // The instructions the whole run executed, when the source knows them: a census's sum, or
    // the recorded run of a --qemu recording that ran to the firmware's exit. diff compares
    // them (--fail-total-above); a run cut at an instruction budget has no total.
    std::optional<uint64_t> run_instructions;
    std::vector<std::string> notes;           // what the reader wants the user to know
    // Warnings stored with the samples, by kind (a recording's "emulator-bias"): the profile
    // carries them under that kind, so a diff can give its hint.
    std::vector<Warning> warnings;
    std::optional<SamplerFigures> sampler;    // a live sampler's own figures (rate, duty, latency)
};

} // namespace mcuprof::core
