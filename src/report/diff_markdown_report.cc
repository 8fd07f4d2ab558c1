// diff --format markdown: a summary for a pull request or a CI job (GitHub-flavoured
// Markdown tables), and the gate behind diff --fail-above.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "mcuprof/profile/diff.h"

namespace mcuprof::core {

std::vector<DiffRow> regressions(const ProfileDiff& diff, double fail_above_pp)
{
    std::vector<DiffRow> grown;
    for (const DiffRow& row : diff.rows)
        if (row.delta_pp > fail_above_pp && row.z > diff.threshold && !row.z_upper_bound)   // an upper bound proves nothing
            grown.push_back(row);
    std::stable_sort(grown.begin(), grown.end(),
                     [](const DiffRow& a, const DiffRow& b) { return a.delta_pp > b.delta_pp; });
    return grown;
}

namespace {

// A table cell: '|' would end the cell and a line break the row.
std::string cell(const std::string& text)
{
    std::string out;
    for (char c : text) {
        if (c == '|')
            out += "\\|";
        else if (c == '\n' || c == '\r')
            out += ' ';
        else
            out += c;
    }
    return out;
}

std::string number(const char* format, double value)
{
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

std::string side(const std::string& origin, double total, bool exact)
{
    return cell(origin) + " (" + number("%.0f", total) + (exact ? " instructions)" : " samples)");
}

} // namespace

void write_markdown(const ProfileDiff& diff, std::ostream& out, std::optional<double> fail_above_pp,
                    std::optional<double> fail_total_above_percent, size_t max_rows)
{
    const std::string z_rule = both_exact(diff) ? "as exact counts"
                                                : "beyond " + number("%g", diff.threshold) + " standard errors";
    // The verdict: one clause per gate asked, failed when any failed.
    std::vector<std::string> clauses;
    bool failed = false;
    if (fail_above_pp) {
        const std::vector<DiffRow> grown = regressions(diff, *fail_above_pp);
        const std::string gate = "more than " + number("%g", *fail_above_pp) + " pp and " + z_rule;
        std::string names;
        for (const DiffRow& row : grown)
            names += (names.empty() ? "`" : ", `") + cell(row.name) + "` (" + number("%+.2f", row.delta_pp) + " pp)";
        failed |= !grown.empty();
        clauses.push_back(grown.empty() ? "no function grew by " + gate
                                        : std::to_string(grown.size()) +
                                              (grown.size() == 1 ? " function" : " functions") + " grew by " + gate +
                                              ": " + names);
    }
    if (fail_total_above_percent) {
        const std::optional<double> ratio = total_ratio(diff);
        const std::string change = ratio ? number("%+.2f", 100 * (*ratio - 1)) + " %" : "an unknown amount";
        const bool grew = total_grew(diff, *fail_total_above_percent);
        failed |= grew;
        clauses.push_back("the run's instructions changed by " + change + (grew ? ", more than " : ", not more than ") +
                          number("%g", *fail_total_above_percent) + " %");
    }
    if (!clauses.empty()) {
        out << "### mcuprof: " << (failed ? "failed" : "passed");
        for (const std::string& clause : clauses)
            out << (&clause == &clauses.front() ? ", " : "; ") << clause;
        out << "\n\n";
    }
    out << "- A: " << side(diff.a_origin, diff.a_total, diff.a_exact) << "\n"
        << "- B: " << side(diff.b_origin, diff.b_total, diff.b_exact) << "\n";
    if (const std::string totals = totals_summary(diff); !totals.empty())
        out << "- " << totals << "\n";
    if (diff.a_lower_bounds || diff.b_lower_bounds)
        out << "- " << flagged_summary(diff) << "\n";
    out << "\n";

    std::vector<const DiffRow*> shown;
    for (const DiffRow& row : diff.rows)
        if (row.flagged)
            shown.push_back(&row);
    const bool all = shown.empty();
    if (all)
        for (const DiffRow& row : diff.rows)
            shown.push_back(&row);
    if (max_rows != 0 && shown.size() > max_rows)
        shown.resize(max_rows);
    if (both_exact(diff))
        out << (all ? "No row moved (both sides are exact counts); the rows:"
                    : "Rows that moved (both sides are exact counts: every move is real):")
            << "\n\n";
    else
        out << (all ? "No row differs " + z_rule + "; the rows:" : "Rows that differ " + z_rule + ":") << "\n\n";
    out << "| function | A % | B % | Δ pp | z |\n|:---|---:|---:|---:|---:|\n";
    for (const DiffRow* row : shown)
        out << "| " << cell(row->name) << " | " << number("%.2f", row->a_percent) << " | "
            << number("%.2f", row->b_percent) << " | " << number("%+.2f", row->delta_pp) << " | " << z_text(row->z)
            << (row->z_upper_bound ? " ^" : "") << " |\n";
    if (!diff.hints.empty()) {
        out << "\nHints:\n\n";
        for (const DiffHint& hint : diff.hints)
            out << "- **" << hint.kind << "**" << (hint.function.empty() ? "" : " `" + cell(hint.function) + "`")
                << ": " << cell(hint.message) << "\n";
    }
}

} // namespace mcuprof::core
