#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "mcuprof/core/report.h"

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
