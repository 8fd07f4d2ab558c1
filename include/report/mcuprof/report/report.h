#pragma once
// Report formats of a profile, one file each under src/core/report/.
#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "mcuprof/profile/profile.h"

namespace mcuprof::core {

// The table (percent, samples, name) with a standard-error column, after a
// header with the sample count and the warnings. max_rows 0: every row.
void write_text(const Profile& profile, std::ostream& out, size_t max_rows = 0);

// A live sampler's figures, one line without the end: the duty, then what the method
// measured (halt latency when it halted, the DWT_PCSR batches' round trips and halted reads
// when it read PCSR). With stacks, the line ends with how many chains were truncated, by reason.
std::string describe_sampler(const SamplerFigures& figures);
// A recording's pacing (SamplerFigures::pacing, JSON text) in words, for the HTML page.
std::string describe_pacing(const std::string& pacing_json);

// "stacks: N of M chains truncated (P % of the samples): reason: count, ...", and that the
// inclusive shares are lower bounds when more than 1 % were.
std::string describe_truncation(const Truncation& truncation);

// "CPU load 62.31 % +-0.95 (asleep 30.10 %, idle task 7.59 %)" for samples that measure time;
// for samples of executed instructions, that sleep is not counted; empty when nothing is known.
std::string describe_load(const Profile& profile);
// By exception with stacks: "preempted: main 60.0 %, work 40.0 %" for one exception row, or "".
std::string describe_preempted(const Profile& profile, const std::string& row);
// How the standard errors were computed (Profile::errors), one phrase: none for a census,
// binomial for samples each taken on its own, or from the spread between bursts of
// back-to-back reads and how much larger that made them.
std::string describe_errors(const Profile& profile);
std::string describe_errors(const ErrorModel& errors, bool exact);   // a core's table: its own
// How the halts stopped the cores of a multi-core recording (Profile::core_stops), one line:
// "cores stopped within 980 us of each other (median of 1000 halts), p99 5.8 ms; ..." where the
// link measured the spread, "at one instant" where it has none; empty when not known.
std::string describe_core_stops(const Profile& profile);

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

// How the hottest functions' shares move over a recording: the samples in slices of equal
// time, each function's share of every slice.
struct TimelineSeries {
    std::string function;
    std::vector<double> shares;          // 0..1, one per slice
};
struct Timeline {
    double start_ms = 0;
    double end_ms = 0;
    size_t slices = 0;
    std::vector<size_t> samples_per_slice;
    std::vector<TimelineSeries> series;  // the hottest functions first
};
class SymbolTable;
// Empty without sample times (only recordings have them).
Timeline timeline_of(const SampleSet& samples, const SymbolTable& symbols, size_t functions = 5);

// One core's timeline (a multi-core recording).
struct CoreTimeline {
    uint32_t core = 0;
    std::string name;
    Timeline timeline;
};

struct HtmlReport {
    const Profile& profile;              // the table, the flame graph (stacks) and the metadata
    const Profile* lines = nullptr;      // the same samples by line: the annotated source
    SourceReader read_source;            // may be empty: no source text, shares per line only
    size_t annotated_functions = 5;      // the hottest functions whose lines are shown
    Timeline timeline{};                 // shown when it has series (recordings)
    // A multi-core recording: each core's timeline, with the core's name, after the chip's.
    std::vector<CoreTimeline> core_timelines{};
};

// The timeline as an SVG (svg#timeline, one polyline.series per function with its
// data-function and data-shares), for the HTML report; a core's as svg#timeline-core-N under
// a heading naming the core.
void write_timeline(const Timeline& timeline, std::ostream& out, const std::string& core_name = {},
                    const std::string& id = "timeline");
// Each core's timeline of a multi-core sample set, with its name; empty for one core.
std::vector<CoreTimeline> core_timelines_of(const SampleSet& samples, const SymbolTable& symbols);

// One self-contained HTML file (docs/formats.md): a flame graph when the profile has
// unwound stacks, else an icicle of functions; a sortable table with 95 % interval bars;
// the hottest functions' source lines with their shares; the sampling metadata and warnings.
void write_html(const HtmlReport& report, std::ostream& out);

// The root frame the export formats give a chain the unwinder could not finish.
inline constexpr std::string_view truncated_frame = "[truncated]";

// pprof's profile.proto, gzipped (docs/formats.md): one sample per stack row, one location
// per address with its inline chain as lines, `go tool pprof` reads it.
struct ReportInput;
std::string write_pprof(const ReportInput& input, std::ostream& out);

// The Firefox Profiler's processed profile format (docs/formats.md): every sample in the
// order taken, with its time when the input has times (recordings).
std::string write_firefox(const ReportInput& input, std::ostream& out);

class SymbolTable;
struct GmonSummary {
    size_t bins = 0;
    size_t ranges = 1;           // histogram records: one per stretch of code (flash, RAM code)
    uint32_t rate = 1;
    uint64_t outside = 0;        // samples outside the code sections, not representable
    size_t saturated_bins = 0;   // bins over 65535, stored as 65535
};
// gprof's gmon.out (a time histogram of 2-byte bins over the code sections, one record for
// each stretch of them: flash, code run from RAM), which
// arm-none-eabi-gprof reads with the ELF. Works from the samples, not a profile.
GmonSummary write_gmon(const SampleSet& samples, const SymbolTable& symbols, std::ostream& out);

// What every profile format is written from: the command line builds it once, with what
// the format's row says it needs.
struct ReportInput {
    const Profile& profile;              // by the asked grouping; with stacks when the format needs them
    const Profile* lines = nullptr;      // the same samples by line, when the format needs lines
    const SampleSet& samples;            // the samples themselves (order, times, raw addresses)
    const SymbolTable& symbols;
    SourceLocator* locator = nullptr;    // the ELF's DWARF: lines and inline chains of raw samples
    SourceReader read_source;            // may be empty
    size_t top = 0;                      // text: the rows shown; 0: all
};

// One profile format. Adding a format is one writer file and one row of profile_formats().
struct ReportFormat {
    std::string_view name;
    std::string_view help;               // a few words for --format's help
    bool needs_stacks = false;           // the profile's stacks (one-frame ones for flat samples)
    bool needs_lines = false;            // ReportInput::lines
    bool binary = false;                 // not for a terminal: needs -o FILE
    // Writes the report; returns a line for the user beside the file (standard error), or "".
    std::string (*write)(const ReportInput& input, std::ostream& out) = nullptr;
};

struct ProfileDiff;
struct DiffReportOptions {
    size_t top = 0;                         // rows shown; 0: all
    std::optional<double> fail_above_pp;    // the CI gate (diff --fail-above), when asked
    std::optional<double> fail_total_above_percent;   // the totals' gate (diff --fail-total-above)
};
struct DiffFormat {
    std::string_view name;
    std::string_view help;
    void (*write)(const ProfileDiff& diff, const DiffReportOptions& options, std::ostream& out) = nullptr;
};

struct CallGraph;
struct CallGraphFormat {
    std::string_view name;
    std::string_view help;
    bool has_warnings = true;            // the warnings are part of the output (else: standard error)
    void (*write)(const CallGraph& graph, const std::vector<std::string>& warnings, std::ostream& out) = nullptr;
};

// The tables (src/core/report/formats.cc), in the order --help lists them.
std::span<const ReportFormat> profile_formats();
std::span<const DiffFormat> diff_formats();
std::span<const CallGraphFormat> call_graph_formats();

// The row named `name`, or null.
template <typename Format>
const Format* find_format(std::span<const Format> table, std::string_view name)
{
    for (const Format& format : table)
        if (format.name == name)
            return &format;
    return nullptr;
}

// "text, json or html": the names, for messages.
template <typename Format>
std::string format_names(std::span<const Format> table)
{
    std::string text;
    for (size_t i = 0; i < table.size(); ++i) {
        if (i > 0)
            text += i + 1 == table.size() ? " or " : ", ";
        text += table[i].name;
    }
    return text;
}

// "text (a table ...), json (...)": the names with their help, for --format's help.
template <typename Format>
std::string format_help(std::span<const Format> table)
{
    std::string text;
    for (const Format& format : table) {
        if (!text.empty())
            text += ", ";
        text.append(format.name).append(" (").append(format.help).append(")");
    }
    return text;
}

} // namespace mcuprof::core
