#include "mcuprof/profile/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/stats.h"
#include "mcuprof/profile/json_numbers.h"
#include "mcuprof/profile/text_table.h"

namespace mcuprof::core {
namespace {

// How much larger than the binomial one each row's variance is in a profile whose reads came
// in correlated bursts (Profile::errors): the row's standard error over the binomial one,
// squared, its design effect. A row the profile does not have gets the profile's largest;
// every row of a profile of independent samples 1.
class DesignEffects {
public:
    explicit DesignEffects(const Profile& p)
        : largest_(p.errors.bursts > 0 ? p.errors.largest_ratio * p.errors.largest_ratio : 1.0)
    {
        if (p.errors.bursts == 0)
            return;
        for (const Row& r : p.rows) {
            const double binomial = share_of(r.samples, p.total, false).stderr_pp;
            const double ratio = binomial > 0 ? r.share.stderr_pp / binomial : p.errors.largest_ratio;
            double& d = by_name_[r.name];
            d = std::max(d, ratio * ratio);
        }
    }
    double of(const std::string& name) const
    {
        auto it = by_name_.find(name);
        return it != by_name_.end() ? it->second : largest_;
    }

private:
    std::map<std::string, double> by_name_;
    double largest_;
};

} // namespace

ProfileDiff diff_profiles(const Profile& a, const Profile& b, double threshold, const SymbolTable* code)
{
    ProfileDiff d;
    d.a_origin = a.origin;
    d.b_origin = b.origin;
    d.a_total = a.total;
    d.b_total = b.total;
    d.a_exact = a.exact;
    d.b_exact = b.exact;
    d.threshold = threshold;
    d.a_instructions = a.run_instructions;
    d.b_instructions = b.run_instructions;
    d.a_lower_bounds = !a.exact && a.errors.lower_bounds;
    d.b_lower_bounds = !b.exact && b.errors.lower_bounds;

    std::map<std::string, DiffRow> rows;
    auto row_for = [&rows](const Row& r) -> DiffRow& {
        DiffRow& row = rows[r.name];
        row.name = r.name;
        if (row.function.empty())
            row.function = r.function.empty() ? r.name : r.function;
        return row;
    };
    for (const Row& r : a.rows) {
        DiffRow& row = row_for(r);
        row.a_samples += r.samples;
        row.a_distinct += r.distinct_addresses;
    }
    for (const Row& r : b.rows) {
        DiffRow& row = row_for(r);
        row.b_samples += r.samples;
        row.b_distinct += r.distinct_addresses;
    }
    const DesignEffects design_a(a), design_b(b);
    for (auto& [name, row] : rows) {
        const double pa = a.total > 0 ? row.a_samples / a.total : 0;
        const double pb = b.total > 0 ? row.b_samples / b.total : 0;
        row.a_percent = 100 * pa;
        row.b_percent = 100 * pb;
        row.delta_pp = 100 * (pb - pa);
        double variance = 0;
        if (!a.exact && !b.exact) {
            const double p = (row.a_samples + row.b_samples) / (a.total + b.total);
            variance = p * (1 - p) * (design_a.of(name) / a.total + design_b.of(name) / b.total);
        } else if (a.exact && !b.exact) {
            variance = pa * (1 - pa) * design_b.of(name) / b.total;
        } else if (!a.exact && b.exact) {
            variance = pb * (1 - pb) * design_a.of(name) / a.total;
        }
        if (variance > 0)
            row.z = (pb - pa) / std::sqrt(variance);
        else if (pa != pb)   // two censuses, or a share of exactly 0 or 1 that moved: certain
            row.z = pb > pa ? INFINITY : -INFINITY;
        // A z whose error is too small is too large: it tells nothing against the threshold.
        row.z_upper_bound = d.a_lower_bounds || d.b_lower_bounds;
        row.flagged = std::fabs(row.z) > threshold && !row.z_upper_bound;
        d.rows.push_back(row);
    }
    std::sort(d.rows.begin(), d.rows.end(), [](const DiffRow& x, const DiffRow& y) {
        const double mx = std::max(x.a_percent, x.b_percent);
        const double my = std::max(y.a_percent, y.b_percent);
        return mx != my ? mx > my : x.name < y.name;
    });
    d.hints = find_hints(d, a, b, code);
    return d;
}

std::optional<double> total_ratio(const ProfileDiff& diff)
{
    if (!diff.a_instructions || !diff.b_instructions || *diff.a_instructions == 0)
        return std::nullopt;
    return double(*diff.b_instructions) / double(*diff.a_instructions);
}

bool total_grew(const ProfileDiff& diff, double percent)
{
    if (!total_ratio(diff))
        return false;
    // On the counts, not the ratio: 1100 over 1000 is 10 % more, not 10.000000000000009 %.
    const double a = double(*diff.a_instructions), b = double(*diff.b_instructions);
    return (b - a) * 100 > percent * a;
}

std::string flagged_summary(const ProfileDiff& diff)
{
    const size_t flagged =
        size_t(std::count_if(diff.rows.begin(), diff.rows.end(), [](const DiffRow& r) { return r.flagged; }));
    char text[256];
    if (both_exact(diff))
        std::snprintf(text, sizeof text, "%zu of %zu rows moved; both sides are exact counts, so every move is real",
                      flagged, diff.rows.size());
    else
        std::snprintf(text, sizeof text, "%zu of %zu rows differ by more than %g standard errors", flagged,
                      diff.rows.size(), diff.threshold);
    std::string summary = text;
    if (diff.a_lower_bounds || diff.b_lower_bounds)
        summary += std::string("; ") +
                   (diff.a_lower_bounds && diff.b_lower_bounds ? "both sides'" : diff.a_lower_bounds ? "A's" : "B's") +
                   " standard errors are lower bounds (back-to-back PCSR reads without bursts, as in OpenOCD's "
                   "gmon.out), so every z is an upper bound (marked ^) and flags nothing";
    return summary;
}

std::string totals_summary(const ProfileDiff& diff)
{
    const std::optional<double> ratio = total_ratio(diff);
    if (!ratio)
        return "";
    char text[256];
    std::snprintf(text, sizeof text, "instructions of the whole run: A %llu, B %llu, B/A %.3f (%+.2f %%)",
                  static_cast<unsigned long long>(*diff.a_instructions),
                  static_cast<unsigned long long>(*diff.b_instructions), *ratio, 100 * (*ratio - 1));
    return text;
}

std::string z_text(double z)
{
    if (!std::isfinite(z))
        return z > 0 ? "+inf" : "-inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", z);
    return text;
}

void write_text(const ProfileDiff& diff, std::ostream& out, size_t max_rows)
{
    out << printf_string("A: %s (%.0f %s)\nB: %s (%.0f %s)\n", diff.a_origin.c_str(), diff.a_total,
                         diff.a_exact ? "instructions" : "samples", diff.b_origin.c_str(), diff.b_total,
                         diff.b_exact ? "instructions" : "samples");
    if (const std::string totals = totals_summary(diff); !totals.empty())
        out << totals << '\n';
    out << flagged_summary(diff) << " (marked *)\n";
    out << printf_string("%8s %8s %8s %7s  %s\n", "A %", "B %", "B-A pp", "z", "name");
    size_t shown = 0;
    for (const DiffRow& r : diff.rows) {
        if (max_rows != 0 && shown++ == max_rows) {
            out << printf_string("  ... %zu more rows\n", diff.rows.size() - max_rows);
            break;
        }
        text_table::write_row(out, printf_string("%8.2f %8.2f %+8.2f %7s %s", r.a_percent, r.b_percent, r.delta_pp,
                                                 z_text(r.z).c_str(), r.flagged ? "* " : r.z_upper_bound ? "^ " : "  "),
                              r.name);
    }
    for (const DiffHint& h : diff.hints)
        out << "hint: " << h.message << '\n';
}

nlohmann::json to_json(const ProfileDiff& diff)
{
    nlohmann::json rows = nlohmann::json::array();
    for (const DiffRow& r : diff.rows) {
        rows.push_back({{"name", r.name},
                        {"a_samples", json_numbers::count(r.a_samples)},
                        {"b_samples", json_numbers::count(r.b_samples)},
                        {"a_percent", json_numbers::percent(r.a_percent)},
                        {"b_percent", json_numbers::percent(r.b_percent)},
                        {"delta_pp", json_numbers::percent(r.delta_pp)},
                        {"z", json_numbers::statistic(r.z)},
                        {"z_upper_bound", r.z_upper_bound},
                        {"flagged", r.flagged}});
    }
    nlohmann::json hints = nlohmann::json::array();
    for (const DiffHint& h : diff.hints)
        hints.push_back({{"kind", h.kind}, {"function", h.function}, {"message", h.message}});
    auto side = [](const std::string& origin, double total, bool exact, std::optional<uint64_t> instructions,
                   bool lower_bounds) {
        nlohmann::json s = {{"origin", origin}, {"samples", json_numbers::count(total)}, {"exact", exact},
                            {"errors_lower_bounds", lower_bounds}};
        s["run_instructions"] = instructions ? nlohmann::json(*instructions) : nlohmann::json(nullptr);
        return s;
    };
    const std::optional<double> ratio = total_ratio(diff);
    return {{"format", "mcuprof-diff"},
            {"version", 1},
            {"a", side(diff.a_origin, diff.a_total, diff.a_exact, diff.a_instructions, diff.a_lower_bounds)},
            {"b", side(diff.b_origin, diff.b_total, diff.b_exact, diff.b_instructions, diff.b_lower_bounds)},
            {"threshold", diff.threshold},
            {"both_exact", both_exact(diff)},
            {"total_ratio", ratio ? nlohmann::json(std::round(*ratio * 1e6) / 1e6) : nlohmann::json(nullptr)},
            {"rows", rows},
            {"hints", hints}};
}

} // namespace mcuprof::core
