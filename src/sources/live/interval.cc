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

nlohmann::json SamplerStats::to_json() const
{
    std::vector<double> sorted = halt_latency_us;
    std::sort(sorted.begin(), sorted.end());
    auto percentile = [&](double q) {
        if (sorted.empty())
            return 0.0;
        return sorted[std::min(sorted.size() - 1, size_t(q * (sorted.size() - 1) + 0.5))];
    };
    nlohmann::json out = {
        {"samples", samples},
        {"wall_seconds", wall_seconds},
        {"samples_per_second", rate()},
        {"run_duty", duty()},
        {"halt_latency_us", {{"p50", percentile(0.5)}, {"p90", percentile(0.9)}, {"p99", percentile(0.99)},
                             {"max", sorted.empty() ? 0.0 : sorted.back()}}},
        {"end", end_reason},
        {"target_exited", target_exited},
        {"link_lost", link_lost},
    };
    for (const auto& [key, value] : details.items())
        out[key] = value;
    return out;
}

} // namespace mcuprof::sources
