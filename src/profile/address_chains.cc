#include "mcuprof/profile/address_chains.h"

#include <map>
#include <tuple>

#include "mcuprof/profile/cores.h"
#include "mcuprof/hex.h"
#include "key_counter.h"

namespace mcuprof::core {
namespace {

// What a sample's root is named from: by task its tag, by exception its number; none otherwise.
const std::vector<uint32_t>* root_tags(const SampleSet& samples, Grouping by)
{
    if (by == Grouping::task)
        return &samples.tags;
    if (by == Grouping::exception)
        return &samples.exceptions;
    return nullptr;
}

uint32_t root_tag(const SampleSet& samples, Grouping by, size_t i)
{
    const std::vector<uint32_t>* tags = root_tags(samples, by);
    return tags != nullptr && i < tags->size() ? (*tags)[i] : 0;
}

// The root of a chain whose sample has `tag` (root_tags), or of a count (tag 0: counts carry
// no task and no exception, and are named as the attribution's rows name them).
std::string root_name(const SampleSet& samples, const Profile& profile, uint32_t tag)
{
    if (profile.by == Grouping::exception) {
        auto named = profile.exception_rows.find(tag);
        return named != profile.exception_rows.end() ? named->second : "exception " + std::to_string(tag);
    }
    if (profile.by != Grouping::task)
        return {};
    // Tag 0 is no task (a live sampler before the scheduler starts), unless the source named it.
    auto named = samples.tag_names.find(tag);
    if (named != samples.tag_names.end())
        return named->second;
    return tag == 0 ? std::string(untagged_task_name) : hex32(tag);
}

uint32_t core_of(const SampleSet& samples, size_t i) { return samples.cores.empty() ? 0 : samples.cores[i]; }

} // namespace

std::string count_root(const SampleSet& samples, const Profile& profile)
{
    return root_name(samples, profile, 0);
}

SampleChains::SampleChains(const SampleSet& samples, const Profile& profile)
    : samples_(samples), profile_(profile), by_core_(is_multicore(samples))
{
}

AddressChain SampleChains::operator()(size_t i) const
{
    AddressChain chain;
    if (by_core_)
        chain.core = core_name(samples_, core_of(samples_, i));
    chain.task = root_name(samples_, profile_, root_tag(samples_, profile_.by, i));
    if (!samples_.stacks.empty()) {
        const CallStack& stack = samples_.stacks[i];
        chain.addresses.assign(stack.callers.rbegin(), stack.callers.rend());
        chain.truncated = stack.truncated;
        chain.from_secure = stack.stop == UnwindStop::secure_caller;
    }
    chain.addresses.push_back(samples_.pcs[i]);
    chain.weight = 1;
    return chain;
}

std::vector<AddressChain> address_chains(const SampleSet& samples, const Profile& profile)
{
    const bool by_core = is_multicore(samples);
    // (core, task, truncated, from the Secure state, addresses root first) -> weight
    using Key = std::tuple<uint32_t, std::string, bool, bool, std::vector<uint32_t>>;
    std::map<Key, double> counted;
    if (samples.stacks.empty() && !by_core) {
        // One address per sample, and maybe ten million samples: count (tag, pc) pairs first,
        // so that each distinct chain is named and keyed once.
        KeyCounter pairs;
        for (size_t i = 0; i < samples.pcs.size(); ++i)
            pairs.add(uint64_t(root_tag(samples, profile.by, i)) << 32 | samples.pcs[i]);
        pairs.each([&](uint64_t key, uint64_t n) {
            counted[{0, root_name(samples, profile, uint32_t(key >> 32)), false, false, {uint32_t(key)}}] += double(n);
        });
    } else {
        const SampleChains chain_of(samples, profile);
        for (size_t i = 0; i < samples.pcs.size(); ++i) {
            AddressChain chain = chain_of(i);
            counted[{core_of(samples, i), std::move(chain.task), chain.truncated, chain.from_secure,
                     std::move(chain.addresses)}] += 1;   // keyed by the core's number: in core order
        }
    }
    for (const AddressCount& c : samples.counts)
        counted[{c.core, count_root(samples, profile), false, false, {c.address}}] += double(c.count);

    std::vector<AddressChain> chains;
    chains.reserve(counted.size());
    for (auto& [key, weight] : counted) {
        auto& [core, task, truncated, from_secure, addresses] = key;
        chains.push_back({by_core ? core_name(samples, core) : std::string(), task, truncated, from_secure,
                          addresses, weight});
    }
    return chains;
}

} // namespace mcuprof::core
