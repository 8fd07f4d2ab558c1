#include <algorithm>
#include <cmath>

#include "mcuprof/sampler/live.h"

namespace mcuprof::sources {

IntervalGenerator::IntervalGenerator(double mean, Shape shape, double jitter, uint64_t seed)
    : mean_(mean), shape_(shape), jitter_(std::clamp(jitter, 0.0, 1.0)), random_(seed)
{
}

double IntervalGenerator::next()
{
    switch (shape_) {
    case Shape::exponential:
        return std::exponential_distribution<double>(1.0 / std::max(mean_, 1e-300))(random_);
    case Shape::uniform:
        return std::uniform_real_distribution<double>(mean_ * (1 - jitter_), mean_ * (1 + jitter_))(random_);
    case Shape::fixed:
        break;
    }
    return mean_;
}

using core::percentiles;

core::SamplerFigures SamplerStats::figures() const
{
    core::SamplerFigures f;
    f.samples = samples;
    f.wall_seconds = wall_seconds;
    f.samples_per_second = rate();
    f.run_duty = duty();
    f.end = end_reason;
    f.target_exited = target_exited;
    f.link_lost = link_lost;
    // Only what the method did: a DWT_PCSR recording that never halted has no halt latency.
    if (!halt_latency_us.empty() || !pcsr)
        f.halt_latency_us = percentiles(halt_latency_us);
    if (pcsr)
        f.pcsr = core::PcsrFigures{pcsr->batch, pcsr->reads, pcsr->halted_reads, pcsr->round_trip_us.size(),
                                   percentiles(pcsr->round_trip_us), pcsr->unused_reads};
    f.stacks = stacks;
    f.halt_budget = halt_budget;
    if (probe_commands)
        f.probe_commands = core::ProbeCommandFigures{*probe_commands, samples ? double(*probe_commands) / samples : 0.0};
    return f;
}

} // namespace mcuprof::sources
