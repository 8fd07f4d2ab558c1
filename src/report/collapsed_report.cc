#include <cmath>
#include <map>
#include <ostream>

#include "mcuprof/report/report.h"
#include "mcuprof/printf_string.h"

namespace mcuprof::core {
namespace {

// flamegraph.pl splits a line at its last blank and the stack at ';': a name keeps
// neither a ';' nor a line break.
std::string frame_name(const std::string& function)
{
    std::string name = function;
    for (char& c : name)
        if (c == ';')
            c = ':';
        else if (c == '\n' || c == '\r')
            c = ' ';
    return name;
}

} // namespace

void write_collapsed(const Profile& profile, std::ostream& out)
{
    // Stack rows differ by the line of each frame; a collapsed line names functions only,
    // so rows with the same functions are one line (in the order of their first row).
    std::vector<std::pair<std::string, double>> lines;
    std::map<std::string, size_t> index;
    for (const StackRow& stack : profile.stacks) {
        if (stack.frames.empty() || stack.samples <= 0)
            continue;
        std::string line;
        for (const StackFrame& frame : shown_frames(stack))
            line += (line.empty() ? "" : ";") + frame_name(frame.function);
        auto [it, added] = index.emplace(line, lines.size());
        if (added)
            lines.push_back({line, 0});
        lines[it->second].second += stack.samples;
    }
    for (const auto& [line, samples] : lines) {
        // Histogram buckets give fractional shares; flamegraph.pl takes decimals.
        out << line << ' ' << printf_string(samples == std::floor(samples) ? "%.0f" : "%.4f", samples) << '\n';
    }
}

} // namespace mcuprof::core
