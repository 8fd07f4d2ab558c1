#include "options.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <cmath>
#include <iostream>
#include <sstream>

#include "mcuprof/link/error.h"

namespace po = boost::program_options;

namespace mcuprof::cli {

namespace {

constexpr unsigned help_columns = 80;

// The help as Boost.Program_options lays it out, without the spaces it leaves at the ends
// of wrapped lines.
std::string without_trailing_spaces(const std::string& text)
{
    std::istringstream in(text);
    std::string out;
    for (std::string line; std::getline(in, line);) {
        line.erase(line.find_last_not_of(' ') + 1);
        out += line + '\n';
    }
    return out;
}

std::string joined(std::initializer_list<std::string> options, const char* last)
{
    std::string text;
    size_t i = 0;
    for (const std::string& option : options) {
        if (i > 0)
            text += i + 1 == options.size() ? last : ", ";
        text += "--" + option;
        ++i;
    }
    return text;
}

} // namespace

CommandLine::CommandLine(std::string command, std::string usage)
    : command_(std::move(command)), usage_(std::move(usage)), description_("Options", help_columns, help_columns / 2)
{
}

void CommandLine::positionals(std::vector<std::string>& values, size_t min, size_t max, std::string what)
{
    positionals_ = &values;
    min_positionals_ = min;
    max_positionals_ = max;
    positionals_what_ = std::move(what);
}

bool CommandLine::parse(const Arguments& args)
{
    po::options_description all(description_);
    std::vector<std::string> words;
    all.add_options()("help,h", "show this help")("positional", po::value(&words));
    po::positional_options_description positional;
    positional.add("positional", -1);
    try {
        po::store(po::command_line_parser(args).options(all).positional(positional).run(), values_);
        if (values_.count("help")) {
            std::ostringstream help;
            help << usage_ << "\n\n" << description_;
            std::cout << without_trailing_spaces(help.str());
            return false;
        }
        po::notify(values_);
    } catch (const po::unknown_option& e) {
        std::vector<std::string> known{"help"};
        for (const auto& option : description_.options())
            known.push_back(option->long_name());
        const std::string typed = e.get_option_name();
        const std::string guess = nearest(typed.substr(typed.find_first_not_of('-')), known);
        throw UsageError(e.what() + (guess.empty() ? "" : "; did you mean --" + guess + "?"));
    } catch (const po::error& e) {
        throw UsageError(e.what());
    }
    if (positionals_ == nullptr && !words.empty())
        throw UsageError(command_ + " takes no positional argument ('" + words.front() + "')");
    if (positionals_ != nullptr) {
        if (words.size() < min_positionals_ || words.size() > max_positionals_)
            throw UsageError(command_ + " needs " + positionals_what_ +
                             (words.size() > max_positionals_ ? ", not also '" + words[max_positionals_] + "'" : ""));
        *positionals_ = words;
    }
    return true;
}

bool CommandLine::given(const std::string& option) const
{
    const auto it = values_.find(option);
    return it != values_.end() && !it->second.defaulted();
}

void CommandLine::require(const std::string& option, const std::string& what) const
{
    if (given(option))
        return;
    // As the help shows it: "-o FILE", "--cpu-hz F".
    const po::option_description& described = description_.find(option, false);
    std::string name = described.canonical_display_name(po::command_line_style::allow_dash_for_short);
    if (name.front() != '-')   // no short name: the long one, bare
        name = "--" + name;
    const std::string value = described.semantic()->name();
    throw UsageError(name + (value.empty() ? "" : " " + value) + " is required: " + what);
}

void CommandLine::require_one_of(std::initializer_list<std::string> options) const
{
    exclusive(options);
    if (std::none_of(options.begin(), options.end(), [&](const std::string& o) { return given(o); }))
        throw UsageError(joined(options, " or ") + " is required");
}

void CommandLine::exclusive(std::initializer_list<std::string> options) const
{
    std::vector<std::string> present;
    for (const std::string& option : options)
        if (given(option))
            present.push_back("--" + option);
    if (present.size() > 1)
        throw UsageError(present[0] + " and " + present[1] + " do not go together (one of " +
                         joined(options, " or ") + ")");
}

void CommandLine::only_with(const std::vector<std::string>& options, bool applies, const std::string& with) const
{
    for (const std::string& option : options)
        if (!applies && given(option))
            throw UsageError("--" + option + " goes with " + with);
}

void CommandLine::not_with(const std::vector<std::string>& options, bool excluded, const std::string& what) const
{
    for (const std::string& option : options)
        if (excluded && given(option))
            throw UsageError("--" + option + " does not go with " + what);
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates)
{
    // Edits from one to the other: insertions, deletions, substitutions and swaps of two
    // neighbours (the optimal string alignment distance).
    auto distance = [](const std::string& a, const std::string& b) {
        std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
        for (size_t i = 0; i <= a.size(); ++i)
            d[i][0] = i;
        for (size_t j = 0; j <= b.size(); ++j)
            d[0][j] = j;
        for (size_t i = 1; i <= a.size(); ++i)
            for (size_t j = 1; j <= b.size(); ++j) {
                d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
                if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                    d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        return d[a.size()][b.size()];
    };
    std::string best;
    size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;
    for (const std::string& candidate : candidates) {
        const size_t d = distance(word, candidate);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
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

transport::Endpoint server_endpoint(const std::string& text, const std::string& option, uint16_t default_port,
                                    const std::string& what)
{
    // A bare host name ("localhost"): not all digits (a bare number is a port) and no colon.
    const bool bare_host = !text.empty() && text.find(':') == std::string::npos &&
                           text.find_first_not_of("0123456789") != std::string::npos;
    const std::string port = std::to_string(default_port);
    try {
        return transport::Endpoint::parse(bare_host ? text + ":" + port : text, option);
    } catch (const transport::Error&) {
        throw UsageError(option + " takes HOST[:PORT] (" + what + "port " + port + " by default), not '" + text + "'");
    }
}

transport::Endpoint openocd_endpoint(const std::string& text)
{
    return server_endpoint(text, "--openocd", 6666, "the ");
}

// --chip NAME: the name of one of OpenOCD's target scripts, target/NAME.cfg.
static std::string chip_name(const std::string& text)
{
    const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    if (!plain)
        throw UsageError("--chip takes the name of one of OpenOCD's target scripts, as stm32f4x for "
                         "target/stm32f4x.cfg, not '" + text + "' (docs/boards.md lists the families)");
    return text;
}

// --probe stlink|cmsis-dap|jlink|stlink-server[:HOST][:PORT].
static sources::OpenocdProbe probe_kind(const std::string& text)
{
    using Kind = sources::OpenocdProbe::Kind;
    sources::OpenocdProbe probe;
    static const std::map<std::string, Kind> usb{{"stlink", Kind::stlink}, {"cmsis-dap", Kind::cmsis_dap},
                                                 {"jlink", Kind::jlink}};
    if (const auto kind = usb.find(text); kind != usb.end()) {
        probe.kind = kind->second;
        return probe;
    }
    const std::string server = "stlink-server";
    if (text.rfind(server, 0) != 0 || (text.size() > server.size() && text[server.size()] != ':'))
        throw UsageError("--probe takes stlink, cmsis-dap, jlink or stlink-server[:HOST][:PORT], not '" + text + "'");
    probe.kind = Kind::stlink_server;
    const std::string rest = text.size() > server.size() ? text.substr(server.size() + 1) : "";
    const transport::Endpoint at = rest.empty() ? transport::Endpoint{"127.0.0.1", 7184}
                                                : server_endpoint(rest, "--probe stlink-server:", 7184, "ST's stlink-server, ");
    // OpenOCD 0.12's st-link TCP backend connects to 127.0.0.1 only (stlink_usb.c, stlink_tcp_open).
    if (at.host != "127.0.0.1" && at.host != "localhost")
        throw UsageError("--probe stlink-server: OpenOCD reaches an stlink-server on this machine only (127.0.0.1), "
                         "not '" + at.host + "'; for a server elsewhere, sample it directly: --stlink " + at.text());
    probe.server_port = at.port;
    return probe;
}

sources::OpenocdLaunch openocd_launch_of(const std::string& chip, const std::string& probe)
{
    sources::OpenocdLaunch launch;
    launch.chip = chip_name(chip);
    launch.probe = probe_kind(probe);
    if (const std::optional<std::string> missing = sources::missing_target_script(launch))
        throw UsageError(*missing);
    return launch;
}

} // namespace mcuprof::cli
