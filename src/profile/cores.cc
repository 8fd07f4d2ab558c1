#include "mcuprof/profile/cores.h"

#include <algorithm>
#include <functional>
#include <set>

namespace mcuprof::core {

std::vector<uint32_t> cores_of(const SampleSet& samples)
{
    std::set<uint32_t> cores;
    for (const auto& [core, name] : samples.core_names)
        cores.insert(core);
    cores.insert(samples.cores.begin(), samples.cores.end());
    for (const AddressCount& c : samples.counts)
        cores.insert(c.core);
    if (cores.empty())
        cores.insert(0);
    return {cores.begin(), cores.end()};
}

bool is_multicore(const SampleSet& samples)
{
    return cores_of(samples).size() > 1;
}

std::string core_name(const SampleSet& samples, uint32_t core)
{
    auto named = samples.core_names.find(core);
    return named != samples.core_names.end() ? named->second : "core " + std::to_string(core);
}

SampleSet samples_of_core(const SampleSet& samples, uint32_t core)
{
    SampleSet out;
    out.origin = samples.origin;
    out.exact = samples.exact;
    out.tag_names = samples.tag_names;
    out.notes = samples.notes;
    out.warnings = samples.warnings;
    out.sampler = samples.sampler;
    out.measures_time = samples.measures_time;   // a PC past a WFI is "(sleep)" on each core too
    out.reads_pcsr = samples.reads_pcsr;         // and a PCSR read at the WFI itself
    out.wall_clock_halts = samples.wall_clock_halts;   // each core's halts in order: batches of its own
    out.variable = samples.variable;
    out.value_names = samples.value_names;
    out.run_instructions = samples.run_instructions;   // the whole run's, which no core's samples split
    auto core_at = [&](size_t i) { return samples.cores.empty() ? 0u : samples.cores[i]; };
    // The core's bursts of correlated reads (SampleSet::bursts, whose spread gives the standard
    // errors): each begins at the core's first sample in a burst of the whole set; a burst
    // without the core's samples is none of its. Bursts out of order are left out, as
    // attribution leaves them out of the whole set (binomial errors).
    const bool ascending = !samples.bursts.empty() && samples.bursts.front() == 0 &&
                           std::adjacent_find(samples.bursts.begin(), samples.bursts.end(), std::greater_equal<>()) ==
                               samples.bursts.end();
    auto asleep = samples.found_asleep.begin();      // the next of the set's samples found asleep
    size_t burst = 0;                               // the whole set's burst that holds sample i
    size_t last_burst = samples.bursts.size();      // the burst of the core's previous sample
    for (size_t i = 0; i < samples.pcs.size(); ++i) {
        while (asleep != samples.found_asleep.end() && *asleep < i)
            ++asleep;
        if (core_at(i) != core)
            continue;
        if (asleep != samples.found_asleep.end() && *asleep == i)
            out.found_asleep.push_back(out.pcs.size());
        if (ascending) {
            while (burst + 1 < samples.bursts.size() && samples.bursts[burst + 1] <= i)
                ++burst;
            if (burst != last_burst)
                out.bursts.push_back(out.pcs.size());
            last_burst = burst;
        }
        out.pcs.push_back(samples.pcs[i]);
        if (!samples.tags.empty())
            out.tags.push_back(samples.tags[i]);
        if (!samples.stacks.empty())
            out.stacks.push_back(samples.stacks[i]);
        if (!samples.times_ns.empty())
            out.times_ns.push_back(samples.times_ns[i]);
        if (!samples.exceptions.empty())
            out.exceptions.push_back(samples.exceptions[i]);
        if (!samples.values.empty())
            out.values.push_back(samples.values[i]);
    }
    // The core's part of each sequence (a partition of the set's samples, checked one by one for
    // lockstep): its samples there, consecutive among its own; a sequence without them is none of its.
    if (!samples.sequences.empty()) {
        std::vector<size_t> own_before(samples.pcs.size() + 1, 0);   // the core's samples before index i
        for (size_t i = 0; i < samples.pcs.size(); ++i)
            own_before[i + 1] = own_before[i] + (core_at(i) == core ? 1 : 0);
        for (const Sequence& s : samples.sequences) {
            const size_t begin = own_before[std::min(s.begin, samples.pcs.size())];
            const size_t end = own_before[std::min(s.end, samples.pcs.size())];
            if (end > begin)
                out.sequences.push_back({begin, end});
        }
    }
    for (const AddressCount& c : samples.counts)
        if (c.core == core)
            out.counts.push_back(c);
    // The histogram and the samples without an address have no core: core 0's.
    if (core == 0) {
        out.buckets = samples.buckets;
        out.outside_buckets = samples.outside_buckets;
        out.without_address = samples.without_address;
    }
    return out;
}

std::optional<Profile> core_profile(const Profile& whole, uint32_t core)
{
    if (whole.cores.empty())
        return core == 0 ? std::optional<Profile>(whole) : std::nullopt;
    for (const CoreProfile& one : whole.cores)
        if (one.core == core) {
            Profile p;
            p.origin = whole.origin + ", " + one.name;
            p.by = whole.by == Grouping::core ? Grouping::function : whole.by;
            p.exact = whole.exact;
            p.total = one.total;
            p.rows = one.rows;
            p.errors = one.errors;   // a diff's design effects are the core's own
            p.warnings = whole.warnings;
            p.sampler = whole.sampler;
            return p;
        }
    return std::nullopt;
}

} // namespace mcuprof::core
