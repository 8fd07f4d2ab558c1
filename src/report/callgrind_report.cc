// The callgrind profile format, version 1 (valgrind's docs/cl-format.html, "Callgrind
// Format Specification"), as callgrind_annotate and KCachegrind read it.
#include <cmath>
#include <map>
#include <ostream>

#include "mcuprof/profile/call_graph.h"

namespace mcuprof::core {
namespace {

// Cost lines hold 64-bit unsigned counters (cl-format 3.1.1); sample shares can be
// fractional (histogram buckets split between functions), so they are rounded.
uint64_t counter(double cost)
{
    return cost > 0 ? uint64_t(std::llround(cost)) : 0;
}

// A position name is the rest of its line (cl-format 3.2.3): no line breaks in it, and it
// must not start with "(" and a digit, which marks a compressed name.
std::string position_name(const std::string& name, const char* unknown)
{
    if (name.empty())
        return unknown;
    std::string clean;
    for (char c : name)
        clean.push_back(c == '\n' || c == '\r' ? ' ' : c);
    if (clean.size() > 1 && clean[0] == '(' && std::isdigit(static_cast<unsigned char>(clean[1])))
        clean.insert(clean.begin(), ' ');
    return clean;
}

// Name compression (cl-format 3.1.5): the first use of a name defines "(ID) name", later
// uses write "(ID)". One table per kind of position (files, functions).
class NameTable {
public:
    std::string operator()(const std::string& name)
    {
        auto [it, added] = ids_.try_emplace(name, ids_.size() + 1);
        return "(" + std::to_string(it->second) + ")" + (added ? " " + name : "");
    }

private:
    std::map<std::string, size_t> ids_;
};

} // namespace

void write_callgrind(const CallGraph& graph, std::ostream& out)
{
    // "???" is what valgrind itself writes for an unknown file or function.
    auto file_of = [](const std::string& file) { return position_name(file, "???"); };
    std::vector<std::string> names;
    for (const CallGraphFunction& f : graph.functions)
        names.push_back(position_name(f.name, "???"));

    uint64_t total = 0;
    for (const CallGraphFunction& f : graph.functions)
        total += counter(f.self_cost);

    std::vector<std::vector<const CallGraphEdge*>> calls_from(graph.functions.size());
    for (const CallGraphEdge& e : graph.edges)
        if (e.caller < graph.functions.size() && e.callee < graph.functions.size())
            calls_from[e.caller].push_back(&e);

    const std::string event = position_name(graph.event, "Samples");
    out << "# callgrind format\n"
        << "version: 1\n"
        << "creator: mcuprof\n";
    if (!graph.origin.empty())
        out << "cmd: " << position_name(graph.origin, "") << "\n";
    out << "positions: line\n"
        << "events: " << event << "\n"
        << "summary: " << total << "\n\n";

    NameTable files, functions;
    for (size_t i = 0; i < graph.functions.size(); ++i) {
        const CallGraphFunction& f = graph.functions[i];
        const std::string file = file_of(f.file);
        out << "fl=" << files(file) << "\n"
            << "fn=" << functions(names[i]) << "\n"
            << f.line << " " << counter(f.self_cost) << "\n";
        for (const CallGraphEdge* e : calls_from[i]) {
            const CallGraphFunction& callee = graph.functions[e->callee];
            // The call site's cost line is a line of the function's file. A site in another
            // file (inlined code) would need fi=, which callgrind_annotate reads as another
            // function ("file:function"), so such a site is put at the function's line.
            const bool site_here = e->line != 0 && (e->file.empty() || file_of(e->file) == file);
            // When the call count is unknown (sampled stacks) the count written is the
            // number of stacks the edge appeared in, which for sampled stacks is its cost:
            // each stack counts an edge once (docs/formats.md).
            const uint64_t count = e->calls ? *e->calls : counter(e->inclusive_cost);
            out << "cfl=" << files(file_of(callee.file)) << "\n"
                << "cfn=" << functions(names[e->callee]) << "\n"
                << "calls=" << count << " " << callee.line << "\n"
                << (site_here ? e->line : f.line) << " " << counter(e->inclusive_cost) << "\n";
        }
        out << "\n";
    }
    out << "totals: " << total << "\n";
}

} // namespace mcuprof::core
