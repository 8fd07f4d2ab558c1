// The stack formats (call graph, collapsed, speedscope, HTML) on stacks whose figures are
// known by construction: the unwound samples of the attribution test.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mcuprof/image/firmware.h"
#include "mcuprof/profile/call_graph.h"
#include "mcuprof/report/report.h"
#include "mcuprof/image/symbols.h"

using namespace mcuprof::core;

namespace {

const std::string fixture = std::string(FIXTURES_DIR) + "/symbols_fixture.elf";

// 4 samples (call sites are addresses inside the caller):
//   func_a -> local_b                 x2
//   func_a -> func_c -> func_c        x1 (recursion)
//   func_c, truncated                 x1 (shown under a [truncated] root)
SampleSet unwound_samples()
{
    SampleSet s;
    s.origin = "constructed <stacks>";
    s.pcs = {0x08000012, 0x08000012, 0x08000022, 0x08000024};
    s.stacks = {{{0x08000004}, false},
                {{0x08000004}, false},
                {{0x08000022, 0x08000006}, false},
                {{}, true, UnwindStop::bad_frame}};
    return s;
}

Profile unwound_profile()
{
    return attribute(unwound_samples(), SymbolTable::load(Image::open(fixture)), nullptr, {});
}

// 3 flat samples: func_a twice, local_b once; one SWO sleep sample without address.
Profile flat_profile()
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.origin = "constructed flat";
    s.pcs = {0x08000000, 0x08000002, 0x08000010};
    s.without_address["(sleep)"] = 1;
    AttributionOptions options;
    options.stacks = true;
    return attribute(s, symbols, nullptr, options);
}

const CallGraphFunction& function_named(const CallGraph& g, const std::string& name)
{
    auto it = std::find_if(g.functions.begin(), g.functions.end(),
                           [&](const CallGraphFunction& f) { return f.name == name; });
    REQUIRE_MESSAGE(it != g.functions.end(), "no function " << name);
    return *it;
}

double edge_cost(const CallGraph& g, const std::string& caller, const std::string& callee)
{
    for (const CallGraphEdge& e : g.edges)
        if (g.functions[e.caller].name == caller && g.functions[e.callee].name == callee)
            return e.inclusive_cost;
    return -1;
}

// The call tree an HTML page's flame graph draws (script#flame-data).
nlohmann::json flame_tree(const std::string& page)
{
    const std::string open = "<script type=\"application/json\" id=\"flame-data\">";
    const size_t start = page.find(open);
    REQUIRE(start != std::string::npos);
    const size_t end = page.find("</script>", start);
    return nlohmann::json::parse(page.substr(start + open.size(), end - start - open.size()));
}

// The page without the script element that holds d3 and d3-flame-graph.
std::string without_flame_graph_library(const std::string& page)
{
    const size_t start = page.find("<script>\n// https://d3js.org");
    REQUIRE(start != std::string::npos);
    const size_t end = page.find("</script>", start);
    REQUIRE(end != std::string::npos);
    return page.substr(0, start) + page.substr(end);
}

size_t boxes_of(const nlohmann::json& node)
{
    size_t boxes = 1;
    for (const nlohmann::json& child : node.value("children", nlohmann::json::array()))
        boxes += boxes_of(child);
    return boxes;
}

size_t count_of(const std::string& text, const std::string& part)
{
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size()))
        ++n;
    return n;
}

} // namespace

TEST_CASE("call graph: self cost to the leaf, inclusive and edges once per stack")
{
    const CallGraph g = call_graph_of(unwound_profile());
    CHECK(g.event == "Samples");
    REQUIRE(g.functions.size() == 4);   // and [truncated], the root of the truncated stack
    CHECK(function_named(g, "[truncated]").self_cost == 0);
    CHECK(function_named(g, "[truncated]").inclusive_cost == 1);
    CHECK(function_named(g, "func_a").self_cost == 0);
    CHECK(function_named(g, "func_a").inclusive_cost == 3);
    CHECK(function_named(g, "func_a").address == 0x08000000u);
    CHECK(function_named(g, "local_b").self_cost == 2);
    CHECK(function_named(g, "local_b").inclusive_cost == 2);
    CHECK(function_named(g, "func_c").self_cost == 2);
    CHECK(function_named(g, "func_c").inclusive_cost == 2);   // recursion: once per stack
    REQUIRE(g.edges.size() == 4);
    CHECK(edge_cost(g, "[truncated]", "func_c") == 1);
    CHECK(edge_cost(g, "func_a", "local_b") == 2);
    CHECK(edge_cost(g, "func_a", "func_c") == 1);
    CHECK(edge_cost(g, "func_c", "func_c") == 1);
    CHECK(edge_cost(g, "local_b", "func_a") == -1);
}

TEST_CASE("collapsed: one root-first line per stack with its count")
{
    std::ostringstream out;
    write_collapsed(unwound_profile(), out);
    CHECK(out.str() == "func_a;local_b 2\nfunc_a;func_c;func_c 1\n[truncated];func_c 1\n");
}

TEST_CASE("--by stack: rows are the collapsed lines, a truncated chain under [truncated] as there")
{
    AttributionOptions options;
    options.by = Grouping::stack;
    const Profile p = attribute(unwound_samples(), SymbolTable::load(Image::open(fixture)), nullptr, options);
    std::map<std::string, double> rows;
    for (const Row& row : p.rows)
        rows[row.name] = row.samples;
    CHECK(rows == std::map<std::string, double>{
                      {"func_a;local_b", 2}, {"func_a;func_c;func_c", 1}, {"[truncated];func_c", 1}});
}

TEST_CASE("collapsed: a flat profile gives one-frame stacks, samples without address included")
{
    std::ostringstream out;
    write_collapsed(flat_profile(), out);
    CHECK(out.str() == "func_a 2\nlocal_b 1\n(sleep) 1\n");
}

TEST_CASE("two cores: each core's chains under its own root in every stack format, pprof's label aside")
{
    // The four unwound samples on core 0 and the same four on core 1 (named "cm4"): the same
    // chains on two cores are two towers, never one of twice the samples.
    SampleSet s = unwound_samples();
    const SampleSet one = s;
    s.pcs.insert(s.pcs.end(), one.pcs.begin(), one.pcs.end());
    s.stacks.insert(s.stacks.end(), one.stacks.begin(), one.stacks.end());
    s.cores = {0, 0, 0, 0, 1, 1, 1, 1};
    s.core_names = {{1, "cm4"}};
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    const Profile p = attribute(s, symbols, nullptr, {});
    std::ostringstream collapsed;
    write_collapsed(p, collapsed);
    CHECK(collapsed.str() == "core 0;func_a;local_b 2\ncm4;func_a;local_b 2\ncore 0;func_a;func_c;func_c 1\n"
                             "core 0;[truncated];func_c 1\ncm4;func_a;func_c;func_c 1\ncm4;[truncated];func_c 1\n");
    // The JSON names the core beside the frames, which do not repeat it.
    const nlohmann::json doc = to_json(p);
    REQUIRE(doc["stacks"].size() == 6);
    CHECK(doc["stacks"][1]["core"] == "cm4");
    CHECK(doc["stacks"][1]["frames"][0]["function"] == "func_a");
    // The call graph (callgrind, dot) has each core as a root of its own.
    const CallGraph g = call_graph_of(p);
    CHECK(function_named(g, "core 0").inclusive_cost == 4);
    CHECK(function_named(g, "cm4").inclusive_cost == 4);
    CHECK(function_named(g, "func_a").inclusive_cost == 6);
    // Each core's own table is its own chains, without a root for the core.
    REQUIRE(p.cores.size() == 2);
    AttributionOptions by_stack;
    by_stack.by = Grouping::stack;
    const Profile rows = attribute(s, symbols, nullptr, by_stack);
    std::map<std::string, double> names;
    for (const Row& row : rows.cores[1].rows)
        names[row.name] = row.samples;
    CHECK(names == std::map<std::string, double>{
                       {"func_a;local_b", 2}, {"func_a;func_c;func_c", 1}, {"[truncated];func_c", 1}});
    // One core: no root for it (the first test's lines).
    std::ostringstream single;
    write_collapsed(unwound_profile(), single);
    CHECK(single.str().find("core") == std::string::npos);
}

TEST_CASE("speedscope: one sampled profile, frames shared, weights adding up to the total")
{
    const nlohmann::json j = to_speedscope(unwound_profile());
    CHECK(j["$schema"] == "https://www.speedscope.app/file-format-schema.json");
    const auto& frames = j["shared"]["frames"];
    REQUIRE(frames.size() == 4);   // func_a, local_b, func_c and [truncated]
    REQUIRE(j["profiles"].size() == 1);
    const auto& p = j["profiles"][0];
    CHECK(p["type"] == "sampled");
    CHECK(p["unit"] == "none");
    CHECK(p["endValue"] == 4);
    REQUIRE(p["samples"].size() == 3);
    CHECK(p["weights"] == nlohmann::json::array({2, 1, 1}));
    std::vector<std::string> first;
    for (const auto& index : p["samples"][0])
        first.push_back(frames[index.get<size_t>()]["name"]);
    CHECK(first == std::vector<std::string>{"func_a", "local_b"});
    std::vector<std::string> last;
    for (const auto& index : p["samples"][2])
        last.push_back(frames[index.get<size_t>()]["name"]);
    CHECK(last == std::vector<std::string>{"[truncated]", "func_c"});
}

TEST_CASE("html: unwound stacks give a flame graph, every row a table row, nothing fetched")
{
    Profile p = unwound_profile();
    std::ostringstream out;
    write_html({p, nullptr, {}}, out);
    const std::string page = out.str();
    CHECK(page.find("Content-Security-Policy\" content=\"default-src 'none'") != std::string::npos);
    CHECK(page.find("id=\"flamegraph\"") != std::string::npos);
    CHECK(page.find("id=\"icicle\"") == std::string::npos);
    // The origin's "<stacks>" is escaped, never markup.
    CHECK(page.find("constructed &lt;stacks&gt;") != std::string::npos);
    CHECK(page.find("<stacks>") == std::string::npos);
    // Table: one row per profile row (tbody rows start with <tr><td).
    CHECK(count_of(page, "<tr><td class=\"name\">") == p.rows.size());
    // Flame graph: the root plus func_a, local_b, func_c (under func_a), func_c (under it),
    // and the truncated stack's func_c under a [truncated] box: 7 boxes in the tree the page
    // draws, each as wide as the samples whose chain passes through it.
    const nlohmann::json tree = flame_tree(page);
    CHECK(boxes_of(tree) == 7);
    CHECK(tree["name"] == "all");
    CHECK(tree["value"] == 4);
    const auto truncated = std::find_if(tree["children"].begin(), tree["children"].end(),
                                        [](const nlohmann::json& box) { return box["name"] == "[truncated]"; });
    REQUIRE(truncated != tree["children"].end());
    CHECK((*truncated)["value"] == 1);
    CHECK(page.find("data-truncated=\"[truncated]\"") != std::string::npos);
    // The library and our script are inline; nothing to fetch.
    CHECK(page.find("d3js.org v7") != std::string::npos);
    CHECK(page.find("inclusive %") != std::string::npos);
    // No attribute that would load anything, in the page's markup and our script (d3's own
    // code, inlined, sets an Image's src in d3.image, which the page never calls; the CSP
    // would block it, and the Chromium tests see no request).
    const std::string markup = without_flame_graph_library(page);
    CHECK(markup.size() < page.size());
    CHECK(markup.find("src=") == std::string::npos);
    CHECK(markup.find("href=") == std::string::npos);
}

TEST_CASE("html: a function name cannot end the flame graph's data script")
{
    Profile p = unwound_profile();
    const std::string hostile = "f</script><script>alert(1)</script><!--";
    for (StackRow& stack : p.stacks)
        for (StackFrame& frame : stack.frames)
            if (frame.function == "local_b")
                frame.function = hostile;
    std::ostringstream out;
    write_html({p, nullptr, {}}, out);
    const std::string page = out.str();
    CHECK(page.find("alert(1)</script>") == std::string::npos);
    CHECK(page.find("<!--") == std::string::npos);
    // The tree still carries the name as it is.
    const nlohmann::json tree = flame_tree(page);
    bool found = false;
    std::function<void(const nlohmann::json&)> look = [&](const nlohmann::json& node) {
        found = found || node["name"] == hostile;
        for (const nlohmann::json& child : node.value("children", nlohmann::json::array()))
            look(child);
    };
    look(tree);
    CHECK(found);
}

TEST_CASE("html: a flat profile gives an icicle; source lines annotated, or a note when missing")
{
    const Profile p = flat_profile();
    Profile lines;
    lines.total = 4;
    lines.by = Grouping::line;
    Row hot;
    hot.name = "/src/app.c:3";
    hot.function = "func_a";
    hot.samples = 2;
    Row other;
    other.name = "/src/lib.c:9";
    other.function = "local_b";
    other.samples = 1;
    lines.rows = {hot, other};
    auto reader = [](const std::string& path) -> std::optional<std::string> {
        if (path == "/src/app.c")
            return std::string("int a;\nint b;\nvoid func_a(void) { spin(); }\nint c;\n");
        return std::nullopt;
    };
    std::ostringstream out;
    write_html({p, &lines, reader}, out);
    const std::string page = out.str();
    CHECK(page.find("id=\"icicle\"") != std::string::npos);
    CHECK(page.find("inclusive %") == std::string::npos);   // flat: inclusive is self
    // app.c line 3 holds 2 of 4 samples, shown with its text.
    CHECK(page.find("<span class=\"hot\" data-line=\"3\"><span class=\"num\">3</span><span class=\"share\">50.00 %"
                    "</span>  void func_a(void) { spin(); }") != std::string::npos);
    // lib.c is not on this machine: said so, with its line's share.
    CHECK(page.find("not on this machine") != std::string::npos);
    CHECK(page.find("<span class=\"num\">9</span><span class=\"share\">25.00 %") != std::string::npos);
}

TEST_CASE("truncation: counted by reason in the profile, the text report and JSON; lower bounds past 1 %")
{
    const Profile p = unwound_profile();
    CHECK(p.truncation.samples == 1);
    CHECK(p.truncation.unwound == 4);
    CHECK(p.truncation.percent() == doctest::Approx(25.0));
    REQUIRE(p.truncation.by_reason.size() == 1);
    CHECK(p.truncation.by_reason[0].first == describe(UnwindStop::bad_frame));
    CHECK(p.truncation.inclusive_lower_bounds());

    std::ostringstream text;
    write_text(p, text);
    CHECK(text.str().find("stacks: 1 of 4 chains truncated (25.00 % of the samples): an implausible frame "
                          "(corrupted stack?): 1; inclusive shares are lower bounds\n") != std::string::npos);
    CHECK(text.str().find("incl>=%") != std::string::npos);

    const nlohmann::json j = to_json(p);
    CHECK(j["truncation"]["samples"] == 1);
    CHECK(j["truncation"]["unwound_samples"] == 4);
    CHECK(j["truncation"]["by_reason"][std::string(describe(UnwindStop::bad_frame))] == 1);
    CHECK(j["truncation"]["inclusive_lower_bounds"] == true);

    std::ostringstream html;
    write_html({p, nullptr, {}}, html);
    CHECK(html.str().find("<th>inclusive % (lower bound)</th>") != std::string::npos);
    CHECK(html.str().find("<dt>truncated chains</dt><dd>stacks: 1 of 4 chains truncated") != std::string::npos);
}

TEST_CASE("truncation: one chain in 200 (0.5 %) leaves the inclusive shares unmarked; flat profiles say nothing")
{
    const SymbolTable symbols = SymbolTable::load(Image::open(fixture));
    SampleSet s;
    s.pcs.assign(200, 0x08000012);
    s.stacks.assign(200, CallStack{{0x08000004}, false});
    s.stacks[0] = {{}, true, UnwindStop::depth};
    const Profile p = attribute(s, symbols, nullptr, {});
    CHECK(p.truncation.samples == 1);
    CHECK_FALSE(p.truncation.inclusive_lower_bounds());
    std::ostringstream text;
    write_text(p, text);
    CHECK(text.str().find("stacks: 1 of 200 chains truncated (0.50 % of the samples): depth limit: 1\n") !=
          std::string::npos);
    CHECK(text.str().find("  incl %") != std::string::npos);

    std::ostringstream flat;
    write_text(flat_profile(), flat);
    CHECK(flat.str().find("stacks:") == std::string::npos);
    CHECK(to_json(flat_profile()).count("truncation") == 0);
}

TEST_CASE("truncation: the record summary line counts the chain ends of the sampler's summary")
{
    SamplerFigures summary;
    summary.run_duty = 0.5;
    summary.stacks = StackFigures{3.0, 0.0,
                                  {{std::string(describe(UnwindStop::root)), 990},
                                   {std::string(describe(UnwindStop::psp_unknown)), 10}}};
    CHECK(describe_sampler(summary) ==
          "target running 50.0 % of the time; stacks: 10 of 1000 chains truncated (1.00 % of the samples): "
          "the thread stack pointer (PSP) is unknown: 10");
}
