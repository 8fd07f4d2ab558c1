#include <cstdio>
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

} // namespace

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
        const auto latency = s.value("halt_latency_us", nlohmann::json::object());
        out << format("sampler: %.0f samples/s, target running %.1f %% of the time, halt latency p50 %.0f us "
                      "p99 %.0f us; end: %s\n",
                      s.value("samples_per_second", 0.0), 100.0 * s.value("run_duty", 0.0),
                      latency.value("p50", 0.0), latency.value("p99", 0.0), s.value("end", std::string("?")).c_str());
    }
    for (const Warning& w : profile.warnings)
        out << "warning: " << w.message << '\n';

    const char* count_title = profile.exact ? "instructions" : "samples";
    // With unwound stacks, functions also get their inclusive share: samples anywhere below them.
    const bool inclusive = profile.unwound && profile.by == Grouping::function;
    out << format("%8s %7s %s%12s  %s\n", "%", "+-se", inclusive ? "  incl %" : "", count_title,
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
