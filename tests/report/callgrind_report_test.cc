#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <unistd.h>

#include "mcuprof/profile/call_graph.h"
#include "../image/tool_output.h"

using namespace mcuprof::core;

namespace {

// The example of valgrind's cl-format 3.1.4: main calls func1 once and func2 three times,
// func1 calls func2 twice. Self 20, 100, 700; inclusive of main 20 + 400 + 400 = 820,
// of func1 100 + 300 = 400, of func2 700 (no callees).
CallGraph sample_graph()
{
    CallGraph g;
    g.event = "Cycles";
    g.origin = "hand-built graph";
    g.functions = {
        {"main", "/src/app.c", 10, 0x08000100, 20, 820, 1},
        {"func1", "/src/app.c", 50, 0x08000200, 100, 400, 1},
        {"func2", "/src/lib.c", 20, 0x08000300, 700, 700, 5},
    };
    g.edges = {
        {0, 1, 1, 400, "/src/app.c", 12},
        {0, 2, 3, 400, "/src/app.c", 13},
        {1, 2, 2, 300, "/src/app.c", 51},
    };
    return g;
}

std::string callgrind_text(const CallGraph& g)
{
    std::ostringstream out;
    write_callgrind(g, out);
    return out.str();
}

// A command's output, run on a temporary file holding text.
std::string run_on(const std::string& command, const std::string& text)
{
    const auto path = std::filesystem::temp_directory_path() /
                      ("mcuprof_call_graph_" + std::to_string(getpid()) + ".out");
    std::ofstream(path) << text;
    const std::string output = tool_output(command + " " + path.string());
    std::filesystem::remove(path);
    return output;
}

std::string annotate_output(const std::string& callgrind, const std::string& options)
{
    return run_on("callgrind_annotate --auto=no " + options, callgrind);
}

// Its function table: "COST (PERCENT)  FILE:FUNCTION" lines, and the program's total.
std::map<std::string, uint64_t> annotate(const std::string& callgrind, const std::string& options)
{
    const std::string output = annotate_output(callgrind, options);
    std::map<std::string, uint64_t> costs;
    const std::regex line(R"(^\s*([0-9,]+) \(\s*[0-9.]+%\)\s+(\S+)\s*$)");
    std::istringstream in(output);
    for (std::string text; std::getline(in, text);) {
        std::smatch m;
        if (std::regex_match(text, m, line))
            costs[m[2]] = std::stoull(std::regex_replace(m[1].str(), std::regex(","), ""));
        else if (text.find("PROGRAM TOTALS") != std::string::npos)
            costs["TOTALS"] = std::stoull(std::regex_replace(text.substr(0, text.find('(')), std::regex("[ ,]"), ""));
    }
    return costs;
}

} // namespace

TEST_CASE("callgrind: header, self cost lines and calls= lines as cl-format specifies")
{
    const std::string text = callgrind_text(sample_graph());
    CHECK(text.rfind("# callgrind format\nversion: 1\n", 0) == 0);
    CHECK(text.find("events: Cycles\n") != std::string::npos);
    CHECK(text.find("cmd: hand-built graph\n") != std::string::npos);
    CHECK(text.find("summary: 820\n") != std::string::npos);
    CHECK(text.find("totals: 820\n") != std::string::npos);
    // main's block: its self cost at its line, then its two calls, each a cfl/cfn/calls
    // triple and a cost line at the call site with the inclusive cost of the calls.
    CHECK(text.find("fl=(1) /src/app.c\nfn=(1) main\n10 20\n"
                    "cfl=(1)\ncfn=(2) func1\ncalls=1 50\n12 400\n"
                    "cfl=(2) /src/lib.c\ncfn=(3) func2\ncalls=3 20\n13 400\n") != std::string::npos);
    CHECK(text.find("fl=(1)\nfn=(2)\n50 100\ncfl=(2)\ncfn=(3)\ncalls=2 20\n51 300\n") != std::string::npos);
    CHECK(text.find("fl=(2)\nfn=(3)\n20 700\n") != std::string::npos);
}

TEST_CASE("callgrind: unknown call counts are the edge's stack count, unknown names and files are ???")
{
    CallGraph g;
    g.functions = {{"", "", 0, 0x100, 3, 10, {}}, {"leaf\nname", "", 0, 0x200, 7, 7, {}}};
    g.edges = {{0, 1, {}, 7, "", 0}};
    const std::string text = callgrind_text(g);
    CHECK(text.find("events: Samples\n") != std::string::npos);
    CHECK(text.find("fl=(1) ???\nfn=(1) ???\n0 3\ncfl=(1)\ncfn=(2) leaf name\ncalls=7 0\n0 7\n") !=
          std::string::npos);
    CHECK(text.find("cmd:") == std::string::npos);
}

TEST_CASE("callgrind: a call site in another file than its function is put at the function's line")
{
    CallGraph g = sample_graph();
    g.edges[2].file = "/src/inlined.h";
    g.edges[2].line = 7;
    const std::string text = callgrind_text(g);
    CHECK(text.find("fn=(2)\n50 100\ncfl=(2)\ncfn=(3)\ncalls=2 20\n50 300\n") != std::string::npos);
    CHECK(text.find("inlined.h") == std::string::npos);
}

TEST_CASE("callgrind: callgrind_annotate reads the totals, self and inclusive costs worked out by hand")
{
    CallGraph g = sample_graph();
    g.edges[2].file = "/src/inlined.h";     // must not make another function of func1
    const std::string text = callgrind_text(g);
    const auto self = annotate(text, "");
    CHECK(self.at("TOTALS") == 820);
    CHECK(self.at("/src/app.c:main") == 20);
    CHECK(self.at("/src/app.c:func1") == 100);
    CHECK(self.at("/src/lib.c:func2") == 700);
    const auto inclusive = annotate(text, "--inclusive=yes");
    CHECK(inclusive.at("TOTALS") == 820);
    CHECK(inclusive.at("/src/app.c:main") == 820);      // 20 + 400 + 400
    CHECK(inclusive.at("/src/app.c:func1") == 400);     // 100 + 300
    CHECK(inclusive.at("/src/lib.c:func2") == 700);
    // The call counts, as the caller tree shows them: "COST (PERCENT)  >   FILE:FN (Nx) []".
    const std::string tree = annotate_output(text, "--tree=calling");
    CHECK(tree.find("/src/lib.c:func2 (3x)") != std::string::npos);
    CHECK(tree.find("/src/lib.c:func2 (2x)") != std::string::npos);
    CHECK(tree.find("/src/app.c:func1 (1x)") != std::string::npos);
}

TEST_CASE("dot: one node per function and one edge per call pair, labels quoted")
{
    CallGraph g = sample_graph();
    g.functions[1].name = "say \"hi\"";
    std::ostringstream out;
    write_dot(g, out);
    const std::string text = out.str();
    CHECK(text.rfind("digraph callgraph {\n", 0) == 0);
    CHECK(text.find("label=\"hand-built graph\\nCycles: 820 (100.0%)\"") != std::string::npos);
    // main: self 20 of 820 = 2.4 %, inclusive 820 = 100 %.
    CHECK(text.find("f0 [label=\"main\\nself 20 (2.4%)\\ninclusive 820 (100.0%)\\n1 calls\"];") != std::string::npos);
    CHECK(text.find("f1 [label=\"say \\\"hi\\\"\\nself 100 (12.2%)") != std::string::npos);
    // main -> func2: 400 of 820 = 48.8 %, 3 calls.
    CHECK(text.find("f0 -> f2 [label=\"400 (48.8%)\\n3 calls\"];") != std::string::npos);
    CHECK(text.find("f1 -> f2 [label=\"300 (36.6%)\\n2 calls\"];") != std::string::npos);
    CHECK(text.substr(text.size() - 2) == "}\n");
    // Graphviz reads it: -Tplain lists "node NAME ..." and "edge TAIL HEAD ..." lines.
    const std::string plain = run_on("dot -Tplain", text);
    size_t nodes = 0, edges = 0;
    std::istringstream in(plain);
    for (std::string line; std::getline(in, line);) {
        nodes += line.rfind("node ", 0) == 0;
        edges += line.rfind("edge ", 0) == 0;
    }
    CHECK(nodes == 3);
    CHECK(edges == 3);
    CHECK(plain.find("edge f0 f2") != std::string::npos);
    CHECK(run_on("dot -Tsvg", text).find("say &quot;hi&quot;") != std::string::npos);
}
