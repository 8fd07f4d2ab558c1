#pragma once
// A call graph: functions with their own cost, and caller -> callee edges with the cost
// spent in the callee on behalf of that caller. Built from unwound stacks (costs are
// samples, call counts unknown) or from instrumented entry/exit records (costs are
// cycles, call counts exact). Written as callgrind (callgrind_annotate, KCachegrind) or
// Graphviz dot.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace mcuprof::core {

struct Profile;

struct CallGraphFunction {
    std::string name;
    std::string file;                 // empty when unknown
    uint32_t line = 0;                // first line, 0 when unknown
    uint32_t address = 0;
    double self_cost = 0;
    double inclusive_cost = 0;        // counted once per stack / activation, recursion included
    std::optional<uint64_t> calls;    // times entered, when known (instrumented)
};

struct CallGraphEdge {
    size_t caller = 0;                // index into functions
    size_t callee = 0;
    std::optional<uint64_t> calls;    // exact call count, when known (instrumented)
    double inclusive_cost = 0;        // cost in the callee and below, on behalf of this caller
    std::string file;                 // call site, when known
    uint32_t line = 0;
};

struct CallGraph {
    std::string event = "Samples";    // the cost's name: "Samples" or "Cycles"
    std::string origin;               // what the costs came from, for the file's header
    std::vector<CallGraphFunction> functions;
    std::vector<CallGraphEdge> edges;
};

// From a profile's stacks (unwound or one-frame): self cost to the leaf frame, and an
// edge for each adjacent caller/callee pair of every stack, each counted once per stack.
CallGraph call_graph_of(const Profile& profile);

// The callgrind profile format (valgrind's docs/cl-format.html): `events:`, `fl=`/`fn=`
// blocks with self cost per line, `cfl=`/`cfn=`/`calls=` lines for each edge.
void write_callgrind(const CallGraph& graph, std::ostream& out);

// Graphviz: one node per function (self and inclusive share), one edge per call pair
// labelled with its cost and call count.
void write_dot(const CallGraph& graph, std::ostream& out);

// A table for people: functions by inclusive cost, each with its callees; the warnings on top.
void write_call_graph_text(const CallGraph& graph, std::ostream& out, const std::vector<std::string>& warnings = {});
// The same as JSON ("mcuprof-call-graph", docs/formats.md).
nlohmann::json call_graph_json(const CallGraph& graph, const std::vector<std::string>& warnings = {});

} // namespace mcuprof::core
