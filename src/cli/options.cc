#include "options.h"

#include <cmath>
#include <iostream>

namespace po = boost::program_options;

namespace mcuprof::cli {

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

} // namespace mcuprof::cli
