#include <algorithm>
#include <cmath>

#include "mcuprof/sources/live.h"

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

namespace {

nlohmann::json percentiles(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    auto at = [&](double q) {
        return values.empty() ? 0.0 : values[std::min(values.size() - 1, size_t(q * (values.size() - 1) + 0.5))];
    };
    return {{"p50", at(0.5)}, {"p90", at(0.9)}, {"p99", at(0.99)}, {"max", values.empty() ? 0.0 : values.back()}};
}

} // namespace

nlohmann::json SamplerStats::to_json() const
{
    nlohmann::json out = {
        {"samples", samples},
        {"wall_seconds", wall_seconds},
        {"samples_per_second", rate()},
        {"run_duty", duty()},
        {"end", end_reason},
        {"target_exited", target_exited},
        {"link_lost", link_lost},
    };
    // Only what the method did: a DWT_PCSR recording that never halted has no halt latency.
    if (!halt_latency_us.empty() || !pcsr)
        out["halt_latency_us"] = percentiles(halt_latency_us);
    if (pcsr)
        out["pcsr"] = {{"batch", pcsr->batch},
                       {"reads", pcsr->reads},
                       {"halted_reads", pcsr->halted_reads},
                       {"halted_share", pcsr->reads ? double(pcsr->halted_reads) / double(pcsr->reads) : 0.0},
                       {"batches", pcsr->round_trip_us.size()},
                       {"round_trip_us", percentiles(pcsr->round_trip_us)}};
    for (const auto& [key, value] : details.items())
        out[key] = value;
    return out;
}

} // namespace mcuprof::sources
