#include "options.h"

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mcuprof/core/call_graph.h"
#include "mcuprof/core/report.h"
#include "mcuprof/core/source_locator.h"
#include "mcuprof/core/symbols.h"
#include "mcuprof/error.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

void add_report_options(po::options_description& description, ReportOptions& options)
{
    description.add_options()
        ("elf", po::value(&options.elf)->value_name("FILE"), "firmware ELF that produced the samples (required)")
        ("by", po::value(&options.by)->value_name("KEY")->default_value("function"),
         "group samples by function, line, address, task or stack (call chains)")
        ("format", po::value(&options.format)->value_name("NAME")->default_value("text"),
         "text, json, html (one self-contained page), collapsed (flamegraph.pl), speedscope, callgrind, "
         "or gmon (gprof's gmon.out, with -o)")
        ("output,o", po::value(&options.output)->value_name("FILE"), "write the report here, not to standard output")
        ("inline", po::bool_switch(&options.inline_frames),
         "name functions by the innermost inlined function (DWARF), not the symbol table")
        ("top", po::value(&options.top)->value_name("N")->default_value(0), "text: show the first N rows only");
}

bool parse_command(const Arguments& args, const std::string& usage, const po::options_description& description,
                   std::string& input)
{
    po::options_description all(description);
    all.add_options()("help,h", "show this help")("input", po::value(&input), "input file");
    po::positional_options_description positional;
    positional.add("input", 1);
    po::variables_map values;
    try {
        po::store(po::command_line_parser(args).options(all).positional(positional).run(), values);
        if (values.count("help")) {
            std::cout << usage << "\n\n" << description << '\n';
            return false;
        }
        po::notify(values);
    } catch (const po::error& e) {
        throw UsageError(e.what());
    }
    return true;
}

namespace {

// The number in front and what follows it.
std::pair<double, std::string> split_number(const std::string& text, const std::string& option)
{
    size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        throw UsageError(option + " takes a number with a unit, not '" + text + "'");
    }
    if (!(value > 0) || !std::isfinite(value))
        throw UsageError(option + " must be positive, not '" + text + "'");
    return {value, text.substr(used)};
}

} // namespace

std::chrono::nanoseconds parse_duration(const std::string& text, const std::string& option)
{
    const auto [value, unit] = split_number(text, option);
    double scale = 0;
    if (unit == "ns")
        scale = 1;
    else if (unit == "us")
        scale = 1e3;
    else if (unit == "ms")
        scale = 1e6;
    else if (unit == "s")
        scale = 1e9;
    else if (unit == "min")
        scale = 60e9;
    else
        throw UsageError(option + " needs a unit (ns, us, ms, s, min): '" + text + "'");
    return std::chrono::nanoseconds(static_cast<int64_t>(value * scale));
}

double parse_count(const std::string& text, const std::string& option)
{
    const auto [value, unit] = split_number(text, option);
    if (unit.empty())
        return value;
    if (unit == "k")
        return value * 1e3;
    if (unit == "M")
        return value * 1e6;
    throw UsageError(option + " takes a count (20000, 20k, 1M), not '" + text + "'");
}

namespace {

// The formats that print stacks get them for flat samples too (one frame each).
bool stack_format(const std::string& format)
{
    return format == "collapsed" || format == "speedscope" || format == "callgrind" || format == "html";
}

core::Profile attribute_as(const core::SampleSet& samples, const core::SymbolTable& symbols,
                           core::SourceLocator& locator, core::Grouping by, const ReportOptions& options)
{
    core::AttributionOptions attribution;
    attribution.by = by;
    attribution.inline_frames = options.inline_frames;
    attribution.stacks = stack_format(options.format);
    return core::attribute(samples, symbols, &locator, attribution);
}

// A source file as DWARF names it, or nullopt when it is not on this machine.
std::optional<std::string> read_source_file(const std::string& path)
{
    std::ifstream file(path, std::ios::binary);
    if (!file)
        return std::nullopt;
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

} // namespace

core::Profile build_profile(const core::SampleSet& samples, const ReportOptions& options, const std::string& elf)
{
    auto by = core::parse_grouping(options.by);
    if (!by)
        throw UsageError("--by takes function, line, address, task or stack, not '" + options.by + "'");
    if (options.format != "text" && options.format != "json" && !stack_format(options.format))
        throw UsageError("--format takes text, json, html, collapsed, speedscope, callgrind or gmon, not '" +
                         options.format + "'");
    if (elf.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that was sampled");
    if (*by == core::Grouping::task && samples.tags.empty())
        throw mcuprof::Error(options.input, "",
                             "--by task needs samples tagged with the current task; this input has no tags");

    const core::SymbolTable symbols = core::SymbolTable::load(elf);
    core::SourceLocator locator(elf);
    return attribute_as(samples, symbols, locator, *by, options);
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write)
{
    std::ofstream file;
    if (!path.empty()) {
        file.open(path);
        if (!file)
            throw mcuprof::Error(path, "", "cannot write the report");
    }
    std::ostream& out = path.empty() ? std::cout : file;
    write(out);
    out.flush();
    if (!out)
        throw mcuprof::Error(path.empty() ? "standard output" : path, "", "write failed");
}

void write_profile(const core::SampleSet& samples, const ReportOptions& options)
{
    if (options.format == "gmon") {
        // gprof's binary histogram: needs a file, and works from the samples themselves.
        if (options.output.empty())
            throw UsageError("--format gmon needs -o FILE (gmon.out is binary)");
        if (options.elf.empty())
            throw UsageError("--elf FILE is required: the ELF of the firmware that was sampled");
        const core::SymbolTable symbols = core::SymbolTable::load(options.elf);
        core::GmonSummary summary;
        write_output(options.output, [&](std::ostream& out) { summary = core::write_gmon(samples, symbols, out); });
        std::cerr << "mcuprof: gmon.out of " << summary.bins << " bins of 2 bytes, " << summary.rate
                  << " samples/s, written to " << options.output;
        if (summary.outside > 0)
            std::cerr << "; " << summary.outside << " samples outside the code left out";
        if (summary.saturated_bins > 0)
            std::cerr << "; " << summary.saturated_bins << " bins saturated at 65535";
        std::cerr << '\n';
        return;
    }
    const core::Profile profile = build_profile(samples, options, options.elf);
    if (options.format == "html") {
        // The annotated source needs the same samples by line.
        const core::SymbolTable symbols = core::SymbolTable::load(options.elf);
        core::SourceLocator locator(options.elf);
        const core::Profile lines = attribute_as(samples, symbols, locator, core::Grouping::line, options);
        write_output(options.output, [&](std::ostream& out) {
            core::write_html({profile, &lines, read_source_file}, out);
        });
        return;
    }
    write_output(options.output, [&](std::ostream& out) {
        if (options.format == "json")
            out << core::to_json(profile).dump(2) << '\n';
        else if (options.format == "collapsed")
            core::write_collapsed(profile, out);
        else if (options.format == "speedscope")
            out << core::to_speedscope(profile).dump() << '\n';
        else if (options.format == "callgrind")
            core::write_callgrind(core::call_graph_of(profile), out);
        else
            core::write_text(profile, out, options.top);
    });
}

} // namespace mcuprof::cli
