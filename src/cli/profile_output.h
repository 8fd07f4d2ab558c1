#pragma once
// What the commands that print a profile share: the report options, how the profile is
// built from a sample set, and where and in which format (core/report.h's tables) it goes.
#include <functional>
#include <iosfwd>
#include <span>
#include <string>

#include <boost/program_options.hpp>

#include "mcuprof/core/profile.h"
#include "mcuprof/core/report.h"
#include "mcuprof/core/samples.h"
#include "commands.h"

namespace mcuprof::cli {

struct ReportOptions {
    std::string input;
    std::string elf;
    std::string by = "function";
    std::string format = "text";
    std::string output;        // empty: standard output
    bool inline_frames = false;
    size_t top = 0;            // text rows shown; 0: all
};

// Adds --elf, --by, --format, -o, --inline and --top, bound to `options`. --format's help
// lists `formats`: the profile formats unless the command writes something else (diff).
void add_report_options(boost::program_options::options_description& description, ReportOptions& options,
                        const std::string& formats = core::format_help(core::profile_formats()));

// The row of `table` that options.format names; a UsageError listing the table otherwise.
template <typename Format>
const Format& format_of(std::span<const Format> table, const std::string& name, const std::string& context = "")
{
    if (const Format* format = core::find_format(table, name))
        return *format;
    throw UsageError(context + "--format takes " + core::format_names(table) + ", not '" + name + "'");
}

// Checks --by and --elf, then attributes the samples with the ELF's symbols and lines
// (with stacks for the stack formats).
core::Profile build_profile(const core::SampleSet& samples, const ReportOptions& options, const std::string& elf,
                            bool stacks = false);
// Runs `write` on the file at `path`, or on standard output when the path is empty.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

// Attributes the samples with the ELF's symbols (once) and writes the report in options.format.
void write_profile(const core::SampleSet& samples, const ReportOptions& options);

} // namespace mcuprof::cli
