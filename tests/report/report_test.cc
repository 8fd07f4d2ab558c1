#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/call_graph.h"
#include "mcuprof/profile/diff.h"
#include "mcuprof/report/report.h"

using namespace mcuprof::core;

namespace {

Profile sample_profile()
{
    Profile p;
    p.origin = "test origin";
    p.total = 10000;
    p.distinct_addresses = 15;
    Row a;
    a.name = "hot_a";
    a.samples = 6989;
    a.share = share_of(6989, 10000, false);
    a.address = 0x080002a8;
    a.size = 14;
    Row b;
    b.name = "hot_b";
    b.samples = 1989;
    b.share = share_of(1989, 10000, false);
    p.rows = {a, b};
    p.warnings.push_back({"lockstep", "sampling is in lockstep"});
    return p;
}

} // namespace

TEST_CASE("report: text is the seed's table with a standard-error column and the warnings on top")
{
    std::ostringstream out;
    write_text(sample_profile(), out);
    const std::string text = out.str();
    CHECK(text.find("samples 10000, 15 distinct addresses, by function") != std::string::npos);
    CHECK(text.find("warning: sampling is in lockstep") < text.find("hot_a"));
    // 69.89 %, se sqrt(.6989*.3011/10000) = 0.4587 points.
    CHECK(text.find("   69.89    0.46         6989  hot_a\n") != std::string::npos);
    CHECK(text.find("hot_a") < text.find("hot_b"));
}

TEST_CASE("report: counts print whole, weights (a decaying view) with their tenths")
{
    Profile p = sample_profile();
    p.rows[1].samples = 1989.25;   // a weighted count
    std::ostringstream out;
    write_text(p, out);
    CHECK(out.str().find("         6989  hot_a\n") != std::string::npos);
    CHECK(out.str().find("       1989.2  hot_b\n") != std::string::npos);
}

TEST_CASE("report: --top keeps the first rows and says how many are left")
{
    std::ostringstream out;
    write_text(sample_profile(), out, 1);
    CHECK(out.str().find("hot_b") == std::string::npos);
    CHECK(out.str().find("1 more rows") != std::string::npos);
}

TEST_CASE("report: JSON carries the documented keys")
{
    const nlohmann::json j = to_json(sample_profile());
    CHECK(j["samples"] == 10000);
    REQUIRE(j["functions"].size() == 2);
    CHECK(j["functions"][0]["name"] == "hot_a");
    CHECK(j["functions"][0]["samples"] == 6989);
    CHECK(j["functions"][0]["percent"].get<double>() == doctest::Approx(69.89));
    CHECK(j["functions"][0]["stderr"].get<double>() == doctest::Approx(0.45871).epsilon(1e-4));
    CHECK(j["functions"][0]["address"] == 0x080002a8);
    CHECK(j["functions"][0]["ci95"].size() == 2);
    CHECK(j["warnings"][0]["kind"] == "lockstep");
    CHECK(j["by"] == "function");
    CHECK(j["exact"] == false);
}

namespace {

// A text with its spaces and line breaks gone: a folded name reads whole again.
std::string without_spaces(const std::string& text)
{
    std::string out;
    for (char c : text)
        if (c != ' ' && c != '\n')
            out += c;
    return out;
}

size_t longest_line(const std::string& text)
{
    size_t longest = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        longest = std::max(longest, line.size());
    return longest;
}

} // namespace

TEST_CASE("report: a 3000-character name is whole in the profile, diff and call-graph tables, folded")
{
    std::string scoped = "app::Filter<";   // breaks after ", " and "::"
    while (scoped.size() < 3000)
        scoped += "std::array<unsigned int, 16u>, ";
    scoped += "int>::push(float)";
    const std::string solid(3000, 'x');   // no place to break: cut every 100 characters
    for (const std::string& name : {scoped, solid}) {
        CAPTURE(name.size());
        Profile p = sample_profile();
        p.rows[0].name = name;
        std::ostringstream profile_text;
        write_text(p, profile_text);

        Profile q = sample_profile();
        q.rows[0].name = name;
        q.rows[0].samples = 5000;
        q.rows[0].share = share_of(5000, 10000, false);
        std::ostringstream diff_text;
        write_text(diff_profiles(p, q), diff_text);

        CallGraph graph;
        graph.functions.push_back({name, "", 0, 0x08000100, 10, 10, std::nullopt});
        std::ostringstream graph_text;
        write_call_graph_text(graph, graph_text);

        for (const std::string& text : {profile_text.str(), diff_text.str(), graph_text.str()}) {
            // Nothing cut: the name is there whole once its folding spaces are gone; no line is
            // longer than the numbers (at most 60 characters), an indent of 4 and 100 of the name.
            CHECK(without_spaces(text).find(without_spaces(name)) != std::string::npos);
            CHECK(longest_line(text) <= 60 + 4 + 100);
            CHECK(std::count(text.begin(), text.end(), '\n') >= 30);
        }
    }
}
