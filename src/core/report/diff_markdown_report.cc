// diff --format markdown: a summary for a pull request or a CI job (GitHub-flavoured
// Markdown tables), and the gate behind diff --fail-above.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "mcuprof/core/diff.h"

namespace mcuprof::core {

std::vector<DiffRow> regressions(const ProfileDiff& diff, double fail_above_pp)
{
    std::vector<DiffRow> grown;
    for (const DiffRow& row : diff.rows)
        if (row.delta_pp > fail_above_pp && row.z > diff.threshold)
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

std::string z_text(double z)
{
    return std::isfinite(z) ? number("%.1f", z) : (z > 0 ? "+∞" : "−∞");
}

std::string side(const std::string& origin, double total, bool exact)
{
    return cell(origin) + " (" + number("%.0f", total) + (exact ? " instructions)" : " samples)");
}

} // namespace

void write_markdown(const ProfileDiff& diff, std::ostream& out, std::optional<double> fail_above_pp,
                    size_t max_rows)
{
    const std::string z_rule = "beyond " + number("%g", diff.threshold) + " standard errors";
    if (fail_above_pp) {
        const std::vector<DiffRow> grown = regressions(diff, *fail_above_pp);
        const std::string gate = "more than " + number("%g", *fail_above_pp) + " pp and " + z_rule;
        std::string names;
        for (const DiffRow& row : grown)
            names += (names.empty() ? "`" : ", `") + cell(row.name) + "` (" + number("%+.2f", row.delta_pp) + " pp)";
        if (grown.empty())
            out << "### mcuprof: passed, no function grew by " << gate << "\n\n";
        else
            out << "### mcuprof: failed, " << grown.size() << (grown.size() == 1 ? " function" : " functions")
                << " grew by " << gate << ": " << names << "\n\n";
    }
    out << "- A: " << side(diff.a_origin, diff.a_total, diff.a_exact) << "\n"
        << "- B: " << side(diff.b_origin, diff.b_total, diff.b_exact) << "\n\n";

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
    out << (all ? "No row differs " + z_rule + "; the rows:" : "Rows that differ " + z_rule + ":") << "\n\n";
    out << "| function | A % | B % | Δ pp | z |\n|:---|---:|---:|---:|---:|\n";
    for (const DiffRow* row : shown)
        out << "| " << cell(row->name) << " | " << number("%.2f", row->a_percent) << " | "
            << number("%.2f", row->b_percent) << " | " << number("%+.2f", row->delta_pp) << " | " << z_text(row->z)
            << " |\n";
    if (!diff.hints.empty()) {
        out << "\nHints:\n\n";
        for (const DiffHint& hint : diff.hints)
            out << "- **" << hint.kind << "**" << (hint.function.empty() ? "" : " `" + cell(hint.function) + "`")
                << ": " << cell(hint.message) << "\n";
    }
}

} // namespace mcuprof::core
