#include <map>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/call_graph.h"
#include "mcuprof/report/report.h"

namespace mcuprof::core {

nlohmann::json to_speedscope(const Profile& profile)
{
    // One frame per function, where it starts (the call graph resolves that once).
    const CallGraph graph = call_graph_of(profile);
    nlohmann::json frames = nlohmann::json::array();
    std::map<std::string, size_t> index;
    for (const CallGraphFunction& f : graph.functions) {
        nlohmann::json frame = {{"name", f.name}};
        if (!f.file.empty()) {
            frame["file"] = f.file;
            if (f.line != 0)
                frame["line"] = f.line;
        }
        index.emplace(f.name, frames.size());
        frames.push_back(std::move(frame));
    }

    nlohmann::json samples = nlohmann::json::array();
    nlohmann::json weights = nlohmann::json::array();
    double total = 0;
    for (const StackRow& stack : profile.stacks) {
        if (stack.frames.empty() || stack.samples <= 0)
            continue;
        nlohmann::json chain = nlohmann::json::array();   // root first, as speedscope reads it
        for (const StackFrame& frame : shown_frames(stack))
            chain.push_back(index.at(frame.function));
        samples.push_back(std::move(chain));
        weights.push_back(stack.samples);
        total += stack.samples;
    }
    const std::string name = profile.origin.empty() ? "mcuprof profile" : profile.origin;
    return {
        {"$schema", "https://www.speedscope.app/file-format-schema.json"},
        {"exporter", "mcuprof"},
        {"name", name},
        {"activeProfileIndex", 0},
        {"shared", {{"frames", frames}}},
        {"profiles",
         {{{"type", "sampled"},
           {"name", name},
           // Weights are sample (or instruction) counts, not time: speedscope's "none".
           {"unit", "none"},
           {"startValue", 0},
           {"endValue", total},
           {"samples", samples},
           {"weights", weights}}}},
    };
}

} // namespace mcuprof::core
