#pragma once
// What the two HTML reports (profile, diff) share: escaping, number formatting, and the
// page around their content. The page loads nothing: CSS and JS are inline, and the
// Content-Security-Policy forbids every request, so the file works offline and a test
// can prove it makes none.
#include <cstdio>
#include <ostream>
#include <string>

#include "mcuprof/printf_string.h"

namespace mcuprof::core::html {

std::string escape(const std::string& text);

// A duration in milliseconds as a reader takes it in: "2.49 s", "12.5 ms", "80 us".
inline std::string readable_ms(double ms)
{
    if (ms >= 1000)
        return printf_string("%.3g s", ms / 1000);
    if (ms >= 1)
        return printf_string("%.3g ms", ms);
    return printf_string("%.3g us", ms * 1000);
}

// <!DOCTYPE html> to <body>, with the style sheet.
void begin_page(std::ostream& out, const std::string& title);
// The sorting script (a click on a column of a table.sortable sorts by that column's
// data-v values, numerically when they are numbers) and the closing tags.
void end_page(std::ostream& out);

// A share bar with its 95 % interval: widths in percent of `scale` (the largest
// interval's upper end of the table, so that bars compare).
std::string share_bar(double percent, double low, double high, double scale);

} // namespace mcuprof::core::html

namespace mcuprof::core {
struct Profile;
// The profile page's interactive flame graph (unwound stacks) or icicle (flat profiles):
// the call tree as JSON, d3 and d3-flame-graph inlined, and the controls.
void write_flame_graph(const Profile& profile, std::ostream& out);

} // namespace mcuprof::core
