#pragma once
// Live sampling: every method (halting over GDB, halting or DWT_PCSR over OpenOCD, ...)
// is one SampleSource; the record command drives any of them the same way.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "mcuprof/profile/sampler_figures.h"
#include "mcuprof/inputs/recording.h"
#include "mcuprof/target/halting_target.h"

namespace mcuprof::sources {

// Random waits between samples, so that no period of the program can fall in step with
// the sampling (docs/method.md, lockstep). Exponential by default: memoryless, the
// sampling instants form a Poisson process whatever the program does.
class IntervalGenerator {
public:
    using Shape = IntervalShape;
    // uniform: mean * (1 +- jitter), jitter in [0, 1].
    IntervalGenerator(double mean, Shape shape, double jitter, uint64_t seed);
    double next();
    double mean() const { return mean_; }
    void set_mean(double mean) { mean_ = mean; }

private:
    double mean_;
    Shape shape_;
    double jitter_;
    std::mt19937_64 random_;
};

struct SamplingPlan {
    std::optional<uint64_t> samples;                 // stop after this many
    std::optional<std::chrono::nanoseconds> duration; // stop after this long
    std::optional<uint64_t> instructions;            // icount pacing: no stop at or past this
                                                     // count (the end of a recorded run)
};

struct SamplerStats;

// Where a live source's samples, tasks and events go (the recording, a live view).
class SampleSink : public TargetEvents {
public:
    virtual void sample(const LiveSample& s) = 0;
    // A task met for the first time: its control block's address and its name.
    virtual void task(uint32_t /*control_block*/, const std::string& /*name*/) {}
    // The figures so far (samples, wall and running seconds), after each sample or batch:
    // for a live view's rate and duty. Called on the sampling thread.
    virtual void progress(const SamplerStats& so_far) {}
};

struct SamplerStats {
    uint64_t samples = 0;
    double wall_seconds = 0;
    double running_seconds = 0;           // the target ran, by the sampler's clock
    std::vector<double> halt_latency_us;  // interrupt sent -> stop reply received (halting samplers)
    std::optional<PcsrStats> pcsr;        // DWT_PCSR sampling, when it was used
    std::string end_reason;
    bool target_exited = false;
    bool link_lost = false;
    bool failed = false;                  // ended by an error the server reported, the link up
    std::optional<core::StackFigures> stacks;   // when stacks were unwound
    std::optional<core::HaltBudgetFigures> halt_budget;   // when halting under --max-halted
    std::optional<uint64_t> probe_commands;   // the link's commands to the probe, where it counts them

    double rate() const { return wall_seconds > 0 ? samples / wall_seconds : 0; }
    double duty() const { return wall_seconds > 0 ? running_seconds / wall_seconds : 0; }
    // For the recording's summary and the reports.
    core::SamplerFigures figures() const;
};

class SampleSource {
public:
    virtual ~SampleSource() = default;
    // The recording's header, as far as the source knows it: the link, method, pacing and
    // warnings (recording_header adds the images and the start).
    virtual RunHeader run_header() const = 0;
    // Samples until the plan is met, `stop` is set, the target exits or the link drops.
    // Leaves a target that was running, running.
    virtual SamplerStats run(SampleSink& sink, const SamplingPlan& plan, const std::atomic<bool>& stop) = 0;
};

} // namespace mcuprof::sources
