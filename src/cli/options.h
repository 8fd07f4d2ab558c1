#pragma once
// The one command-line parser every command uses (Boost.Program_options underneath), and
// what the commands share in reading option values. The report options and the writing
// of a profile are in profile_output.h.
#include <charconv>
#include <chrono>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "commands.h"
#include "mcuprof/link/tcp_connection.h"
#include "mcuprof/sampler/openocd_launch.h"
#include "interrupt.h"

namespace mcuprof::cli {

// A command's options, positionals and rules, checked all at once before the command does
// anything: a mistake is a UsageError (exit 1) before a file is read or a link touched.
//
//     CommandLine line("record", usage);
//     line.options()("elf", po::value(&elf)->value_name("FILE"), "...");
//     if (!line.parse(args)) return 0;   // --help was shown
//     line.require("elf", "the ELF of the firmware that runs");
class CommandLine {
public:
    // `usage`: the "usage:" lines and a paragraph, each line at most 80 columns.
    CommandLine(std::string command, std::string usage);

    boost::program_options::options_description_easy_init options() { return description_.add_options(); }
    boost::program_options::options_description& description() { return description_; }
    // The words that are not options, into `values`: between `min` and `max` of them, what
    // `what` names ("an INPUT file", "two inputs, A and B").
    void positionals(std::vector<std::string>& values, size_t min, size_t max, std::string what);

    // Parses and checks the positionals' count. Returns false when --help was asked (the
    // help is then printed, 80 columns wide). A mistyped option is a UsageError that
    // names the nearest known one.
    bool parse(const Arguments& args);

    // On the command line, not a default.
    bool given(const std::string& option) const;
    // --OPTION must be given; `what` says what it names.
    void require(const std::string& option, const std::string& what) const;
    // Exactly one of the options.
    void require_one_of(std::initializer_list<std::string> options) const;
    // Not two of the options together.
    void exclusive(std::initializer_list<std::string> options) const;
    // Each option given is a usage error unless `applies`: "--OPTION goes with `with`". No
    // option given is silently dropped.
    void only_with(const std::vector<std::string>& options, bool applies, const std::string& with) const;
    // Each option given is a usage error when `excluded`: "--OPTION does not go with `what`".
    void not_with(const std::vector<std::string>& options, bool excluded, const std::string& what) const;

    const std::string& command() const { return command_; }

private:
    std::string command_;
    std::string usage_;
    boost::program_options::options_description description_;
    boost::program_options::variables_map values_;
    std::vector<std::string>* positionals_ = nullptr;
    size_t min_positionals_ = 0;
    size_t max_positionals_ = 0;
    std::string positionals_what_;
};

// The candidate nearest to `word` by edit distance, when it is near enough to be a typo
// of it (at most a third of its letters wrong); "" otherwise.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

// --openocd HOST[:PORT]: OpenOCD's Tcl RPC port, 6666 (OpenOCD's default tcl_port) when no
// port is given. Anything else is a usage error.
transport::Endpoint openocd_endpoint(const std::string& text);

// --chip NAME --probe PROBE: the OpenOCD mcuprof starts (docs/boards.md), every value checked:
// NAME a target script the installed OpenOCD has, PROBE stlink, cmsis-dap, jlink or
// stlink-server[:HOST][:PORT] on this machine. Throws UsageError.
sources::OpenocdLaunch openocd_launch_of(const std::string& chip, const std::string& probe);
// HOST[:PORT] of a server `option` names, `default_port` for a bare host; `what` begins the
// default's words in the usage error ("the ", "an stlink-server, ").
transport::Endpoint server_endpoint(const std::string& text, const std::string& option, uint16_t default_port,
                                    const std::string& what);

// An option's value read as a whole number, 0 or more, into `target`: Boost would read
// "-3" into an unsigned type as a huge number.
template <typename Unsigned>
boost::program_options::typed_value<std::string>* whole_number(Unsigned& target, const std::string& option)
{
    return boost::program_options::value<std::string>()->notifier([&target, option](const std::string& text) {
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (!digits)
            throw UsageError("--" + option + " takes a whole number, 0 or more, not '" + text + "'");
        Unsigned value = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size())
            throw UsageError("--" + option + " takes a whole number up to " +
                             std::to_string(std::numeric_limits<Unsigned>::max()) + ", not " + text);
        target = value;
    });
}

// "100us", "2ms", "0.5s", "3min" (ns, us, ms, s, min); throws UsageError naming the option.
std::chrono::nanoseconds parse_duration(const std::string& text, const std::string& option);
// "20000", "20k", "1.5M": a positive count.
double parse_count(const std::string& text, const std::string& option);

} // namespace mcuprof::cli
