#pragma once
// The address chains of a sample set: what every stack format (the profile's stack rows,
// pprof's Locations, the Firefox Profiler's stacks) is made from, so that they agree on the
// root frames above the code: the core, the task or exception, [truncated], [Secure state].
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mcuprof/profile/profile.h"
#include "mcuprof/profile/samples.h"

namespace mcuprof::core {

// The name of the task of an untagged sample (by task): its row, and its stacks' root.
inline constexpr const char* untagged_task_name = "(no task)";

struct AddressChain {
    std::string core;                    // a multi-core chip's core, as the report names it; else empty
    std::string task;                    // the root pseudo-frame by task or by exception; else empty
    bool truncated = false;              // the unwinder stopped short of the outermost frame
    bool from_secure = false;            // complete up to the Secure state's call (secure_frame_name)
    std::vector<uint32_t> addresses;     // root first, the sampled PC (or counted address) last
    double weight = 0;                   // samples, or executed instructions
};

// The root of a chain with no sample of its own (an exact count, a histogram bucket's share),
// as an untagged sample's: by task untagged_task_name, by exception exception 0's row
// (Profile::exception_rows), else empty.
std::string count_root(const SampleSet& samples, const Profile& profile);

// Each raw sample's own chain, weight 1: for a format that keeps the samples' order (the
// Firefox Profiler's). Both sets must outlive it.
class SampleChains {
public:
    SampleChains(const SampleSet& samples, const Profile& profile);
    AddressChain operator()(size_t sample) const;

private:
    const SampleSet& samples_;
    const Profile& profile_;
    bool by_core_;                       // is_multicore(samples), found once
};

// Every raw sample's chain and every exact count's (one address, untagged), equal chains
// merged, in the order of (core number, task, truncated, from_secure, addresses). Histogram
// buckets have no address of their own and are not here (the attribution shares them out).
std::vector<AddressChain> address_chains(const SampleSet& samples, const Profile& profile);

} // namespace mcuprof::core
