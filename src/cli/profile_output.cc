#include "profile_output.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "mcuprof/profile/cores.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/error.h"
#include "mcuprof/profile/profile.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

namespace {

// "function, line or stack"
std::string listed(const std::vector<std::string>& words)
{
    std::string text;
    for (size_t i = 0; i < words.size(); ++i)
        text += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    return text;
}

} // namespace

std::string standard_output_format_help()
{
    std::string text;
    for (const core::ReportFormat& format : core::profile_formats())
        if (!format.binary)
            text.append(text.empty() ? "" : ", ").append(format.name).append(" (").append(format.help).append(")");
    return text;
}

std::string standard_output_format_names()
{
    std::vector<std::string> names;
    for (const core::ReportFormat& format : core::profile_formats())
        if (!format.binary)
            names.emplace_back(format.name);
    return listed(names);
}

void add_report_options(CommandLine& line, ReportOptions& options, const ReportChoices& choices)
{
    // Boost copies the help texts.
    auto offers = [&](const char* grouping) {
        return std::find(choices.groupings.begin(), choices.groupings.end(), grouping) != choices.groupings.end();
    };
    const std::string by_help = "group samples by " + listed(choices.groupings) +
                                (offers("stack") ? " (stack: call chains)" : "") +
                                (offers("var:NAME") ? " (var:NAME: the value of the global NAME at each halt)" : "");
    options.command = line.command();
    const std::string top_help = "show the first N rows only (--format " + listed(choices.top_formats) + ")";
    add_elf_option(line, options.elves, choices.elf_help);
    line.options()
        ("by", po::value(&options.by)->value_name("KEY")->default_value("function"), by_help.c_str())
        ("format", po::value(&options.format)->value_name("NAME")->default_value("text"), choices.formats.c_str());
    if (choices.output)
        line.options()("output,o", po::value(&options.output)->value_name("FILE"),
                       "write the report to FILE, not to standard output");
    line.options()
        ("inline", po::bool_switch(&options.inline_frames),
         "name functions by the innermost inlined function (DWARF), not the symbol table")
        ("top", whole_number(options.top, "top")->value_name("N"), top_help.c_str());
}

void check_report_options(const CommandLine& line, const ReportOptions& options, const ReportChoices& choices,
                          bool format_is_binary)
{
    const auto& by = choices.groupings;
    const std::string asked = core::variable_of_grouping(options.by).empty() ? options.by : "var:NAME";
    if (std::find(by.begin(), by.end(), asked) == by.end())
        throw UsageError("--by takes " + listed(by) + ", not '" + options.by + "'");
    const auto& top = choices.top_formats;
    if (line.given("top") && std::find(top.begin(), top.end(), options.format) == top.end())
        throw UsageError("--top goes with --format " + listed(top) + ", not with --format " + options.format);
    if (format_is_binary && options.output.empty())
        throw UsageError("--format " + options.format + " needs -o FILE (the file is binary)");
    if (!options.output.empty())
        check_writable(options.output);
}

void add_elf_option(CommandLine& line, std::vector<std::string>& elves, const std::string& help)
{
    // The first names the main image; the others run beside it. Boost copies the help text.
    const std::string text = help + "; again for each other image the target runs (a bootloader, its application), "
                                    "each with its own addresses";
    line.options()("elf", po::value(&elves)->value_name("FILE")->composing(), text.c_str());
}

std::string elf_arguments(const std::vector<std::string>& elves)
{
    std::string text;
    for (const std::string& elf : elves)
        text += (text.empty() ? "--elf " : " --elf ") + elf;
    return text;
}

void settle_recorded_elves(ReportOptions& options, const sources::RecordedFirmware& recorded)
{
    if (!options.elves.empty())
        return;
    if (recorded.path.empty())
        throw UsageError("--elf FILE is required: the ELF of the firmware that was sampled");
    std::error_code ignored;
    auto there = [&](const std::string& path) {
        if (!std::filesystem::exists(path, ignored))
            throw UsageError("--elf FILE is required: the recorded ELF " + path + " is not there");
        return path;
    };
    options.elves.push_back(there(recorded.path));
    for (const sources::RecordedFirmware& image : recorded.more)   // the other images it ran
        options.elves.push_back(there(image.path));
}

namespace {

// One image against the one the recording names at its place; a mismatch a warning (--strict:
// an error).
void check_image_identity(ReportOptions& options, const sources::RecordedFirmware& recorded,
                          const core::Image& image)
{
    if (!recorded.identity)
        return;   // a recording from before the identity was stored
    const core::FirmwareIdentity& identity = image.identity();
    if (identity == *recorded.identity)
        return;
    const std::string& elf = image.path();
    std::error_code ignored;
    const bool same_path = !recorded.path.empty() && std::filesystem::equivalent(recorded.path, elf, ignored);
    const std::string problem =
        same_path ? elf + " has changed since the recording (" + recorded.identity->text() + " then, " +
                        identity.text() + " now)"
                  : "the samples were recorded from " + (recorded.path.empty() ? "another ELF" : recorded.path) +
                        " (" + recorded.identity->text() + "), not from " + elf + " (" + identity.text() + ")";
    if (options.strict)
        throw mcuprof::Error(options.input, "", problem + " (--strict)");
    options.warnings.push_back({"elf-mismatch", problem + ": functions may be misnamed"});
}

} // namespace

void check_recorded_identity(ReportOptions& options, const sources::RecordedFirmware& recorded,
                             const core::ImageSet& images)
{
    const std::vector<core::Image>& given = images.images();
    check_image_identity(options, recorded, given.front());
    // The other images, place by place: the second --elf against the second image recorded.
    for (size_t i = 1; i < given.size() && i - 1 < recorded.more.size(); ++i)
        check_image_identity(options, recorded.more[i - 1], given[i]);
}

core::ImageSet open_images(ReportOptions& options)
{
    core::ImageSet images = core::ImageSet::open(options.elves);
    for (const std::string& note : images.notes())
        options.warnings.push_back({"images", note});
    return images;
}

core::ImageSet check_recorded_images(ReportOptions& options, const sources::RecordedFirmware& recorded)
{
    settle_recorded_elves(options, recorded);
    core::ImageSet images = open_images(options);
    check_recorded_identity(options, recorded, images);
    return images;
}

void check_writable(const std::string& path)
{
    std::error_code ignored;
    const bool existed = std::filesystem::exists(path, ignored);
    std::FILE* file = std::fopen(path.c_str(), "ab");   // creates, but does not truncate
    if (file == nullptr)
        throw mcuprof::Error(path, "", std::string("cannot write: ") + std::strerror(errno));
    std::fclose(file);
    if (!existed)
        std::filesystem::remove(path, ignored);
}

namespace {

core::Grouping grouping_of(const core::SampleSet& samples, const ReportOptions& options)
{
    auto by = core::parse_grouping(options.by);
    if (!by)
        throw UsageError("--by takes function, line, address, task, stack, core, var:NAME or exception, not '" + options.by + "'");
    if (*by == core::Grouping::task && samples.tags.empty())
        throw mcuprof::Error(options.input, "",
                             "--by task needs samples tagged with the current task; this input has no tags");
    if (*by == core::Grouping::core && !core::is_multicore(samples))
        throw mcuprof::Error(options.input, "", "--by core needs the samples of a multi-core chip; this input has one core");
    if (*by == core::Grouping::value) {
        const std::string name(core::variable_of_grouping(options.by));
        if (samples.values.empty())
            throw mcuprof::Error(options.input, "",
                                 "--by " + options.by + " needs the variable's value at each sample: record with --by " +
                                     options.by);
        if (samples.variable != name)
            throw mcuprof::Error(options.input, "",
                                 "--by " + options.by + ": this recording watched the variable " + samples.variable +
                                     ", not " + name);
    }
    if (*by == core::Grouping::exception && samples.exceptions.empty())
        throw mcuprof::Error(options.input, "",
                             "--by exception needs the exception (IPSR) at each sample, which halting recordings "
                             "keep; this input has none");
    return *by;
}

core::Profile attribute_as(const core::SampleSet& samples, const core::ImageSet& images, core::Grouping by,
                           const ReportOptions& options, bool stacks)
{
    core::AttributionOptions attribution;
    attribution.by = by;
    attribution.inline_frames = options.inline_frames;
    attribution.stacks = stacks;
    if (by == core::Grouping::exception)
        attribution.vector_table = core::vector_handlers(images.main().vector_table());   // the one the core boots
    return core::attribute(samples, images.symbols(), &images.locator(), attribution);
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

core::Profile build_profile(const core::SampleSet& samples, const ReportOptions& options,
                            const core::ImageSet& images, bool stacks)
{
    const core::Grouping by = grouping_of(samples, options);
    return attribute_as(samples, images, by, options, stacks);
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

void write_profile(const core::SampleSet& samples, const ReportOptions& options, const core::ImageSet& images)
{
    const core::ReportFormat& format = format_of(core::profile_formats(), options.format);
    const core::Grouping by = grouping_of(samples, options);

    const core::SymbolTable& symbols = images.symbols();
    core::SourceLocator& locator = images.locator();
    core::Profile profile = attribute_as(samples, images, by, options, format.needs_stacks);
    profile.warnings.insert(profile.warnings.begin(), options.warnings.begin(), options.warnings.end());
    const core::Image& main = images.main();
    if (!main.has_debug_info() && !symbols.functions().empty())
        profile.warnings.push_back(
            {"no-debug-info", main.path() + " has no DWARF (.debug_info): functions come from its symbol table, with no source "
                              "lines, inline chains or task names" +
                                  std::string(profile.unwound && !main.has_call_frames()
                                                  ? "; its stacks were unwound by reading each function's prologue"
                                                  : "")});
    std::optional<core::Profile> lines;
    if (format.needs_lines)
        lines = attribute_as(samples, images, core::Grouping::line, options, format.needs_stacks);

    const core::ReportInput input{profile, lines ? &*lines : nullptr, samples, symbols, &locator,
                                  read_source_file, options.top};
    std::string note;
    write_output(options.output, [&](std::ostream& out) { note = format.write(input, out); });
    if (options.format != "text" || !options.output.empty())   // the text report shows them itself
        for (const core::Warning& warning : options.warnings)
            std::cerr << "mcuprof " << options.command << ": warning: " << warning.message << '\n';
    if (!note.empty())
        std::cerr << "mcuprof " << options.command << ": " << (options.output.empty() ? "" : options.output + ": ") << note << '\n';
}

} // namespace mcuprof::cli
