#include <algorithm>
#include <cstdio>
#include <ostream>
#include <vector>

#include "mcuprof/report/report.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::core {
namespace {

void put32(std::string& out, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>(v >> (8 * i)));
}

// The address ranges the histogram records cover: the code sections, those less than
// `merge_gap` apart in one range. Code run from RAM lies hundreds of MiB above flash, and one
// range over both would be a file of that size; gprof reads one GMON_TAG_TIME_HIST record per
// range, so long as they do not overlap and share their rate (binutils gprof, hist.c).
struct Range {
    uint32_t low;
    uint64_t high;
};
std::vector<Range> histogram_ranges(const SymbolTable& symbols)
{
    constexpr uint64_t merge_gap = 64 * 1024;   // 32 Ki empty bins at most, 64 KiB of file
    std::vector<Range> sections;
    for (const CodeSection& c : symbols.code_sections())
        if (c.size != 0)
            sections.push_back({c.start, uint64_t(c.start) + c.size});
    std::sort(sections.begin(), sections.end(), [](const Range& a, const Range& b) { return a.low < b.low; });
    std::vector<Range> ranges;
    for (const Range& r : sections)
        if (!ranges.empty() && r.low <= ranges.back().high + merge_gap)
            ranges.back().high = std::max(ranges.back().high, r.high);
        else
            ranges.push_back(r);
    if (ranges.empty())
        ranges.push_back({0, 2});
    for (Range& r : ranges)   // a whole number of 2-byte bins
        r.high = r.low + ((r.high - r.low + 1) & ~uint64_t(1));
    return ranges;
}

} // namespace

GmonSummary write_gmon(const SampleSet& samples, const SymbolTable& symbols, std::ostream& out)
{
    GmonSummary summary;
    // One 2-byte bin per Thumb halfword over the code sections: exact, as gprof reads it.
    const std::vector<Range> ranges = histogram_ranges(symbols);
    std::vector<std::vector<uint64_t>> bins;
    for (const Range& r : ranges)
        bins.emplace_back(size_t((r.high - r.low) / 2), 0);
    auto add = [&](uint32_t address, uint64_t count) {
        for (size_t i = 0; i < ranges.size(); ++i)
            if (address >= ranges[i].low && address < ranges[i].high) {
                bins[i][(address - ranges[i].low) / 2] += count;
                return;
            }
        summary.outside += count;
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
    // gprof turns counts into seconds with this rate: the sampler's rate when it is known,
    // else 1, so that gprof's "seconds" are sample counts.
    double rate = 1;
    if (samples.sampler)
        rate = std::max(1.0, samples.sampler->samples_per_second);
    summary.rate = uint32_t(rate + 0.5);
    for (size_t i = 0; i < ranges.size(); ++i) {
        bytes.push_back('\0');        // GMON_TAG_TIME_HIST
        put32(bytes, ranges[i].low);
        put32(bytes, uint32_t(ranges[i].high));
        put32(bytes, uint32_t(bins[i].size()));
        put32(bytes, summary.rate);
        char dimension[16] = "seconds";
        bytes.append(dimension, 15);
        bytes.push_back('s');
        for (uint64_t count : bins[i]) {
            const uint16_t stored = uint16_t(std::min<uint64_t>(count, 0xFFFF));   // gprof's counters are 16-bit
            summary.saturated_bins += count > 0xFFFF;
            bytes.push_back(static_cast<char>(stored));
            bytes.push_back(static_cast<char>(stored >> 8));
        }
        summary.bins += bins[i].size();
    }
    summary.ranges = ranges.size();
    out.write(bytes.data(), std::streamsize(bytes.size()));
    return summary;
}

} // namespace mcuprof::core
