#pragma once
// What the commands share in parsing their arguments. The report options and the
// writing of a profile are in profile_output.h.
#include <atomic>
#include <chrono>
#include <string>

#include <boost/program_options.hpp>

#include "commands.h"
#include "interrupt.h"

namespace mcuprof::cli {

// Parses args against the description with INPUT as the one positional argument.
// Returns false when --help was asked (the help is then printed).
bool parse_command(const Arguments& args, const std::string& usage,
                   const boost::program_options::options_description& description, std::string& input);

// "100us", "2ms", "0.5s", "3min" (ns, us, ms, s, min); throws UsageError naming the option.
std::chrono::nanoseconds parse_duration(const std::string& text, const std::string& option);
// "20000", "20k", "1.5M": a positive count.
double parse_count(const std::string& text, const std::string& option);

} // namespace mcuprof::cli
