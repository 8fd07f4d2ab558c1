#include "mcuprof/profile/call_graph.h"

#include <map>
#include <set>
#include <utility>

#include "mcuprof/profile/profile.h"

namespace mcuprof::core {

CallGraph call_graph_of(const Profile& profile)
{
    CallGraph graph;
    graph.origin = profile.origin;
    graph.event = profile.exact ? "Instructions" : "Samples";

    // Where each function starts, from its function row (by-function profiles): callgrind's
    // fn= block and dot's node name it, while the frames only know the sampled line.
    std::map<std::string, const Row*> rows;
    if (profile.by == Grouping::function)
        for (const Row& row : profile.rows)
            rows.emplace(row.name, &row);

    std::map<std::string, size_t> index;
    auto function_of = [&](const StackFrame& frame) {
        auto [it, added] = index.emplace(frame.function, graph.functions.size());
        if (added) {
            CallGraphFunction f;
            f.name = frame.function;
            f.address = frame.address;
            f.file = frame.file;
            f.line = frame.line;
            if (auto row = rows.find(frame.function); row != rows.end()) {
                if (row->second->address)
                    f.address = *row->second->address;
                const std::string& location = row->second->location;   // "file:line"
                if (size_t colon = location.rfind(':'); colon != std::string::npos) {
                    f.file = location.substr(0, colon);
                    f.line = uint32_t(std::stoul("0" + location.substr(colon + 1)));
                }
            }
            graph.functions.push_back(std::move(f));
        }
        return it->second;
    };
    std::map<std::pair<size_t, size_t>, size_t> edge_index;

    for (const StackRow& stack : profile.stacks) {
        if (stack.frames.empty())
            continue;
        const std::vector<StackFrame> frames = shown_frames(stack);
        std::vector<size_t> chain;
        for (const StackFrame& frame : frames)
            chain.push_back(function_of(frame));
        graph.functions[chain.back()].self_cost += stack.samples;

        // Inclusive cost and edges count once per stack, so recursion (a function or a
        // call pair that occurs twice on one stack) does not count a sample twice.
        for (size_t f : std::set<size_t>(chain.begin(), chain.end()))
            graph.functions[f].inclusive_cost += stack.samples;
        std::set<std::pair<size_t, size_t>> pairs;
        for (size_t i = 0; i + 1 < chain.size(); ++i) {
            if (!pairs.insert({chain[i], chain[i + 1]}).second)
                continue;
            auto [it, added] = edge_index.emplace(std::pair(chain[i], chain[i + 1]), graph.edges.size());
            if (added) {
                CallGraphEdge edge;
                edge.caller = chain[i];
                edge.callee = chain[i + 1];
                edge.file = frames[i].file;   // the caller's frame is at the call site
                edge.line = frames[i].line;
                graph.edges.push_back(std::move(edge));
            }
            graph.edges[it->second].inclusive_cost += stack.samples;
        }
    }
    return graph;
}

} // namespace mcuprof::core
