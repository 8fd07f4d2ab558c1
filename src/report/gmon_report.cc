#include <algorithm>
#include <cstdio>
#include <ostream>

#include "mcuprof/report/report.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::core {
namespace {

void put32(std::string& out, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>(v >> (8 * i)));
}

} // namespace

GmonSummary write_gmon(const SampleSet& samples, const SymbolTable& symbols, std::ostream& out)
{
    GmonSummary summary;
    // One 2-byte bin per Thumb halfword over the code sections: exact, as gprof reads it.
    uint32_t low = UINT32_MAX;
    uint64_t high = 0;
    for (const CodeSection& c : symbols.code_sections()) {
        low = std::min(low, c.start);
        high = std::max(high, uint64_t(c.start) + c.size);
    }
    if (high <= low) {
        low = 0;
        high = 2;
    }
    high = low + ((high - low + 1) & ~uint64_t(1));
    std::vector<uint64_t> bins(size_t((high - low) / 2), 0);
    auto add = [&](uint32_t address, uint64_t count) {
        if (address < low || address >= high) {
            summary.outside += count;
            return;
        }
        bins[(address - low) / 2] += count;
    };
    for (uint32_t pc : samples.pcs)
        add(pc, 1);
    for (const AddressCount& c : samples.counts)
        add(c.address, c.count);
    for (const Bucket& b : samples.buckets) {
        // Spread over the bucket's halfwords, the remainder to the first.
        const uint32_t halfwords = std::max<uint32_t>(1, b.size / 2);
        for (uint32_t k = 0; k < halfwords; ++k)
            add(b.start + 2 * k, b.count / halfwords + (k == 0 ? b.count % halfwords : 0));
    }
    summary.outside += samples.outside_buckets;

    std::string bytes = "gmon";
    put32(bytes, 1);              // version
    bytes.append(12, '\0');       // spare
    bytes.push_back('\0');        // GMON_TAG_TIME_HIST
    put32(bytes, low);
    put32(bytes, uint32_t(high));
    put32(bytes, uint32_t(bins.size()));
    // gprof turns counts into seconds with this rate: the sampler's rate when it is known,
    // else 1, so that gprof's "seconds" are sample counts.
    double rate = 1;
    if (samples.sampler)
        rate = std::max(1.0, samples.sampler->samples_per_second);
    summary.rate = uint32_t(rate + 0.5);
    put32(bytes, summary.rate);
    char dimension[16] = "seconds";
    bytes.append(dimension, 15);
    bytes.push_back('s');
    for (uint64_t count : bins) {
        const uint16_t stored = uint16_t(std::min<uint64_t>(count, 0xFFFF));   // gprof's counters are 16-bit
        summary.saturated_bins += count > 0xFFFF;
        bytes.push_back(static_cast<char>(stored));
        bytes.push_back(static_cast<char>(stored >> 8));
    }
    out.write(bytes.data(), std::streamsize(bytes.size()));
    summary.bins = bins.size();
    return summary;
}

} // namespace mcuprof::core
