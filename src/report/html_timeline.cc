// The timeline of the HTML report: how the hottest functions' shares move over a recording,
// so that phases (start-up, steady state, bursts) show.
#include <algorithm>
#include <map>
#include <ostream>

#include "html_page.h"
#include "mcuprof/profile/cores.h"
#include "mcuprof/report/report.h"
#include "mcuprof/image/symbols.h"

namespace mcuprof::core {

Timeline timeline_of(const SampleSet& samples, const SymbolTable& symbols, size_t functions)
{
    Timeline t;
    const size_t n = samples.pcs.size();
    if (n == 0 || samples.times_ns.size() != n)
        return t;
    std::vector<std::string> names(n);
    std::map<std::string, size_t> counts;
    for (size_t i = 0; i < n; ++i) {
        const Function* f = symbols.find(samples.pcs[i]);
        names[i] = f != nullptr ? f->name : "?";
        ++counts[names[i]];
    }
    std::vector<std::pair<std::string, size_t>> hottest(counts.begin(), counts.end());
    std::stable_sort(hottest.begin(), hottest.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    hottest.resize(std::min(hottest.size(), functions));

    // Slices of equal time with about 25 samples or more each on average, so that a share
    // moves by more than its noise (a standard error near 0.1 at 25 samples) only for a reason.
    t.slices = std::clamp<size_t>(n / 25, 1, 40);
    t.start_ms = double(samples.times_ns.front()) / 1e6;
    t.end_ms = double(samples.times_ns.back()) / 1e6;
    const double span = std::max(t.end_ms - t.start_ms, 1e-9);
    std::vector<size_t> in_slice(t.slices, 0);
    std::vector<std::map<std::string, size_t>> by_slice(t.slices);
    for (size_t i = 0; i < n; ++i) {
        const double at = (double(samples.times_ns[i]) / 1e6 - t.start_ms) / span;
        const size_t slice = std::min(size_t(at * double(t.slices)), t.slices - 1);
        ++in_slice[slice];
        ++by_slice[slice][names[i]];
    }
    t.samples_per_slice = in_slice;
    for (const auto& [name, count] : hottest) {
        TimelineSeries series{name, {}};
        for (size_t s = 0; s < t.slices; ++s)
            series.shares.push_back(in_slice[s] == 0 ? 0.0 : double(by_slice[s][name]) / double(in_slice[s]));
        t.series.push_back(std::move(series));
    }
    return t;
}

std::vector<CoreTimeline> core_timelines_of(const SampleSet& samples, const SymbolTable& symbols)
{
    std::vector<CoreTimeline> timelines;
    if (is_multicore(samples))
        for (uint32_t core : cores_of(samples))
            timelines.push_back({core, core_name(samples, core), timeline_of(samples_of_core(samples, core), symbols)});
    return timelines;
}

void write_timeline(const Timeline& t, std::ostream& out, const std::string& core_name, const std::string& id)
{
    using html::escape;
    if (t.series.empty() || t.slices < 2)
        return;
    // The legend is a table below the plot, not SVG text beside it: SVG text does not wrap, and
    // the end of a long C++ name, where namesakes differ (" (unit_a.cpp)"), was cut off.
    constexpr double width = 1200, height = 220, top = 12, plot = width - 40;   // top: the 100 % label
    const double slice_ms = (t.end_ms - t.start_ms) / double(t.slices);
    out << "<h2>Timeline" << (core_name.empty() ? "" : ", " + escape(core_name)) << "</h2>\n<p>The share of the "
        << t.series.size() << " hottest functions" << (core_name.empty() ? "" : " of this core")
        << " in each of " << t.slices << " slices of " << html::readable_ms(slice_ms) << " of the recording.</p>\n"
        << printf_string("<svg id=\"%s\" width=\"%.0f\" height=\"%.0f\" data-slices=\"%zu\">\n", escape(id).c_str(),
                         width, top + height + 20, t.slices);
    for (int tick = 0; tick <= 4; ++tick) {   // 0 %, 25 %, ..., 100 %
        const double y = top + height - height * tick / 4.0;
        out << printf_string("<line x1=\"0\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                             "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\">%d %%</text>\n",
                             plot, y, y, plot + 4, y + 3, tick * 25);
    }
    std::string legend;   // one row per series: its colour, its whole name
    for (size_t k = 0; k < t.series.size(); ++k) {
        const TimelineSeries& s = t.series[k];
        const std::string colour = printf_string("hsl(%zu,70%%,45%%)", k * 360 / t.series.size());
        std::string points, shares;
        for (size_t i = 0; i < s.shares.size(); ++i) {
            const double x = plot * (double(i) + 0.5) / double(t.slices);
            points += printf_string("%.1f,%.1f ", x, top + height - height * s.shares[i]);
            shares += printf_string(i == 0 ? "%.4f" : " %.4f", s.shares[i]);
        }
        out << "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\"" << colour
            << "\" data-function=\"" << escape(s.function) << "\" data-shares=\"" << shares << "\" points=\""
            << points << "\"><title>" << escape(s.function) << "</title></polyline>\n";
        legend += "<tr><td style=\"color:" + colour + "\">&#9632;</td><td class=\"name\">" + escape(s.function) +
                  "</td></tr>\n";
    }
    out << printf_string("<text x=\"0\" y=\"%.0f\" font-size=\"10\">%.3g ms</text>", top + height + 14, t.start_ms)
        << printf_string("<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" text-anchor=\"end\">%.3g ms</text>\n", plot,
                         top + height + 14, t.end_ms)
        << "</svg>\n<table class=\"legend\">\n" << legend << "</table>\n";
}

} // namespace mcuprof::core
