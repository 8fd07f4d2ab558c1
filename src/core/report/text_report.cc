#include <cstdio>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "mcuprof/core/report.h"

namespace mcuprof::core {
namespace {

std::string format(const char* pattern, auto... values)
{
    char text[1024];
    std::snprintf(text, sizeof text, pattern, values...);
    return text;
}

std::string detail_of(const Profile& profile, const Row& row)
{
    std::string detail;
    switch (profile.by) {
    case Grouping::function:
    case Grouping::task:
    case Grouping::stack:
        break;
    case Grouping::line:
        detail = row.function;
        break;
    case Grouping::address:
        detail = row.function;
        if (!row.location.empty())
            detail += " " + row.location;
        for (const std::string& caller : row.inlined_into)
            detail += " (inlined into " + caller + ")";
        break;
    }
    return detail;
}

// A number of a JSON object, or nothing when it is missing or not a number.
std::optional<double> number_of(const nlohmann::json& object, const char* key)
{
    if (!object.is_object())
        return std::nullopt;
    auto it = object.find(key);
    if (it == object.end() || !it->is_number())
        return std::nullopt;
    return it->get<double>();
}

// The chain ends of a recording's summary ("stacks": {"ends": {reason: count}}).
std::optional<Truncation> truncation_of_summary(const nlohmann::json& s)
{
    auto stacks = s.find("stacks");
    if (stacks == s.end() || !stacks->is_object())
        return std::nullopt;
    auto ends = stacks->find("ends");
    if (ends == stacks->end() || !ends->is_object())
        return std::nullopt;
    Truncation truncation;
    for (const auto& [reason, count] : ends->items()) {
        if (!count.is_number())
            continue;
        truncation.unwound += count.get<double>();
        if (reason != describe(UnwindStop::root)) {
            truncation.samples += count.get<double>();
            truncation.by_reason.emplace_back(reason, count.get<double>());
        }
    }
    std::stable_sort(truncation.by_reason.begin(), truncation.by_reason.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return truncation;
}

// The sampler's own figures: duty, halt latency, DWT_PCSR reads.
std::string describe_method(const nlohmann::json& s)
{
    std::string out = format("target running %.1f %% of the time", 100.0 * number_of(s, "run_duty").value_or(0));
    if (auto latency = s.find("halt_latency_us"); latency != s.end()) {
        const auto p50 = number_of(*latency, "p50"), p99 = number_of(*latency, "p99");
        if (p50 && p99)
            out += format(", halt latency p50 %.0f us p99 %.0f us", *p50, *p99);
    }
    if (auto pcsr = s.find("pcsr"); pcsr != s.end()) {
        const auto batch = number_of(*pcsr, "batch"), reads = number_of(*pcsr, "reads"),
                   halted = number_of(*pcsr, "halted_reads");
        const auto trip = pcsr->is_object() ? pcsr->value("round_trip_us", nlohmann::json()) : nlohmann::json();
        const auto p50 = number_of(trip, "p50"), p99 = number_of(trip, "p99");
        if (batch && reads && halted && p50 && p99)
            out += format(", DWT_PCSR read %.0f times per round trip (p50 %.0f us, p99 %.0f us), "
                          "%.0f of %.0f reads 0xFFFFFFFF (core halted, dropped)",
                          *batch, *p50, *p99, *halted, *reads);
    }
    return out;
}

} // namespace

std::string describe_sampler(const nlohmann::json& s)
{
    std::string out = describe_method(s);
    if (auto truncation = truncation_of_summary(s))
        out += "; " + describe_truncation(*truncation);
    return out;
}

std::string describe_truncation(const Truncation& truncation)
{
    std::string line = format("stacks: %.0f of %.0f chains truncated (%.2f %% of the samples)", truncation.samples,
                              truncation.unwound, truncation.percent());
    std::string reasons;
    for (const auto& [reason, samples] : truncation.by_reason)
        reasons += format("%s%.0f %s", reasons.empty() ? "" : ", ", samples, reason.c_str());
    if (!reasons.empty())
        line += ": " + reasons;
    if (truncation.inclusive_lower_bounds())
        line += "; inclusive shares are lower bounds";
    return line;
}

void write_text(const Profile& profile, std::ostream& out, size_t max_rows)
{
    if (!profile.origin.empty())
        out << profile.origin << '\n';
    if (profile.exact)
        out << format("instructions %.0f (exact count), %llu distinct addresses, by %s\n", profile.total,
                      static_cast<unsigned long long>(profile.distinct_addresses),
                      std::string(name_of(profile.by)).c_str());
    else
        out << format("samples %.0f, %llu distinct addresses, by %s\n", profile.total,
                      static_cast<unsigned long long>(profile.distinct_addresses),
                      std::string(name_of(profile.by)).c_str());
    if (profile.sampler.is_object()) {
        const auto& s = profile.sampler;
        out << format("sampler: %.0f samples/s, %s; end: %s\n", s.value("samples_per_second", 0.0),
                      describe_method(s).c_str(), s.value("end", std::string("?")).c_str());
    }
    for (const Warning& w : profile.warnings)
        out << "warning: " << w.message << '\n';
    if (profile.unwound)
        out << describe_truncation(profile.truncation) << '\n';

    const char* count_title = profile.exact ? "instructions" : "samples";
    // With unwound stacks, functions also get their inclusive share: samples anywhere below
    // them. With more than 1 % of the chains cut short, they are lower bounds ("incl >=%").
    const bool inclusive = profile.unwound && profile.by == Grouping::function;
    const bool lower_bounds = profile.truncation.inclusive_lower_bounds();
    out << format("%8s %7s %s%12s  %s\n", "%", "+-se", inclusive ? (lower_bounds ? " incl>=%" : "  incl %") : "",
                  count_title,
                  std::string(name_of(profile.by)).c_str());
    size_t shown = 0;
    for (const Row& row : profile.rows) {
        if (max_rows != 0 && shown++ == max_rows) {
            out << format("  ... %zu more rows\n", profile.rows.size() - max_rows);
            break;
        }
        std::string detail = detail_of(profile, row);
        const std::string incl = inclusive ? format("%8.2f", row.inclusive.percent) : "";
        out << format("%8.2f %7.2f %s%12.1f  %s%s%s\n", row.share.percent, row.share.stderr_pp, incl.c_str(),
                      row.samples, row.name.c_str(), detail.empty() ? "" : "  ", detail.c_str());
    }
}

} // namespace mcuprof::core
