#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "mcuprof/report/report.h"
#include "mcuprof/profile/text_table.h"

namespace mcuprof::core {
namespace {

std::string detail_of(const Profile& profile, const Row& row)
{
    std::string detail;
    switch (profile.by) {
    case Grouping::function:
    case Grouping::task:
    case Grouping::value:
    case Grouping::stack:
    case Grouping::core:
    case Grouping::exception:
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

// The chain ends of a sampler's figures.
std::optional<Truncation> truncation_of(const SamplerFigures& s)
{
    if (!s.stacks)
        return std::nullopt;
    Truncation truncation;
    for (const auto& [reason, count] : s.stacks->ends) {
        truncation.unwound += double(count);
        if (reason != describe(UnwindStop::root) && reason != describe(UnwindStop::secure_caller)) {
            truncation.samples += double(count);
            truncation.by_reason.emplace_back(reason, double(count));
        }
    }
    std::stable_sort(truncation.by_reason.begin(), truncation.by_reason.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    return truncation;
}

// The sampler's own figures: duty, halt latency, DWT_PCSR reads.
std::string describe_method(const SamplerFigures& s)
{
    std::string out = printf_string("target running %.1f %% of the time", 100.0 * s.run_duty);
    if (s.halt_budget)
        out += printf_string(" (halted %.1f %%, budget %.1f %%)", 100.0 * s.halted_share(), 100.0 * s.halt_budget->max_halted);
    if (s.halt_latency_us)
        out += printf_string(", halt latency p50 %.0f us p99 %.0f us", s.halt_latency_us->p50, s.halt_latency_us->p99);
    if (s.swo)
        out += printf_string(", the DWT's PC sample every %u cycles of %.0f Hz over SWO at %.0f Hz", s.swo->period_cycles,
                             s.swo->cpu_hz, s.swo->swo_hz);
    if (s.probe_commands)
        out += printf_string(", %.2f USB commands a sample", s.probe_commands->per_sample);
    if (s.pcsr) {
        out += printf_string(", DWT_PCSR read %llu times per round trip (p50 %.0f us, p99 %.0f us), ",
                             static_cast<unsigned long long>(s.pcsr->batch), s.pcsr->round_trip_us.p50,
                             s.pcsr->round_trip_us.p99);
        if (s.pcsr->unused_reads)
            out += printf_string("%llu of %llu reads unused (outside the profile window or halted, placing it, "
                                 "past the count)",
                                 static_cast<unsigned long long>(*s.pcsr->unused_reads),
                                 static_cast<unsigned long long>(s.pcsr->reads));
        else
            out += printf_string("%llu of %llu reads 0xFFFFFFFF (core halted, dropped)",
                                 static_cast<unsigned long long>(s.pcsr->halted_reads),
                                 static_cast<unsigned long long>(s.pcsr->reads));
    }
    return out;
}

// The grouping of each core's own table: by function where the main rows are the cores.
Grouping core_grouping(const Profile& profile)
{
    return profile.by == Grouping::core ? Grouping::function : profile.by;
}

void write_rows(const Profile& profile, const std::vector<Row>& rows, bool inclusive, std::ostream& out, size_t max_rows)
{
    size_t shown = 0;
    for (const Row& row : rows) {
        if (max_rows != 0 && shown++ == max_rows) {
            out << printf_string("  ... %zu more rows\n", rows.size() - max_rows);
            break;
        }
        std::string detail = detail_of(profile, row);
        const std::string incl = inclusive ? printf_string("%8.2f", row.inclusive.percent) : "";
        // Counts are whole numbers except where samples are weighted (top's decaying view).
        const std::string count = row.samples == std::floor(row.samples) ? printf_string("%12.0f", row.samples)
                                                                          : printf_string("%12.1f", row.samples);
        const std::string numbers =
            printf_string("%8.2f %7.2f %s%s  ", row.share.percent, row.share.stderr_pp, incl.c_str(), count.c_str());
        text_table::write_row(out, numbers, row.name + (detail.empty() ? "" : "  ") + detail);
        if (const std::string preempted = describe_preempted(profile, row.name); !preempted.empty())
            text_table::write_row(out, std::string(numbers.size(), ' '), "  " + preempted);
    }
}

} // namespace

std::string describe_sampler(const SamplerFigures& s)
{
    std::string out = describe_method(s);
    if (auto truncation = truncation_of(s))
        out += "; " + describe_truncation(*truncation);
    return out;
}

namespace {

// A duration in microseconds as people read it: "596 us", "13.2 ms".
std::string duration_us(double us)
{
    return us < 1000 ? printf_string("%.0f us", us) : printf_string("%.1f ms", us / 1000);
}

} // namespace

std::string describe_core_stops(const Profile& profile)
{
    if (!profile.core_stops)
        return {};
    const CoreStopFigures& c = *profile.core_stops;
    if (c.simultaneous)
        return "cores stopped at one instant at every halt, no skew: " + c.how;
    if (c.halts == 0)
        return "the skew between the cores' stops was not measured: " + c.how;
    // The upper bound is what "within" promises; the lower bound says how much of it is sure.
    return printf_string("cores stopped within %s of each other (median of %llu halts), p99 %s, max %s; at least %s apart "
                         "(median): ",
                         duration_us(c.at_most_us.p50).c_str(), static_cast<unsigned long long>(c.halts),
                         duration_us(c.at_most_us.p99).c_str(), duration_us(c.at_most_us.max).c_str(),
                         duration_us(c.at_least_us.p50).c_str()) +
           c.how;
}

std::string describe_errors(const ErrorModel& errors, bool exact)
{
    if (exact)
        return "none: exact counts";
    if (errors.lower_bounds)
        return "binomial, as if each read were taken on its own, but the input holds PCs read back to back (OpenOCD's "
               "profile, DWT_PCSR batches), which are correlated, with no bursts marked to take errors from: the "
               "errors are too small, lower bounds (docs/live.md, \"Error bars of correlated reads\")";
    if (errors.bursts == 0)
        return "binomial: each sample taken on its own";
    const char* clusters = errors.batches ? "batches" : "bursts";
    std::string text =
        errors.batches
            ? printf_string("from the spread between %zu batches of consecutive wall-clock halts (how far the core ran "
                            "between two is up to the link and the host; where it ran little, neighbours repeat each "
                            "other): up to %.1f times the binomial figure",
                            errors.bursts, errors.largest_ratio)
            : printf_string("from the spread between %zu bursts of back-to-back reads (DWT_PCSR batches or "
                            "profile chunks, whose reads are correlated): up to %.1f times the binomial figure",
                            errors.bursts, errors.largest_ratio);
    if (errors.bursts < 20)   // the variance's own error: a chi-square of k - 1 degrees
        text += printf_string("; only %zu %s, so the errors themselves are rough (the 95 %% intervals use Student's t "
                              "of %zu degrees of freedom)",
                              errors.bursts, clusters, errors.bursts - 1);
    return text;
}

std::string describe_errors(const Profile& profile)
{
    return describe_errors(profile.errors, profile.exact);
}

std::string describe_truncation(const Truncation& truncation)
{
    std::string line = printf_string("stacks: %.0f of %.0f chains truncated (%.2f %% of the samples)", truncation.samples,
                                     truncation.unwound, truncation.percent());
    std::string reasons;
    for (const auto& [reason, samples] : truncation.by_reason)
        reasons += printf_string("%s%s: %.0f", reasons.empty() ? "" : ", ", reason.c_str(), samples);   // reason, then count
    if (!reasons.empty())
        line += ": " + reasons;
    if (truncation.inclusive_lower_bounds())
        line += "; inclusive shares are lower bounds";
    return line;
}

std::string describe_load(const Profile& profile)
{
    if (profile.load) {
        const CpuLoad& l = *profile.load;
        std::string line = printf_string("CPU load %.2f %% +-%.2f (asleep %.2f %%", l.busy.percent, l.busy.stderr_pp,
                                         l.sleep.percent);
        if (l.idle_task_samples > 0)
            line += printf_string(", idle task %.2f %%", 100.0 * l.idle_task_samples / profile.total);
        return line + ")";
    }
    if (profile.sleep_not_counted && !profile.exact && profile.total > 0)
        return "CPU load not measured: the samples land on executed instructions (instruction-count pacing), "
               "and a sleeping core executes none";
    return {};
}

std::string describe_preempted(const Profile& profile, const std::string& row)
{
    auto found = profile.preempted.find(row);
    if (found == profile.preempted.end())
        return {};
    double total = 0;
    for (const auto& [name, samples] : found->second)
        total += samples;
    std::string text = "preempted:";
    for (const auto& [name, samples] : found->second)
        text += printf_string("%s %s %.1f %%", text.back() == ':' ? "" : ",", name.c_str(), 100.0 * samples / total);
    return text;
}

void write_text(const Profile& profile, std::ostream& out, size_t max_rows)
{
    if (!profile.origin.empty())
        out << profile.origin << '\n';
    if (profile.exact)
        out << printf_string("instructions %.0f (exact count), %llu distinct addresses, by %s\n", profile.total,
                             static_cast<unsigned long long>(profile.distinct_addresses),
                             grouping_name(profile).c_str());
    else
        out << printf_string("samples %.0f, %llu distinct addresses, by %s\n", profile.total,
                             static_cast<unsigned long long>(profile.distinct_addresses),
                             grouping_name(profile).c_str());
    if (profile.sampler)
        out << printf_string("sampler: %.0f samples/s, %s; end: %s\n", profile.sampler->samples_per_second,
                             describe_method(*profile.sampler).c_str(),
                             profile.sampler->end.empty() ? "?" : profile.sampler->end.c_str());
    if (const std::string stops = describe_core_stops(profile); !stops.empty())
        out << stops << '\n';
    for (const Warning& w : profile.warnings)
        out << "warning: " << w.message << '\n';
    if (profile.unwound)
        out << describe_truncation(profile.truncation) << '\n';
    if (const std::string load = describe_load(profile); !load.empty())
        out << load << '\n';
    if (profile.errors.bursts > 0 || profile.errors.lower_bounds)   // binomial errors go unsaid, as they always did
        out << "standard errors " << describe_errors(profile) << '\n';

    const char* count_title = profile.exact ? "instructions" : "samples";
    // With unwound stacks, functions also get their inclusive share: samples anywhere below
    // them. With more than 1 % of the chains cut short, they are lower bounds ("incl >=%").
    const bool inclusive = profile.unwound && profile.by == Grouping::function;
    const bool lower_bounds = profile.truncation.inclusive_lower_bounds();
    out << printf_string("%8s %7s %s%12s  %s\n", "%", "+-se", inclusive ? (lower_bounds ? " incl>=%" : "  incl %") : "",
                         count_title,
                         grouping_name(profile).c_str());
    write_rows(profile, profile.rows, inclusive, out, max_rows);
    // A multi-core chip: each core's table, its shares of its own samples.
    for (const CoreProfile& core : profile.cores) {
        out << printf_string("\n%s: %s %.0f\n", core.name.c_str(), count_title, core.total);
        if (core.errors.bursts > 0 || core.errors.lower_bounds)   // as the whole profile's line
            out << "standard errors " << describe_errors(core.errors, profile.exact) << '\n';
        out << printf_string("%8s %7s %12s  %s\n", "%", "+-se", count_title, std::string(name_of(core_grouping(profile))).c_str());
        write_rows(profile, core.rows, false, out, max_rows);
    }
}

} // namespace mcuprof::core
