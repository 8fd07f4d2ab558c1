#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "html_page.h"
#include "mcuprof/report/report.h"
#include "mcuprof/hex.h"

namespace mcuprof::core {
namespace {

using html::escape;

// ---- the sampling metadata --------------------------------------------------------------

}   // namespace

// The recording header's pacing object (sampling_loop.cc, PacingOptions::to_json) in words:
// "exponential waits of 1 ms on average between samples (wall clock)". A text that is not
// such an object is shown as it is.
std::string describe_pacing(const std::string& pacing_json)
{
    const nlohmann::json p = nlohmann::json::parse(pacing_json, nullptr, false);
    if (!p.is_object() || !p.contains("shape") || !p["shape"].is_string())
        return pacing_json;
    const std::string shape = p["shape"].get<std::string>();
    std::string text;
    if (p.contains("mean_instructions") && p["mean_instructions"].is_number())
        text = printf_string("%s intervals of %.0f instructions on average (instruction count)", shape.c_str(),
                             p["mean_instructions"].get<double>());
    else if (p.contains("mean_seconds") && p["mean_seconds"].is_number())
        text = shape + " waits of " + html::readable_ms(1000 * p["mean_seconds"].get<double>()) +
               " on average between " + p.value("between", std::string("samples")) + " (wall clock)";
    else
        return pacing_json;
    if (p.contains("batch") && p["batch"].is_number_unsigned())
        text += printf_string(", %llu DWT_PCSR reads per batch", static_cast<unsigned long long>(p["batch"].get<uint64_t>()));
    if (p.contains("jitter") && p["jitter"].is_number())
        text += printf_string(", jitter %g", p["jitter"].get<double>());
    if (p.contains("max_halted") && p["max_halted"].is_number())
        text += printf_string(", halted at most %.1f %% of the time", 100 * p["max_halted"].get<double>());
    return text;
}

namespace {

void write_metadata(const Profile& p, std::ostream& out)
{
    auto item = [&](const std::string& term, const std::string& value) {
        out << "<dt>" << escape(term) << "</dt><dd>" << escape(value) << "</dd>\n";
    };
    out << "<h2>Sampling</h2>\n<dl class=\"meta\" id=\"metadata\">\n";
    item("origin", p.origin);
    item(p.exact ? "instructions" : "samples", printf_string("%.0f", p.total));
    item("kind", p.exact ? "exact instruction counts (a census: no sampling error)"
                         : "samples (each share has a standard error)");
    item("standard errors", describe_errors(p));
    item("grouped by", grouping_name(p));
    item("distinct addresses", std::to_string(p.distinct_addresses));
    item("unattributed", printf_string("%.0f (%.2f %%)", p.unattributed, p.total > 0 ? 100 * p.unattributed / p.total : 0.0));
    item("stacks", p.unwound ? "unwound call stacks" : "flat (one frame per sample, with inline chains)");
    if (p.unwound)
        item("truncated chains", describe_truncation(p.truncation));
    if (const std::string load = describe_load(p); !load.empty())
        item("CPU load", load);
    for (const auto& [row, what] : p.preempted)
        item(row, describe_preempted(p, row));
    if (p.sampler) {
        const SamplerFigures& s = *p.sampler;
        if (!s.method.empty())
            item("method", s.method);
        if (!s.pacing.empty())
            item("pacing", describe_pacing(s.pacing));
        item("rate", printf_string("%.0f samples/s", s.samples_per_second));
        item("duty", printf_string("target running %.1f %% of the time", 100 * s.run_duty));
        if (s.halt_latency_us)
            item("halt latency", printf_string("p50 %.0f us, p99 %.0f us", s.halt_latency_us->p50, s.halt_latency_us->p99));
        if (!s.end.empty())
            item("end", s.end);
    }
    if (const std::string stops = describe_core_stops(p); !stops.empty())
        item("cores' stops", stops);
    if (p.lockstep)
        item("lockstep", printf_string("the sequence repeats every %zu samples over %zu distinct addresses",
                                       size_t(p.lockstep->period), size_t(p.lockstep->distinct)));
    out << "</dl>\n";
    if (!p.warnings.empty()) {
        out << "<ul class=\"warnings\">\n";
        for (const Warning& w : p.warnings)
            out << "<li class=\"warning\" data-kind=\"" << escape(w.kind) << "\">" << escape(w.message) << "</li>\n";
        out << "</ul>\n";
    }
}

// ---- the table --------------------------------------------------------------------------

// One table of rows: the profile's (id "profile"), or a core's ("profile-core-N", by
// `by`, with no inclusive column: a core's own rows carry none).
void write_rows(const Profile& p, const std::vector<Row>& rows, Grouping by, const std::string& title,
                const std::string& id, bool inclusive, std::ostream& out)
{
    double scale = 0;
    for (const Row& r : rows)
        scale = std::max(scale, r.share.high);
    const std::string unit = p.exact ? "instructions" : "samples";
    const std::string column = by == p.by ? grouping_name(p) : std::string(name_of(by));
    out << "<h2>" << escape(title) << "</h2>\n<table class=\"sortable\" id=\"" << id << "\">\n<thead><tr>"
        << "<th class=\"name\">" << escape(column) << "</th><th>self %</th><th>&plusmn; se</th>"
        << "<th>95 % interval</th><th>" << unit << "</th>" << (inclusive ? (p.truncation.inclusive_lower_bounds() ? "<th>inclusive % (lower bound)</th>" : "<th>inclusive %</th>")
                      : "")
        << "<th>address</th><th class=\"name\">location</th></tr></thead>\n<tbody>\n";
    for (const Row& r : rows) {
        out << "<tr><td class=\"name\">" << escape(r.name) << "</td>"
            << printf_string("<td data-v=\"%.6g\">%.2f</td><td data-v=\"%.6g\">%.2f</td>", r.share.percent, r.share.percent,
                             r.share.stderr_pp, r.share.stderr_pp)
            << printf_string("<td data-v=\"%.6g\">", r.share.percent)
            << html::share_bar(r.share.percent, r.share.low, r.share.high, scale) << "</td>"
            << printf_string("<td data-v=\"%.6g\">%.0f</td>", r.samples, r.samples);
        if (inclusive)
            out << printf_string("<td data-v=\"%.6g\">%.2f</td>", r.inclusive.percent, r.inclusive.percent);
        out << "<td class=\"loc\">" << (r.address ? hex32(*r.address) : "") << "</td><td class=\"loc\">"
            << escape(r.location.empty() ? r.function : r.location) << "</td></tr>\n";
    }
    out << "</tbody></table>\n";
}

// The profile's table, then on a multi-core chip each core's, its shares of its own samples.
void write_table(const Profile& p, std::ostream& out)
{
    write_rows(p, p.rows, p.by, "By " + grouping_name(p), "profile", p.unwound && p.by == Grouping::function,
               out);
    const Grouping each = p.by == Grouping::core ? Grouping::function : p.by;
    for (const CoreProfile& core : p.cores)
        write_rows(p, core.rows, each,
                   core.name + printf_string(": %.0f %s, by ", core.total, p.exact ? "instructions" : "samples") +
                       std::string(name_of(each)),
                   "profile-core-" + std::to_string(core.core), false, out);
}

// ---- the annotated source ---------------------------------------------------------------

struct LineShare {
    uint32_t line = 0;
    double samples = 0;
};

// "path/file.c:42" -> ("path/file.c", 42); false for rows without a line.
bool split_location(const std::string& name, std::string& file, uint32_t& line)
{
    const size_t colon = name.rfind(':');
    if (colon == std::string::npos || colon + 1 == name.size())
        return false;
    const std::string number = name.substr(colon + 1);
    if (number.find_first_not_of("0123456789") != std::string::npos)
        return false;
    file = name.substr(0, colon);
    line = uint32_t(std::stoul(number));
    return true;
}

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

void write_file_excerpt(const std::string& file, const std::vector<LineShare>& shares, double total,
                        const SourceReader& read_source, std::ostream& out)
{
    std::map<uint32_t, double> by_line;
    for (const LineShare& s : shares)
        by_line[s.line] += s.samples;
    const std::optional<std::string> text = read_source ? read_source(file) : std::nullopt;
    out << "<h4 class=\"file\">" << escape(file) << "</h4>\n";
    if (!text) {
        out << "<p class=\"missing\">The source file is not on this machine (the path is the one DWARF "
               "names); shares per line:</p>\n<pre class=\"source\">";
        for (const auto& [line, samples] : by_line)
            out << printf_string("<span class=\"num\">%u</span><span class=\"share\">%.2f %%</span>\n", line,
                                 100 * samples / total);
        out << "</pre>\n";
        return;
    }
    // The hot lines with two lines of context around each; a gap is marked.
    const std::vector<std::string> source = lines_of(*text);
    std::set<uint32_t> shown;
    for (const auto& [line, samples] : by_line)
        for (uint32_t l = line > 2 ? line - 2 : 1; l <= line + 2; ++l)
            if (l <= source.size())
                shown.insert(l);
    out << "<pre class=\"source\">";
    uint32_t previous = 0;
    for (uint32_t l : shown) {
        if (previous != 0 && l != previous + 1)
            out << "<span class=\"num\">\xe2\x8b\xae</span>\n";
        previous = l;
        auto hot = by_line.find(l);
        const std::string share = hot != by_line.end() ? printf_string("%.2f %%", 100 * hot->second / total) : "";
        out << (hot != by_line.end() ? "<span class=\"hot\" data-line=\"" + std::to_string(l) + "\">" : "<span>")
            << printf_string("<span class=\"num\">%u</span><span class=\"share\">%s</span>  ", l, share.c_str())
            << escape(source[l - 1]) << "</span>\n";
    }
    out << "</pre>\n";
}

void write_sources(const HtmlReport& report, std::ostream& out)
{
    const Profile& lines = *report.lines;
    if (lines.total <= 0)
        return;
    // Lines by the function that holds them (DWARF's innermost function, so an inlined
    // function's lines are its own), hottest function first.
    std::map<std::string, std::map<std::string, std::vector<LineShare>>> by_function;   // function -> file -> lines
    std::map<std::string, double> function_samples;
    for (const Row& r : lines.rows) {
        std::string file;
        uint32_t line = 0;
        if (!split_location(r.name, file, line))
            continue;
        by_function[r.function][file].push_back({line, r.samples});
        function_samples[r.function] += r.samples;
    }
    std::vector<std::pair<double, std::string>> hottest;
    for (const auto& [name, samples] : function_samples)
        hottest.push_back({samples, name});
    std::sort(hottest.begin(), hottest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (hottest.size() > report.annotated_functions)
        hottest.resize(report.annotated_functions);

    out << "<h2>Hottest source lines</h2>\n<div id=\"sources\">\n";
    if (hottest.empty())
        out << "<p class=\"missing\">The ELF has no line information (build with -g).</p>\n";
    for (const auto& [samples, name] : hottest) {
        out << "<section class=\"function\" data-function=\"" << escape(name) << "\"><h3>" << escape(name)
            << printf_string(" \xe2\x80\x94 %.2f %%", 100 * samples / lines.total) << "</h3>\n";
        for (const auto& [file, shares] : by_function[name])
            write_file_excerpt(file, shares, lines.total, report.read_source, out);
        out << "</section>\n";
    }
    out << "</div>\n";
}

} // namespace

void write_html(const HtmlReport& report, std::ostream& out)
{
    const Profile& p = report.profile;
    html::begin_page(out, "mcuprof: " + p.origin);
    out << "<h1>mcuprof profile</h1>\n";
    write_metadata(p, out);
    write_flame_graph(p, out);
    write_timeline(report.timeline, out);
    for (const CoreTimeline& core : report.core_timelines)
        write_timeline(core.timeline, out, core.name, "timeline-core-" + std::to_string(core.core));
    write_table(p, out);
    if (report.lines != nullptr)
        write_sources(report, out);
    html::end_page(out);
}

} // namespace mcuprof::core
