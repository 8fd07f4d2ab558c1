#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "mcuprof/report/report.h"
#include "mcuprof/profile/json_numbers.h"

namespace mcuprof::core {
namespace {

double percent_value(double percent) { return json_numbers::percent(percent); }
nlohmann::json count_value(double count) { return json_numbers::count(count); }

nlohmann::json rows_json(const std::vector<Row>& profile_rows)
{
    nlohmann::json rows = nlohmann::json::array();
    for (const Row& row : profile_rows) {
        nlohmann::json r = {
            {"name", row.name},
            {"samples", count_value(row.samples)},
            {"percent", percent_value(row.share.percent)},
            {"stderr", percent_value(row.share.stderr_pp)},
            {"ci95", {percent_value(row.share.low), percent_value(row.share.high)}},
            {"inclusive_samples", count_value(row.inclusive_samples)},
            {"inclusive_percent", percent_value(row.inclusive.percent)},
            {"distinct_addresses", row.distinct_addresses},
        };
        if (row.address)
            r["address"] = *row.address;
        if (row.size != 0)
            r["size"] = row.size;
        if (!row.symbol.empty())
            r["symbol"] = row.symbol;   // the function as its ELF symbol spells it (mangled)
        if (!row.function.empty())
            r["function"] = row.function;
        if (!row.location.empty())
            r["location"] = row.location;
        if (!row.inlined_into.empty())
            r["inlined_into"] = row.inlined_into;
        rows.push_back(std::move(r));
    }
    return rows;
}

// How the standard errors were computed (docs/formats.md): the whole profile's, or a core's own.
nlohmann::json errors_json(const ErrorModel& errors, bool exact)
{
    return {{"method", exact                 ? "none"
                       : errors.bursts == 0  ? "binomial"
                       : errors.batches      ? "batches"
                                             : "bursts"},
            {"bursts", errors.batches ? 0 : errors.bursts},
            {"batches", errors.batches ? errors.bursts : 0},
            {"largest_ratio", std::round(errors.largest_ratio * 1000) / 1000},
            {"lower_bounds", errors.lower_bounds}};
}

nlohmann::json warnings_json(const std::vector<Warning>& profile_warnings)
{
    nlohmann::json warnings = nlohmann::json::array();
    for (const Warning& w : profile_warnings)
        warnings.push_back({{"kind", w.kind}, {"message", w.message}});
    return warnings;
}

nlohmann::json lockstep_json(const LockstepFinding& l)
{
    return {{"period", l.period},
            {"distinct", l.distinct},
            {"samples", l.samples},
            {"match_fraction", l.match_fraction},
            {"chance_fraction", l.chance_fraction}};
}

nlohmann::json stack_json(const StackRow& stack)
{
    nlohmann::json frames = nlohmann::json::array();
    for (const StackFrame& f : stack.frames) {
        nlohmann::json frame = {{"function", f.function}, {"address", f.address}};
        if (!f.file.empty())
            frame["location"] = f.file + ":" + std::to_string(f.line);
        frames.push_back(std::move(frame));
    }
    nlohmann::json row = {{"frames", frames}, {"samples", count_value(stack.samples)}, {"truncated", stack.truncated}};
    if (!stack.core.empty())
        row["core"] = stack.core;
    return row;
}

nlohmann::json stacks_json(const std::vector<StackRow>& profile_stacks)
{
    nlohmann::json stacks = nlohmann::json::array();
    for (const StackRow& stack : profile_stacks)
        stacks.push_back(stack_json(stack));
    return stacks;
}

nlohmann::json truncation_json(const Profile& profile)
{
    nlohmann::json reasons = nlohmann::json::object();
    for (const auto& [reason, samples] : profile.truncation.by_reason)
        reasons[reason] = count_value(samples);
    return {{"samples", count_value(profile.truncation.samples)},
            {"unwound_samples", count_value(profile.truncation.unwound)},
            {"percent", percent_value(profile.truncation.percent())},
            {"by_reason", reasons},
            {"inclusive_lower_bounds", profile.truncation.inclusive_lower_bounds()}};
}

nlohmann::json cpu_load_json(const CpuLoad& l)
{
    return {{"percent", percent_value(l.busy.percent)},
            {"stderr", percent_value(l.busy.stderr_pp)},
            {"sleep_samples", count_value(l.sleep_samples)},
            {"sleep_percent", percent_value(l.sleep.percent)},
            {"sleep_stderr", percent_value(l.sleep.stderr_pp)},
            {"idle_task_samples", count_value(l.idle_task_samples)}};
}

nlohmann::json preempted_json(const Profile& profile)
{
    nlohmann::json preempted = nlohmann::json::object();
    for (const auto& [row, what] : profile.preempted) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& [name, samples] : what)
            list.push_back({{"name", name}, {"samples", count_value(samples)}});
        preempted[row] = std::move(list);
    }
    return preempted;
}

// A multi-core chip: each core's own rows, shares of its own samples.
nlohmann::json cores_json(const Profile& profile)
{
    nlohmann::json cores = nlohmann::json::array();
    for (const CoreProfile& core : profile.cores)
        cores.push_back({{"core", core.core},
                         {"name", core.name},
                         {"samples", count_value(core.total)},
                         {"errors", errors_json(core.errors, profile.exact)},
                         {"functions", rows_json(core.rows)}});
    return cores;
}

nlohmann::json core_stops_json(const CoreStopFigures& c)
{
    nlohmann::json stops = {{"how", c.how}, {"simultaneous", c.simultaneous}, {"halts", c.halts}};
    if (c.halts > 0) {
        stops["at_least_us"] = to_json(c.at_least_us);
        stops["at_most_us"] = to_json(c.at_most_us);
    }
    return stops;
}

} // namespace

nlohmann::json to_json(const Profile& profile)
{
    nlohmann::json rows = rows_json(profile.rows);
    nlohmann::json doc = {
        {"format", "mcuprof-profile"},
        {"version", 1},
        {"origin", profile.origin},
        {"by", grouping_name(profile)},
        {"exact", profile.exact},
        {"samples", count_value(profile.total)},
        {"unattributed", count_value(profile.unattributed)},
        {"distinct_addresses", profile.distinct_addresses},
        {"warnings", warnings_json(profile.warnings)},
        {"errors", errors_json(profile.errors, profile.exact)},
    };
    if (profile.lockstep)
        doc["lockstep"] = lockstep_json(*profile.lockstep);
    if (profile.sampler)
        doc["sampler"] = to_json(*profile.sampler);
    if (profile.unwound) {
        doc["stacks"] = stacks_json(profile.stacks);
        doc["truncation"] = truncation_json(profile);
    }
    if (profile.load)
        doc["cpu_load"] = cpu_load_json(*profile.load);
    doc["sleep_counted"] = !profile.sleep_not_counted;
    if (!profile.preempted.empty())
        doc["preempted"] = preempted_json(profile);
    // "functions" is the documented name of the row list whatever the grouping, so a
    // consumer reads one key; "rows" would only repeat it.
    doc["functions"] = std::move(rows);
    if (!profile.cores.empty())
        doc["cores"] = cores_json(profile);
    if (profile.core_stops)
        doc["core_stops"] = core_stops_json(*profile.core_stops);
    return doc;
}

} // namespace mcuprof::core
