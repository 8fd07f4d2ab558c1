// Graphviz's DOT language (graphviz.org/doc/info/lang.html): one node per function, one
// edge per caller -> callee pair.
#include <ostream>

#include "mcuprof/profile/call_graph.h"
#include "mcuprof/printf_string.h"

namespace mcuprof::core {
namespace {

// A double-quoted DOT string: only the quote needs escaping; a backslash is kept by
// doubling it, and a line break becomes DOT's centred line break "\n". Not named quoted():
// on a non-const std::string, argument-dependent lookup prefers std::quoted wherever
// <iomanip> is included (it was, in the sanitizer tree's unity batch).
std::string dot_string(const std::string& text)
{
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\')
            out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        if (c != '\r')
            out.push_back(c);
    }
    return out + "\"";
}

std::string cost_text(double cost, double total)
{
    return printf_string("%.4g (%.1f%%)", cost, total > 0 ? 100.0 * cost / total : 0.0);
}

} // namespace

void write_dot(const CallGraph& graph, std::ostream& out)
{
    double total = 0;
    for (const CallGraphFunction& f : graph.functions)
        total += f.self_cost;

    out << "digraph callgraph {\n"
        << "  graph [label=" << dot_string(graph.origin + "\n" + graph.event + ": " + cost_text(total, total))
        << ", labelloc=t];\n"
        << "  node [shape=box];\n";
    for (size_t i = 0; i < graph.functions.size(); ++i) {
        const CallGraphFunction& f = graph.functions[i];
        std::string label = (f.name.empty() ? "???" : f.name) + "\nself " + cost_text(f.self_cost, total) +
                            "\ninclusive " + cost_text(f.inclusive_cost, total);
        if (f.calls)
            label += "\n" + std::to_string(*f.calls) + " calls";
        out << "  f" << i << " [label=" << dot_string(label) << "];\n";
    }
    for (const CallGraphEdge& e : graph.edges) {
        if (e.caller >= graph.functions.size() || e.callee >= graph.functions.size())
            continue;
        std::string label = cost_text(e.inclusive_cost, total);
        if (e.calls)
            label += "\n" + std::to_string(*e.calls) + " calls";
        out << "  f" << e.caller << " -> f" << e.callee << " [label=" << dot_string(label) << "];\n";
    }
    out << "}\n";
}

} // namespace mcuprof::core
