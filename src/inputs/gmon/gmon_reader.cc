#include "mcuprof/inputs/gmon_reader.h"

#include <algorithm>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/text_file.h"

namespace mcuprof::sources {
namespace {

constexpr size_t header_size = 20;        // "gmon", version, 12 spare bytes
constexpr size_t hist_header_size = 32;   // low_pc, high_pc, hist_size, prof_rate, dimen[15], abbrev
enum Tag : uint8_t { time_histogram = 0, call_arc = 1, basic_block_counts = 2 };

class Reader {
public:
    Reader(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}

    uint32_t u32()
    {
        need(4, "a 32-bit field");
        const char* p = bytes_.data() + at_;
        at_ += 4;
        return uint32_t(uint8_t(p[0])) | uint32_t(uint8_t(p[1])) << 8 | uint32_t(uint8_t(p[2])) << 16 |
               uint32_t(uint8_t(p[3])) << 24;
    }
    uint16_t u16()
    {
        need(2, "a histogram count");
        const char* p = bytes_.data() + at_;
        at_ += 2;
        return uint16_t(uint8_t(p[0]) | uint8_t(p[1]) << 8);
    }
    uint8_t u8()
    {
        need(1, "a record tag");
        return uint8_t(bytes_[at_++]);
    }
    void skip(size_t n, const char* what)
    {
        need(n, what);
        at_ += n;
    }
    bool done() const { return at_ >= bytes_.size(); }
    size_t left() const { return bytes_.size() - at_; }
    size_t at() const { return at_; }
    [[noreturn]] void fail(size_t offset, const std::string& problem) const
    {
        throw Error(path_, "offset " + std::to_string(offset), problem);
    }

private:
    void need(size_t n, const char* what) const
    {
        if (bytes_.size() - at_ < n)
            fail(at_, std::string("the file ends inside ") + what);
    }
    std::string_view bytes_;
    const std::string& path_;
    size_t at_ = 0;
};

} // namespace

bool is_gmon(std::string_view head)
{
    return head.substr(0, 4) == "gmon";
}

GmonFile parse_gmon_records(std::string_view bytes, const std::string& path)
{
    Reader r(bytes, path);
    if (!is_gmon(bytes))
        r.fail(0, "not a gmon.out file (no \"gmon\" magic)");
    r.skip(4, "the header");
    const uint32_t version = r.u32();
    if (version == 0x01000000)
        r.fail(4, "a big-endian gmon.out; only little-endian (ARM) files are read");
    if (version != 1)
        r.fail(4, "gmon.out version " + std::to_string(version) + ", not 1");
    r.skip(12, "the header");

    GmonFile file;
    while (!r.done()) {
        const size_t record = r.at();
        switch (r.u8()) {
        case time_histogram: {
            GmonFile::Histogram h;
            h.low = r.u32();
            h.high = r.u32();
            const uint32_t bins = r.u32();
            h.rate = r.u32();
            r.skip(16, "the histogram header");
            if (h.high <= h.low || bins == 0 || bins > (h.high - h.low))
                r.fail(record, "histogram of " + std::to_string(bins) + " bins over [" + std::to_string(h.low) + ", " +
                                   std::to_string(h.high) + ") makes no sense");
            h.counts.reserve(std::min<size_t>(bins, r.left() / 2));   // a corrupt count fails at the end, not here
            for (uint32_t k = 0; k < bins; ++k)
                h.counts.push_back(r.u16());
            file.histograms.push_back(std::move(h));
            break;
        }
        case call_arc:
            r.skip(12, "a call-graph arc");
            ++file.arcs;
            break;
        case basic_block_counts: {
            const uint32_t n = r.u32();
            r.skip(size_t(n) * 8, "basic-block counts");
            break;
        }
        default:
            r.fail(record, "unknown record tag " + std::to_string(uint8_t(bytes[record])));
        }
    }
    return file;
}

core::SampleSet parse_gmon(std::string_view bytes, const std::string& path)
{
    const GmonFile file = parse_gmon_records(bytes, path);
    core::SampleSet out;
    out.measures_time = true;   // OpenOCD's profile: DWT_PCSR or halts, as fast as it can, by time
    // DWT_PCSR where the core has it (OpenOCD's cortex_m_profiling), else halts: a halt at
    // a WFI that is about to run is one instruction's time, a PCSR read there is sleep.
    out.reads_pcsr = true;
    out.origin = "gmon.out histogram: " + path;
    size_t saturated = 0;
    for (const GmonFile::Histogram& h : file.histograms) {
        // OpenOCD's write_gmon (src/target/target.c) puts a PC in bin (pc - low) * bins / span,
        // rounded down, so bin k holds exactly the addresses from low + ceil(k * span / bins)
        // up to low + ceil((k + 1) * span / bins): with a width that is no whole number (841
        // bytes in 420 bins, 2.0024 each) that is one byte past the floor, where it differs.
        const uint64_t span = uint64_t(h.high) - h.low;
        const uint64_t bins = h.counts.size();
        auto bin_start = [&](uint64_t k) { return h.low + uint32_t((span * k + bins - 1) / bins); };
        for (uint64_t k = 0; k < bins; ++k) {
            const uint16_t count = h.counts[k];
            const uint32_t start = bin_start(k);
            const uint32_t end = bin_start(k + 1);
            if (count != 0)
                out.buckets.push_back({start, end - start, count});
            saturated += count == 0xFFFF;
        }
        out.origin += " (" + std::to_string(bins) + " bins, " + std::to_string(h.rate) + " samples/s)";
    }
    if (out.buckets.empty())
        throw Error(path, "offset " + std::to_string(bytes.size()), "no histogram samples in the file");
    // Nothing in a gmon.out says which firmware it was taken from (OpenOCD writes the PCs'
    // range and counts only): a wrong ELF names the samples wrongly and nothing can tell.
    out.notes.push_back("a gmon.out carries no identity of the firmware it was taken from: the function names are "
                        "right only if --elf is the image that ran");
    // OpenOCD's profile reads the PC back to back, pass after pass of 1024 reads; the file keeps
    // neither their order nor the passes, so nothing in it tells how correlated they were.
    out.notes.push_back("a gmon.out from OpenOCD's profile holds PCs read back to back, and keeps neither their "
                        "order nor the passes they came in: their errors cannot be estimated, and the binomial ones "
                        "shown are too small; for errors that hold, record with mcuprof record --mode pcsr "
                        "--pcsr-read profile, whose calls are bursts after random waits");
    if (saturated > 0)
        out.notes.push_back(std::to_string(saturated) +
                            " histogram bin(s) saturated at 65535 (gmon counts are 16-bit): their shares are lower "
                            "bounds");
    if (file.arcs > 0)
        out.origin += ", " + std::to_string(file.arcs) + " call arcs not used";
    return out;
}

GmonFile read_gmon_records(const std::string& path)
{
    const MappedFile file(path);
    return parse_gmon_records(file.bytes(), path);
}

core::SampleSet read_gmon(const std::string& path)
{
    const MappedFile file(path);
    return parse_gmon(file.bytes(), path);
}

} // namespace mcuprof::sources
