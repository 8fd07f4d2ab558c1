#include "mcuprof/profile/lockstep.h"

#include <algorithm>
#include <unordered_map>

namespace mcuprof::core {
namespace {

constexpr double required_match = 0.98;   // lockstep on silicon is nearly, not always, exact
constexpr double max_chance = 0.80;       // above this, one address dominates anyway

} // namespace

std::optional<LockstepFinding> detect_lockstep(std::span<const uint32_t> pcs, size_t window)
{
    if (pcs.size() < 64)
        return std::nullopt;
    const size_t length = std::min(pcs.size(), window);
    std::span<const uint32_t> tail = pcs.subspan(pcs.size() - length);

    std::unordered_map<uint32_t, size_t> frequency;
    for (uint32_t pc : tail)
        ++frequency[pc];
    double chance = 0;
    for (const auto& [pc, n] : frequency)
        chance += (double(n) / length) * (double(n) / length);

    LockstepFinding finding;
    finding.distinct = frequency.size();
    finding.samples = length;
    finding.chance_fraction = chance;
    if (frequency.size() == 1) {
        // Every sample on one instruction: an idle loop, or lockstep with a period that
        // is an exact multiple of the program's (100 % for one function).
        // The samples cannot tell which; the caller says so.
        finding.period = 1;
        finding.match_fraction = 1.0;
        return finding;
    }
    if (chance > max_chance)
        return std::nullopt;   // one address holds most samples: repeats prove nothing

    for (size_t period = 1; period * 4 <= length; ++period) {
        const size_t pairs = length - period;
        const size_t allowed = static_cast<size_t>((1.0 - required_match) * pairs);
        size_t mismatches = 0;
        for (size_t i = 0; i < pairs && mismatches <= allowed; ++i)
            mismatches += tail[i] != tail[i + period];
        if (mismatches <= allowed) {
            finding.period = period;
            finding.match_fraction = 1.0 - double(mismatches) / pairs;
            return finding;
        }
    }
    return std::nullopt;
}

} // namespace mcuprof::core
