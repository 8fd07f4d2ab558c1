// The groupings' names, as the command line gives them and the reports print them.
#include "mcuprof/profile/profile.h"

namespace mcuprof::core {

std::optional<Grouping> parse_grouping(std::string_view text)
{
    if (text == "function")
        return Grouping::function;
    if (text == "line")
        return Grouping::line;
    if (text == "address")
        return Grouping::address;
    if (text == "task")
        return Grouping::task;
    if (text == "stack")
        return Grouping::stack;
    if (text == "core")
        return Grouping::core;
    if (!variable_of_grouping(text).empty())
        return Grouping::value;
    if (text == "exception")
        return Grouping::exception;
    return std::nullopt;
}

std::string_view variable_of_grouping(std::string_view text)
{
    constexpr std::string_view prefix = "var:";
    return text.substr(0, prefix.size()) == prefix ? text.substr(prefix.size()) : std::string_view();
}

std::string grouping_name(const Profile& profile)
{
    return profile.by == Grouping::value ? "var:" + profile.variable : std::string(name_of(profile.by));
}

std::string_view name_of(Grouping grouping)
{
    switch (grouping) {
    case Grouping::function: return "function";
    case Grouping::line: return "line";
    case Grouping::address: return "address";
    case Grouping::task: return "task";
    case Grouping::stack: return "stack";
    case Grouping::core: return "core";
    case Grouping::value: return "var";
    case Grouping::exception: return "exception";
    }
    return "?";
}

} // namespace mcuprof::core
