#pragma once
// A live sampler's own figures: how fast it sampled, how long the target ran, what each
// method measured (halt latency, DWT_PCSR batches, stack reads). The samplers fill them,
// the recording keeps them as its summary (docs/formats.md, record type 3), the reports show
// them. Their JSON form is written and read in one place (sampler_figures.cc): the
// recording's summary and the JSON report's "sampler" object are the same object.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace mcuprof::core {

// Of a set of durations, in microseconds.
struct Percentiles {
    double p50 = 0;
    double p90 = 0;
    double p99 = 0;
    double max = 0;
};
// The median, 90th and 99th percentiles (nearest rank) and the largest of `values`; all 0 for none.
Percentiles percentiles(std::vector<double> values);

// DWT_PCSR sampling reads the PC of a running core: no halts, so its figures are the batches'.
struct PcsrFigures {
    uint64_t batch = 0;           // DWT_PCSR reads per round trip
    uint64_t reads = 0;
    uint64_t halted_reads = 0;    // 0xFFFFFFFF: the core was halted, dropped
    uint64_t batches = 0;         // round trips
    Percentiles round_trip_us;    // request sent -> answer received
    // OpenOCD's `profile` chunks (--pcsr-read profile): the reads it made that no sample
    // came from (outside its window, placing the window, past the sample count).
    std::optional<uint64_t> unused_reads;

    double halted_share() const { return reads ? double(halted_reads) / double(reads) : 0.0; }
};

// Unwinding at every halt.
struct StackFigures {
    double mean_depth = 0;
    double extra_round_trips_per_sample = 0;   // memory reads beyond the halt's own round trip
    std::map<std::string, uint64_t> ends;      // how many chains ended for each reason (describe(UnwindStop))
};

// Halting under a budget (--max-halted): the loop lengthened its waits to keep the target's
// halted share (1 - run_duty) under `max_halted`.
struct HaltBudgetFigures {
    double max_halted = 0;                  // the budget, a fraction of the wall time
    double longest_halt_seconds = 0;        // the longest halt, by the sampler's clock
    double longest_mean_wait_seconds = 0;   // the largest mean wait the loop drew from
};

// The DWT's periodic PC sampling over SWO (mcuprof swo): its period and the clocks behind it.
struct SwoFigures {
    uint32_t period_cycles = 0;   // a PC sample every this many core cycles (CYCTAP, POSTPRESET)
    double cpu_hz = 0;            // the core clock, TRACECLKIN
    double swo_hz = 0;            // the SWO pin's bit rate
};

// A link that counts the commands it sends the probe (an ST-Link's USB commands, each one bus
// round trip): the sampler's cost in the probe's own unit.
struct ProbeCommandFigures {
    uint64_t commands = 0;        // from the first sample's wait to the end
    double per_sample = 0;
};

struct SamplerFigures {
    uint64_t samples = 0;
    double wall_seconds = 0;
    double samples_per_second = 0;
    double run_duty = 1;          // the share of the wall time the target ran, by the sampler's clock
    std::string end;              // why sampling ended
    bool target_exited = false;
    bool link_lost = false;
    std::optional<Percentiles> halt_latency_us;   // halting samplers: interrupt sent -> stop reply
    std::optional<PcsrFigures> pcsr;              // when DWT_PCSR was read
    std::optional<StackFigures> stacks;           // when stacks were unwound
    std::optional<HaltBudgetFigures> halt_budget; // when halting under --max-halted
    std::optional<SwoFigures> swo;                // the DWT's own samples over SWO
    std::optional<ProbeCommandFigures> probe_commands;   // when the link counts its commands
    // How the samples were taken, as the recording's header or the capture says it: shown
    // as they are, never interpreted.
    std::string method;
    std::string pacing;           // the header's pacing object, as JSON text

    double halted_share() const { return 1.0 - run_duty; }
};

// The one JSON form (docs/formats.md, "Recording", type 3). from_json throws core::Error
// naming `where` when a figure the reports need is missing or of the wrong type.
nlohmann::json to_json(const SamplerFigures& figures);
nlohmann::json to_json(const Percentiles& percentiles);   // {"p50", "p90", "p99", "max"}
SamplerFigures sampler_figures_from_json(const nlohmann::json& summary, const std::string& where);

// The warning of a halting sampler that kept the target halted more than half the time
// (naming --max-halted), or nothing.
std::optional<std::string> intrusion_warning(const SamplerFigures& figures);

} // namespace mcuprof::core
