#include <cmath>
#include <cstdio>
#include <ostream>

#include "mcuprof/core/report.h"

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
    for (const StackRow& stack : profile.stacks) {
        if (stack.frames.empty() || stack.samples <= 0)
            continue;
        std::string line;
        for (const StackFrame& frame : stack.frames)
            line += (line.empty() ? "" : ";") + frame_name(frame.function);
        // Histogram buckets give fractional shares; flamegraph.pl takes decimals.
        char count[32];
        if (stack.samples == std::floor(stack.samples))
            std::snprintf(count, sizeof count, "%.0f", stack.samples);
        else
            std::snprintf(count, sizeof count, "%.4f", stack.samples);
        out << line << ' ' << count << '\n';
    }
}

} // namespace mcuprof::core
