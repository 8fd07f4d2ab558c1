#pragma once
// Inside the profile library only: the first step of attribution, equal samples counted once
// into weighted addresses, and the facts about each sample that every later step reads.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "mcuprof/profile/profile.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::core::attribution {

inline constexpr const char* unknown_function = "?";
inline constexpr const char* outside_histogram = "(outside histogram)";

// One weighted address: a raw sample aggregated with its equals, a census count, or
// a share of a histogram bucket.
struct Weighted {
    uint32_t pc = 0;
    uint32_t tag = 0;
    bool tagged = false;
    double weight = 0;
    const Bucket* bucket = nullptr;   // set when the whole bucket is one row (by address)
    bool found_asleep = false;        // raw samples whose halt found the core asleep (DHCSR.S_SLEEP)
    bool histogram = false;           // a histogram bucket's count, or a share of it
};

// The key of a raw sample in aggregate(): its task tag and its address.
inline uint64_t sample_key(uint32_t tag, uint32_t pc) { return uint64_t(tag) << 32 | pc; }

// Whether a sample at `pc` caught the core asleep: an instant of time just past a WFI or WFE
// (a halt's PC: the wait's return address), or for DWT_PCSR reads the wait itself as well
// (the instruction last executed). Samples of executed instructions never sleep.
bool caught_asleep(const SampleSet& samples, const SymbolTable& symbols, uint32_t pc);

// Whether sample i's halt found the core asleep by the debug registers (SampleSet::found_asleep).
class FoundAsleep {
public:
    explicit FoundAsleep(const SampleSet& samples) : flags_(samples.found_asleep.empty() ? 0 : samples.pcs.size())
    {
        for (size_t i : samples.found_asleep)
            if (i < flags_.size())
                flags_[i] = true;
    }
    bool operator()(size_t i) const { return i < flags_.size() && flags_[i]; }

private:
    std::vector<bool> flags_;
};

// Which row each raw sample went to, by its key (sample_key): the samples found asleep apart,
// since their row is not their address's.
struct RowsOfSamples {
    std::unordered_map<uint64_t, size_t> awake, asleep;
    size_t at(uint32_t tag, uint32_t pc, bool found_asleep) const
    {
        return (found_asleep ? asleep : awake).at(sample_key(tag, pc));
    }
};

// What a raw sample's key holds beside its PC: the task tag, by value the variable's value, or by
// exception the exception number in its place.
const std::vector<uint32_t>& key_tags(const SampleSet& samples, Grouping by);

// The weighted addresses of every sample, count and histogram bucket: raw samples with equal
// (tag, pc) counted once, a bucket shared among the function addresses it covers (by address,
// one item for the whole bucket).
std::vector<Weighted> aggregate(const SampleSet& samples, const FoundAsleep& found_asleep, const SymbolTable& symbols,
                                Grouping by);

} // namespace mcuprof::core::attribution
