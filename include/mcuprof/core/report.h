#pragma once
// Report formats of a profile, one file each under src/core/report/.
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "mcuprof/core/profile.h"

namespace mcuprof::core {

// The seed's table (percent, samples, name) with a standard-error column, after a
// header with the sample count and the warnings. max_rows 0: every row.
void write_text(const Profile& profile, std::ostream& out, size_t max_rows = 0);

// A live sampler's figures from a recording's summary (docs/formats.md), one line without
// the end: the duty, then what the method measured (halt latency when it halted, the
// DWT_PCSR batches' round trips and halted reads when it read PCSR). Missing or mistyped
// fields are left out: the summary comes from a file. With stacks, the line ends with how
// many chains were truncated, by reason.
std::string describe_sampler(const nlohmann::json& summary);

// "stacks: N of M chains truncated (P % of the samples): count reason, ...", and that the
// inclusive shares are lower bounds when more than 1 % were.
std::string describe_truncation(const Truncation& truncation);

// The schema is documented in docs/formats.md.
nlohmann::json to_json(const Profile& profile);

// Collapsed stacks, flamegraph.pl's input: one `root;caller;leaf COUNT` line per stack row.
// Flat profiles give one-frame stacks (with their inline chains).
void write_collapsed(const Profile& profile, std::ostream& out);

// speedscope's file format (https://www.speedscope.app/file-format-schema.json): one
// "sampled" profile, each stack row one sample of its weight, frames shared.
nlohmann::json to_speedscope(const Profile& profile);

// The text of a source file named by DWARF, or nullopt when it cannot be read (the report
// then says so). The core reads no files; the command line passes the reader.
using SourceReader = std::function<std::optional<std::string>(const std::string& path)>;

struct HtmlReport {
    const Profile& profile;              // the table, the flame graph (stacks) and the metadata
    const Profile* lines = nullptr;      // the same samples by line: the annotated source
    SourceReader read_source;            // may be empty: no source text, shares per line only
    size_t annotated_functions = 5;      // the hottest functions whose lines are shown
};

// One self-contained HTML file (docs/formats.md): a flame graph when the profile has
// unwound stacks, else an icicle of functions; a sortable table with 95 % interval bars;
// the hottest functions' source lines with their shares; the sampling metadata and warnings.
void write_html(const HtmlReport& report, std::ostream& out);

class SymbolTable;
struct GmonSummary {
    size_t bins = 0;
    uint32_t rate = 1;
    uint64_t outside = 0;        // samples outside the code sections, not representable
    size_t saturated_bins = 0;   // bins over 65535, stored as 65535
};
// gprof's gmon.out (a time histogram of 2-byte bins over the code sections), which
// arm-none-eabi-gprof reads with the ELF. Works from the samples, not a profile.
GmonSummary write_gmon(const SampleSet& samples, const SymbolTable& symbols, std::ostream& out);

} // namespace mcuprof::core
