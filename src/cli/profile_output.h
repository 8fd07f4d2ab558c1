#pragma once
// What the commands that print a profile share: the report options, how the profile is
// built from a sample set, and where and in which format (core/report.h's tables) it goes.
#include <functional>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

#include "mcuprof/image/image_set.h"
#include "mcuprof/profile/profile.h"
#include "mcuprof/report/report.h"
#include "mcuprof/profile/samples.h"
#include "mcuprof/inputs/recording.h"
#include "commands.h"
#include "options.h"

namespace mcuprof::cli {

struct ReportOptions {
    std::string command;       // the command, for its lines on standard error (add_report_options sets it)
    std::string input;
    // --elf, once for each image the target runs: the main image first (the one it boots),
    // then the others (a bootloader's application, a SoftDevice's), each at its own addresses.
    std::vector<std::string> elves;
    std::string by = "function";
    std::string format = "text";
    std::string output;        // empty: standard output
    bool inline_frames = false;
    size_t top = 0;            // text rows shown; 0: all
    bool strict = false;       // an ELF that is not the recorded one is an error, not a warning
    std::vector<core::Warning> warnings;   // added to the profile's (an ELF that is not the recorded one)
};

// What a command's report options accept, for its help and its checks: each command
// lists only the formats and groupings it takes.
struct ReportChoices {
    std::string formats = core::format_help(core::profile_formats());   // --format's help
    std::vector<std::string> groupings{"function", "line", "address", "task", "stack", "core", "var:NAME", "exception"};
    std::string elf_help = "firmware ELF that produced the samples";
    // -o names the report. Not in record and top, where -o names the samples file and the
    // report goes to standard output.
    bool output = true;
    // --format names that show only --top rows.
    std::vector<std::string> top_formats{"text"};
};

// --format's help for a command whose report goes to standard output (record): the
// profile formats that are not binary.
std::string standard_output_format_help();
// Their names: "text, json, ... or firefox".
std::string standard_output_format_names();

// Adds --elf, --by, --format, -o, --inline and --top, bound to `options`.
void add_report_options(CommandLine& line, ReportOptions& options, const ReportChoices& choices = {});
// --elf FILE, given once for each image the target runs, into `elves` in the order given.
void add_elf_option(CommandLine& line, std::vector<std::string>& elves, const std::string& help);
// "--elf boot.elf --elf app.elf": the images as a command line names them, for messages.
std::string elf_arguments(const std::vector<std::string>& elves);

// Checks what add_report_options read, before any input is read or link touched: --by one
// of the groupings, --top only where the format shows it, a binary format only into a file.
// `format_is_binary` comes from the command's format table (format_of).
void check_report_options(const CommandLine& line, const ReportOptions& options, const ReportChoices& choices,
                          bool format_is_binary = false);

// The images of --elf; what they leave in doubt together joins the report's warnings.
core::ImageSet open_images(ReportOptions& options);
// Settles options.elves for an input whose samples file names its firmware: --elf when given,
// else the recorded images when still there; opens them (open_images). An image whose
// identity is not the recorded one at its place gives a warning naming both (in
// options.warnings), or with --strict an error.
core::ImageSet check_recorded_images(ReportOptions& options, const sources::RecordedFirmware& recorded);
// Its two steps, for a command that may have the images open already (diff): options.elves
// settled, then the identity of each image compared with the one recorded at its place.
void settle_recorded_elves(ReportOptions& options, const sources::RecordedFirmware& recorded);
void check_recorded_identity(ReportOptions& options, const sources::RecordedFirmware& recorded,
                             const core::ImageSet& images);

// Opens `path` for writing and closes it again (removing it if it was not there), so that
// a file that cannot be written is an error before any sampling starts.
void check_writable(const std::string& path);

// The row of `table` that options.format names; a UsageError listing the table otherwise.
// (`context` is a view: a temporary std::string there would have GCC 14 take the returned
// row, which lives in the static table, for a dangling reference.)
template <typename Format>
const Format& format_of(std::span<const Format> table, const std::string& name, std::string_view context = {})
{
    if (const Format* format = core::find_format(table, name))
        return *format;
    throw UsageError(std::string(context) + "--format takes " + core::format_names(table) + ", not '" + name + "'");
}

// Checks --by and --elf, then attributes the samples with the ELF's symbols and lines
// (with stacks for the stack formats).
core::Profile build_profile(const core::SampleSet& samples, const ReportOptions& options,
                            const core::ImageSet& images, bool stacks = false);
// Runs `write` on the file at `path`, or on standard output when the path is empty.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

// Attributes the samples with the images' symbols and writes the report in options.format.
void write_profile(const core::SampleSet& samples, const ReportOptions& options, const core::ImageSet& images);

} // namespace mcuprof::cli
