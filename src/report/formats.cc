// The tables of report formats: one row per format, from which the command line takes
// --format's help, its validation and what to build before writing.
#include <array>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/call_graph.h"
#include "mcuprof/profile/diff.h"
#include "mcuprof/report/report.h"

namespace mcuprof::core {

namespace {

std::string text_format(const ReportInput& input, std::ostream& out)
{
    write_text(input.profile, out, input.top);
    return {};
}

std::string json_format(const ReportInput& input, std::ostream& out)
{
    out << to_json(input.profile).dump(2) << '\n';
    return {};
}

std::string html_format(const ReportInput& input, std::ostream& out)
{
    write_html({input.profile, input.lines, input.read_source, 5, timeline_of(input.samples, input.symbols),
                core_timelines_of(input.samples, input.symbols)},
               out);
    return {};
}

std::string collapsed_format(const ReportInput& input, std::ostream& out)
{
    write_collapsed(input.profile, out);
    return {};
}

std::string speedscope_format(const ReportInput& input, std::ostream& out)
{
    out << to_speedscope(input.profile).dump() << '\n';
    return {};
}

std::string callgrind_format(const ReportInput& input, std::ostream& out)
{
    write_callgrind(call_graph_of(input.profile), out);
    return {};
}

std::string gmon_format(const ReportInput& input, std::ostream& out)
{
    // gprof's histogram works from the samples themselves, not from the profile.
    const GmonSummary summary = write_gmon(input.samples, input.symbols, out);
    std::string note = "gmon.out of " + std::to_string(summary.bins) + " bins of 2 bytes, " +
                       std::to_string(summary.rate) + " samples/s";
    if (summary.ranges > 1)
        note += ", in " + std::to_string(summary.ranges) + " address ranges";
    if (summary.outside > 0)
        note += "; " + std::to_string(summary.outside) + " samples outside the code left out";
    if (summary.saturated_bins > 0)
        note += "; " + std::to_string(summary.saturated_bins) + " bins saturated at 65535";
    return note;
}

// name, help, needs stacks, needs lines, binary, writer
constexpr std::array profiles{
    ReportFormat{"text", "a table of shares with standard errors", false, false, false, text_format},
    ReportFormat{"json", "the rows and metadata, docs/formats.md", false, false, false, json_format},
    ReportFormat{"html", "one self-contained page: flame graph, table, hot source lines", true, true, false,
                 html_format},
    ReportFormat{"collapsed", "flamegraph.pl's folded stacks", true, false, false, collapsed_format},
    ReportFormat{"speedscope", "speedscope's file format", true, false, false, speedscope_format},
    ReportFormat{"callgrind", "callgrind_annotate and KCachegrind", true, false, false, callgrind_format},
    ReportFormat{"pprof", "pprof's profile.proto, gzipped, with -o", true, false, true, write_pprof},
    ReportFormat{"firefox", "the Firefox Profiler's processed format, samples in time order", false, false,
                 false, write_firefox},
    ReportFormat{"gmon", "gprof's gmon.out, with -o", false, false, true, gmon_format},
};

constexpr std::array diffs{
    DiffFormat{"text", "both shares, the difference and its z-score per row, then the hints",
               [](const ProfileDiff& diff, const DiffReportOptions& options, std::ostream& out) {
                   write_text(diff, out, options.top);
               }},
    DiffFormat{"json", "docs/formats.md",
               [](const ProfileDiff& diff, const DiffReportOptions&, std::ostream& out) {
                   out << to_json(diff).dump(2) << '\n';
               }},
    DiffFormat{"html", "one self-contained page with both shares as bars",
               [](const ProfileDiff& diff, const DiffReportOptions&, std::ostream& out) { write_html(diff, out); }},
    DiffFormat{"markdown", "a table for a pull-request comment or a CI job summary",
               [](const ProfileDiff& diff, const DiffReportOptions& options, std::ostream& out) {
                   write_markdown(diff, out, options.fail_above_pp, options.fail_total_above_percent, options.top);
               }},
};

constexpr std::array call_graphs{
    CallGraphFormat{"text", "functions by inclusive cost with their callees", true,
                    [](const CallGraph& graph, const std::vector<std::string>& warnings, std::ostream& out) {
                        write_call_graph_text(graph, out, warnings);
                    }},
    CallGraphFormat{"json", "docs/formats.md", true,
                    [](const CallGraph& graph, const std::vector<std::string>& warnings, std::ostream& out) {
                        out << call_graph_json(graph, warnings).dump(2) << '\n';
                    }},
    CallGraphFormat{"callgrind", "callgrind_annotate and KCachegrind", false,
                    [](const CallGraph& graph, const std::vector<std::string>&, std::ostream& out) {
                        write_callgrind(graph, out);
                    }},
    CallGraphFormat{"dot", "Graphviz", false,
                    [](const CallGraph& graph, const std::vector<std::string>&, std::ostream& out) {
                        write_dot(graph, out);
                    }},
};

} // namespace

std::span<const ReportFormat> profile_formats()
{
    return profiles;
}

std::span<const DiffFormat> diff_formats()
{
    return diffs;
}

std::span<const CallGraphFormat> call_graph_formats()
{
    return call_graphs;
}

} // namespace mcuprof::core
