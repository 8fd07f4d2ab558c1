#include <algorithm>
#include <cmath>
#include <ostream>

#include "html_page.h"
#include "mcuprof/profile/diff.h"

namespace mcuprof::core {

void write_html(const ProfileDiff& diff, std::ostream& out)
{
    using html::escape;
    html::begin_page(out, "mcuprof diff: " + diff.a_origin + " / " + diff.b_origin);
    out << "<h1>mcuprof diff</h1>\n<dl class=\"meta\" id=\"metadata\">\n"
        << "<dt>A</dt><dd>" << escape(diff.a_origin)
        << printf_string(" (%.0f %s)", diff.a_total, diff.a_exact ? "instructions, exact" : "samples") << "</dd>\n"
        << "<dt>B</dt><dd>" << escape(diff.b_origin)
        << printf_string(" (%.0f %s)", diff.b_total, diff.b_exact ? "instructions, exact" : "samples") << "</dd>\n";
    if (const std::string totals = totals_summary(diff); !totals.empty())
        out << "<dt>totals</dt><dd id=\"totals\">" << escape(totals) << "</dd>\n";
    out << "<dt>flagged</dt><dd>" << escape(flagged_summary(diff)) << "</dd>\n</dl>\n";
    if (!diff.hints.empty()) {
        out << "<h2>Hints</h2>\n<div id=\"hints\">\n";
        for (const DiffHint& h : diff.hints)
            out << "<p class=\"hint\" data-kind=\"" << escape(h.kind) << "\">" << escape(h.message) << "</p>\n";
        out << "</div>\n";
    }
    double scale = 0;
    for (const DiffRow& r : diff.rows)
        scale = std::max({scale, r.a_percent, r.b_percent});
    out << "<h2>Rows</h2>\n<table class=\"sortable\" id=\"diff\">\n<thead><tr><th class=\"name\">name</th>"
           "<th>A %</th><th>B %</th><th>A <span class=\"a-key\">&#9632;</span>, B <span class=\"b-key\">&#9632;</span></th><th>B &minus; A (points)</th><th>z</th></tr></thead>\n<tbody>\n";
    for (const DiffRow& r : diff.rows) {
        // A bar without interval per side: A above, B below.
        const std::string bars = html::share_bar(r.a_percent, r.a_percent, r.a_percent, scale) + "<div class=\"b\">" +
                                 html::share_bar(r.b_percent, r.b_percent, r.b_percent, scale) + "</div>";
        const std::string z = z_text(r.z);
        out << "<tr" << (r.flagged ? " class=\"flagged\"" : "") << "><td class=\"name\">" << (r.flagged ? "* " : "")
            << escape(r.name) << "</td>"
            << printf_string("<td data-v=\"%.6g\">%.2f</td><td data-v=\"%.6g\">%.2f</td>", r.a_percent, r.a_percent,
                             r.b_percent, r.b_percent)
            << printf_string("<td data-v=\"%.6g\">", std::max(r.a_percent, r.b_percent)) << bars << "</td>"
            << printf_string("<td data-v=\"%.6g\">%+.2f</td>", r.delta_pp, r.delta_pp)
            << "<td data-v=\"" << (std::isfinite(r.z) ? printf_string("%.6g", r.z) : (r.z > 0 ? "1e308" : "-1e308")) << "\">"
            << z << (r.z_upper_bound ? " ^" : "") << "</td></tr>\n";
    }
    out << "</tbody></table>\n";
    html::end_page(out);
}

} // namespace mcuprof::core
