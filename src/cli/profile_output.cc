#include "profile_output.h"

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "mcuprof/core/source_locator.h"
#include "mcuprof/core/symbols.h"
#include "mcuprof/error.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

void add_report_options(po::options_description& description, ReportOptions& options, const std::string& formats)
{
    description.add_options()
        ("elf", po::value(&options.elf)->value_name("FILE"), "firmware ELF that produced the samples (required)")
        ("by", po::value(&options.by)->value_name("KEY")->default_value("function"),
         "group samples by function, line, address, task or stack (call chains)")
        ("format", po::value(&options.format)->value_name("NAME")->default_value("text"), formats.c_str())
        ("output,o", po::value(&options.output)->value_name("FILE"), "write the report here, not to standard output")
        ("inline", po::bool_switch(&options.inline_frames),
         "name functions by the innermost inlined function (DWARF), not the symbol table")
        ("top", po::value(&options.top)->value_name("N")->default_value(0), "text: show the first N rows only");
}

namespace {

core::Grouping grouping_of(const core::SampleSet& samples, const ReportOptions& options, const std::string& elf)
{
    auto by = core::parse_grouping(options.by);
    if (!by)
        throw UsageError("--by takes function, line, address, task or stack, not '" + options.by + "'");
    if (elf.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that was sampled");
    if (*by == core::Grouping::task && samples.tags.empty())
        throw mcuprof::Error(options.input, "",
                             "--by task needs samples tagged with the current task; this input has no tags");
    return *by;
}

core::Profile attribute_as(const core::SampleSet& samples, const core::SymbolTable& symbols,
                           core::SourceLocator& locator, core::Grouping by, const ReportOptions& options,
                           bool stacks)
{
    core::AttributionOptions attribution;
    attribution.by = by;
    attribution.inline_frames = options.inline_frames;
    attribution.stacks = stacks;
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

core::Profile build_profile(const core::SampleSet& samples, const ReportOptions& options, const std::string& elf,
                            bool stacks)
{
    const core::Grouping by = grouping_of(samples, options, elf);
    const core::SymbolTable symbols = core::SymbolTable::load(elf);
    core::SourceLocator locator(elf);
    return attribute_as(samples, symbols, locator, by, options, stacks);
}

void write_output(const std::string& path, const std::function<void(std::ostream&)>& write)
{
    std::ofstream file;
    if (!path.empty()) {
        file.open(path, std::ios::binary);
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
    const core::ReportFormat& format = format_of(core::profile_formats(), options.format);
    if (format.binary && options.output.empty())
        throw UsageError("--format " + options.format + " needs -o FILE (the file is binary)");
    const core::Grouping by = grouping_of(samples, options, options.elf);

    // The ELF is read once for every profile the format needs.
    const core::SymbolTable symbols = core::SymbolTable::load(options.elf);
    core::SourceLocator locator(options.elf);
    const core::Profile profile = attribute_as(samples, symbols, locator, by, options, format.needs_stacks);
    std::optional<core::Profile> lines;
    if (format.needs_lines)
        lines = attribute_as(samples, symbols, locator, core::Grouping::line, options, format.needs_stacks);

    const core::ReportInput input{profile, lines ? &*lines : nullptr, samples, symbols, &locator,
                                  read_source_file, options.top};
    std::string note;
    write_output(options.output, [&](std::ostream& out) { note = format.write(input, out); });
    if (!note.empty())
        std::cerr << "mcuprof: " << (options.output.empty() ? "" : options.output + ": ") << note << '\n';
}

} // namespace mcuprof::cli
