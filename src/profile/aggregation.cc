#include "aggregation.h"

#include <algorithm>

#include "key_counter.h"
#include "mcuprof/image/unwind/thumb_code.h"

namespace mcuprof::core::attribution {

bool caught_asleep(const SampleSet& samples, const SymbolTable& symbols, uint32_t pc)
{
    return samples.measures_time && pc_shows_sleep(symbols, pc, samples.reads_pcsr);
}

const std::vector<uint32_t>& key_tags(const SampleSet& samples, Grouping by)
{
    if (by == Grouping::value)
        return samples.values;
    return by == Grouping::exception ? samples.exceptions : samples.tags;
}

namespace {

// A bucket's count is shared equally by the even (Thumb instruction) addresses it
// covers that belong to a function: a bucket across a boundary is split in
// proportion to each function's part, and filler between functions gets nothing.
// By address the bucket is one item, its own row.
void add_bucket_items(std::vector<Weighted>& items, const SampleSet& samples, const SymbolTable& symbols, Grouping by)
{
    for (const Bucket& b : samples.buckets) {
        if (b.count == 0)
            continue;
        if (by == Grouping::address) {
            items.push_back({b.start, 0, false, double(b.count), &b, false, true});
            continue;
        }
        std::vector<uint32_t> owned;
        for (uint64_t a = b.start; a < uint64_t(b.start) + b.size; a += 2)
            if (symbols.find(uint32_t(a)) != nullptr)
                owned.push_back(uint32_t(a));
        if (owned.empty()) {
            items.push_back({b.start, 0, false, double(b.count), nullptr, false, true});
            continue;
        }
        const double each = double(b.count) / owned.size();
        for (uint32_t a : owned)
            items.push_back({a, 0, false, each, nullptr, false, true});
    }
}

} // namespace

std::vector<Weighted> aggregate(const SampleSet& samples, const FoundAsleep& found_asleep, const SymbolTable& symbols,
                                Grouping by)
{
    std::vector<Weighted> items;
    const bool by_exception = by == Grouping::exception;
    const std::vector<uint32_t>& tags = key_tags(samples, by);
    const bool tagged = !tags.empty();
    // Raw samples: count equal (tag, pc) pairs first, so each distinct address is
    // attributed once however many samples share it.
    // Untagged samples inside the image's code (nearly all of them) are counted in a dense
    // array, one counter per halfword: no hashing on the ten-million-sample path.
    uint32_t code_start = UINT32_MAX;
    uint64_t code_end = 0;
    for (const CodeSection& c : symbols.code_sections()) {
        code_start = std::min(code_start, c.start);
        code_end = std::max(code_end, uint64_t(c.start) + c.size);
    }
    const bool dense = !tagged && code_end > code_start && code_end - code_start <= (16u << 20);
    std::vector<uint32_t> dense_counts(dense ? size_t((code_end - code_start) / 2 + 1) : 0);
    KeyCounter counts, asleep_counts;
    for (size_t i = 0; i < samples.pcs.size(); ++i) {
        const uint32_t pc = samples.pcs[i];
        const uint32_t offset = pc - code_start;
        if (found_asleep(i))
            asleep_counts.add(sample_key(tagged ? tags[i] : 0, pc));
        else if (dense && offset < code_end - code_start && (offset & 1u) == 0 && dense_counts[offset / 2] != UINT32_MAX)
            ++dense_counts[offset / 2];
        else
            counts.add(sample_key(tagged ? tags[i] : 0, pc));
    }
    for (size_t k = 0; k < dense_counts.size(); ++k)
        if (dense_counts[k] != 0)
            counts.add_many(code_start + 2 * uint32_t(k), dense_counts[k]);
    // Tag 0 is no task (a live sampler before the scheduler starts), unless the source named it.
    // A variable's 0 is a value like any other.
    const bool zero_named = by == Grouping::value || samples.tag_names.count(0) != 0;
    auto add_counted = [&](const KeyCounter& counted, bool asleep) {
        counted.each([&](uint64_t key, uint64_t n) {
            const uint32_t tag = uint32_t(key >> 32);
            items.push_back({uint32_t(key), tag, tagged && (by_exception || tag != 0 || zero_named), double(n), nullptr,
                             asleep});
        });
    };
    add_counted(counts, false);
    add_counted(asleep_counts, true);
    for (const AddressCount& c : samples.counts)
        items.push_back({c.address, 0, false, double(c.count), nullptr});
    add_bucket_items(items, samples, symbols, by);
    return items;
}

} // namespace mcuprof::core::attribution
