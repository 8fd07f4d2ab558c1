#pragma once
// Reader of the on-chip sampler's dump: the text the reference firmware prints over its
// UART (format in docs/formats.md). A capture may hold several dumps ("chunks") and any
// other UART text, which is skipped and counted.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/profile/samples.h"
#include "mcuprof/inputs/text_file.h"

namespace mcuprof::sources {

// One entry of the top-N table (PROF_TOPN builds): a block of 1 << shift bytes and its
// decayed weight.
struct TableEntry {
    uint32_t block = 0;
    uint64_t hits = 0;       // +2 per sample in the block, -1 per decay turn
    uint64_t permille = 0;   // the firmware's hits * 1000 / total, as of the entry's last hit
};

struct DumpChunk {
    enum class Kind { raw, histogram, table };
    Kind kind = Kind::raw;
    size_t header_line = 0;
    uint64_t announced = 0;               // n= of the header: samples the firmware took
    std::optional<uint64_t> span;         // "span=" printed before this dump
    bool ended = false;                   // its "end" line was seen
    // raw
    std::vector<uint32_t> pcs;
    std::vector<uint32_t> tags;
    // histogram
    uint32_t base = 0;
    uint32_t shift = 0;
    uint64_t outside = 0;                 // out= of the header
    std::vector<uint32_t> counts;         // one per bucket of 1 << shift bytes from base
    // table (shift as above: the block size)
    uint64_t total = 0;                   // total= : weight given minus weight decayed
    uint64_t ignored = 0;                 // ignored= : samples in the ignore list
    uint64_t announced_entries = 0;       // entries= of the header
    std::vector<TableEntry> entries;      // in table order, free entries (hits 0) included
};

struct Dump {
    std::string path;
    std::vector<DumpChunk> chunks;
    std::map<uint32_t, std::string> tasks;   // "task ADDR NAME" lines
    size_t skipped_lines = 0;                // lines of other UART text
};

// Throws sources::Error naming the file, the line and the problem.
Dump parse_dump(std::string_view text, const std::string& path, const ReadProgress& progress = {});
Dump read_dump(const std::string& path, const ReadProgress& progress = {});

struct DumpSelection {
    std::optional<size_t> chunk;   // 1-based; all chunks merged when absent
    std::optional<size_t> first;   // keep the first N raw samples
};

// Takes the dump by value: pass it with std::move and its samples move, not copy.
core::SampleSet to_samples(Dump dump, const DumpSelection& selection);

} // namespace mcuprof::sources
