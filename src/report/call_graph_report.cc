// A call graph as a text table and as JSON (docs/formats.md, "Call graph").
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <ostream>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/json_numbers.h"
#include "mcuprof/profile/call_graph.h"
#include "mcuprof/profile/text_table.h"

namespace mcuprof::core {
namespace {

double total_of(const CallGraph& graph)
{
    double total = 0;
    for (const CallGraphFunction& f : graph.functions)
        total += f.self_cost;
    return total;
}

std::string location(const std::string& file, uint32_t line)
{
    if (file.empty())
        return "";
    return file + (line != 0 ? ":" + std::to_string(line) : "");
}

std::string calls_text(const std::optional<uint64_t>& calls)
{
    return calls ? std::to_string(*calls) : "?";
}

} // namespace

void write_call_graph_text(const CallGraph& graph, std::ostream& out, const std::vector<std::string>& warnings)
{
    const double total = total_of(graph);
    auto percent = [&](double cost) { return total > 0 ? 100.0 * cost / total : 0.0; };
    out << graph.origin << "\n"
        << graph.event << " " << std::llround(total) << " in " << graph.functions.size() << " functions, "
        << graph.edges.size() << " call pairs\n";
    for (const std::string& w : warnings)
        out << "warning: " << w << "\n";

    std::vector<size_t> order(graph.functions.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return graph.functions[a].inclusive_cost > graph.functions[b].inclusive_cost;
    });
    std::vector<std::vector<size_t>> callees(graph.functions.size());
    for (size_t i = 0; i < graph.edges.size(); ++i)
        if (graph.edges[i].caller < graph.functions.size() && graph.edges[i].callee < graph.functions.size())
            callees[graph.edges[i].caller].push_back(i);

    out << printf_string("\n%8s %14s %8s %14s %10s  %s\n", "incl%", "inclusive", "self%", "self", "calls", "function");
    for (size_t i : order) {
        const CallGraphFunction& f = graph.functions[i];
        text_table::write_row(out,
                              printf_string("%8.2f %14.0f %8.2f %14.0f %10s  ", percent(f.inclusive_cost), f.inclusive_cost,
                                            percent(f.self_cost), f.self_cost, calls_text(f.calls).c_str()),
                              f.name + (f.file.empty() ? "" : "  (" + location(f.file, f.line) + ")"));
        std::stable_sort(callees[i].begin(), callees[i].end(), [&](size_t a, size_t b) {
            return graph.edges[a].inclusive_cost > graph.edges[b].inclusive_cost;
        });
        for (size_t k : callees[i]) {
            const CallGraphEdge& e = graph.edges[k];
            text_table::write_row(out,
                                  printf_string("%8.2f %14.0f %8s %14s %10s    -> ", percent(e.inclusive_cost),
                                                e.inclusive_cost, "", "", calls_text(e.calls).c_str()),
                                  graph.functions[e.callee].name +
                                      (e.file.empty() ? "" : "  (called at " + location(e.file, e.line) + ")"));
        }
    }
}

nlohmann::json call_graph_json(const CallGraph& graph, const std::vector<std::string>& warnings)
{
    nlohmann::json functions = nlohmann::json::array();
    for (const CallGraphFunction& f : graph.functions)
        functions.push_back({{"name", f.name},
                             {"file", f.file},
                             {"line", f.line},
                             {"address", f.address},
                             {"calls", f.calls ? nlohmann::json(*f.calls) : nlohmann::json()},
                             {"self", json_numbers::count(f.self_cost)},
                             {"inclusive", json_numbers::count(f.inclusive_cost)}});
    nlohmann::json edges = nlohmann::json::array();
    for (const CallGraphEdge& e : graph.edges)
        edges.push_back({{"caller", e.caller},
                         {"callee", e.callee},
                         {"calls", e.calls ? nlohmann::json(*e.calls) : nlohmann::json()},
                         {"inclusive", json_numbers::count(e.inclusive_cost)},
                         {"file", e.file},
                         {"line", e.line}});
    return {{"format", "mcuprof-call-graph"},
            {"version", 1},
            {"origin", graph.origin},
            {"event", graph.event},
            {"total", json_numbers::count(total_of(graph))},
            {"warnings", warnings},
            {"functions", functions},
            {"edges", edges}};
}

} // namespace mcuprof::core
