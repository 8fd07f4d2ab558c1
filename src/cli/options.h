#pragma once
// What the commands that print a profile share: their options, how the profile is
// built from a sample set, and where and how it is written.
#include <atomic>
#include <chrono>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include <boost/program_options.hpp>

#include "mcuprof/core/profile.h"
#include "mcuprof/core/samples.h"
#include "commands.h"
#include "interrupt.h"

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

// Adds --elf, --by, --format, -o, --inline and --top, bound to `options`.
void add_report_options(boost::program_options::options_description& description, ReportOptions& options);

// Parses args against the description with INPUT as the one positional argument.
// Returns false when --help was asked (the help is then printed).
bool parse_command(const Arguments& args, const std::string& usage,
                   const boost::program_options::options_description& description, std::string& input);

// "100us", "2ms", "0.5s", "3min" (ns, us, ms, s, min); throws UsageError naming the option.
std::chrono::nanoseconds parse_duration(const std::string& text, const std::string& option);
// "20000", "20k", "1.5M": a positive count.
double parse_count(const std::string& text, const std::string& option);

// Checks --by and --format, then attributes the samples with the ELF's symbols and lines.
core::Profile build_profile(const core::SampleSet& samples, const ReportOptions& options, const std::string& elf);
// Runs `write` on the file at `path`, or on standard output when the path is empty.
void write_output(const std::string& path, const std::function<void(std::ostream&)>& write);

// Attributes the samples with the ELF's symbols and writes the report as asked.
void write_profile(const core::SampleSet& samples, const ReportOptions& options);

} // namespace mcuprof::cli
