#include <doctest/doctest.h>

#include <cmath>

#include "mcuprof/core/decay.h"
#include "mcuprof/core/error.h"

using mcuprof::core::DecayingTally;

namespace {

const DecayingTally::Entry& entry(const std::vector<DecayingTally::Entry>& rows, const std::string& key)
{
    for (const auto& e : rows)
        if (e.key == key)
            return e;
    FAIL("no row " << key);
    return rows.front();
}

} // namespace

TEST_CASE("decay: without a half-life, weights are counts and n_eff is the sample count")
{
    DecayingTally t(std::nullopt);
    for (int i = 0; i < 30; ++i)
        t.add(i % 3 == 0 ? "a" : "b", 1000.0 * i);   // the clock does not matter
    const auto rows = t.ranked();
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].key == "b");
    CHECK(rows[0].weight == 20);
    CHECK(rows[1].weight == 10);
    CHECK(t.samples() == 30);
    CHECK(t.total_weight() == 30);
    CHECK(t.effective_samples() == doctest::Approx(30));
    CHECK(rows[1].share.percent == doctest::Approx(100.0 / 3));
    CHECK(rows[1].share.stderr_pp == doctest::Approx(100.0 * std::sqrt((1.0 / 3) * (2.0 / 3) / 30)));
}

TEST_CASE("decay: weights halve every half-life, n_eff by Kish")
{
    DecayingTally t(2.0);
    t.add("a", 0);
    t.add("b", 2);   // a is now one half-life old
    t.add("b", 4);   // a two, the first b one
    const auto rows = t.ranked();
    // a: 1/4; b: 1/2 + 1 = 3/2; total 7/4; squares 1/16 + 1/4 + 1 = 21/16.
    CHECK(entry(rows, "a").weight == doctest::Approx(0.25));
    CHECK(entry(rows, "b").weight == doctest::Approx(1.5));
    CHECK(t.total_weight() == doctest::Approx(1.75));
    CHECK(entry(rows, "a").share.percent == doctest::Approx(100.0 / 7));
    const double n_eff = (1.75 * 1.75) / (21.0 / 16);
    CHECK(t.effective_samples() == doctest::Approx(n_eff));
    const double p = 1.0 / 7;
    CHECK(entry(rows, "a").share.stderr_pp == doctest::Approx(100.0 * std::sqrt(p * (1 - p) / n_eff)));
}

TEST_CASE("decay: a long run stays finite and forgets what stopped")
{
    // 5000 samples, one per half-life unit of 1: weights would reach 2^5000 without rescaling.
    DecayingTally t(1.0);
    for (int i = 0; i < 5000; ++i)
        t.add(i < 100 ? "init" : "loop", i);
    const auto rows = t.ranked();
    CHECK(rows[0].key == "loop");
    CHECK(std::isfinite(rows[0].weight));
    CHECK(rows[0].weight == doctest::Approx(2.0));   // 1 + 1/2 + 1/4 + ...
    CHECK(entry(rows, "init").weight < 1e-300);
    // n_eff of an endless geometric series with ratio r: (1 + r) / (1 - r) = 3 for r = 1/2.
    CHECK(t.effective_samples() == doctest::Approx(3.0));
}

TEST_CASE("decay: a half-life must be positive")
{
    CHECK_THROWS_AS(DecayingTally(0.0), mcuprof::core::Error);
    CHECK_THROWS_AS(DecayingTally(-1.0), mcuprof::core::Error);
}

TEST_CASE("decay: inclusive shares count each sample once for every function on its stack")
{
    DecayingTally t(std::nullopt);
    // 10 samples: 6 in leaf under mid under main, 4 in main itself. main is on every stack.
    for (int i = 0; i < 6; ++i)
        t.add("leaf", i, {"leaf", "mid", "main"});
    for (int i = 6; i < 10; ++i)
        t.add("main", i, {"main"});
    const auto rows = t.ranked();
    REQUIRE(rows.size() == 3);   // mid was never the leaf, yet has its row
    CHECK(entry(rows, "main").share.percent == doctest::Approx(40));
    CHECK(entry(rows, "main").inclusive.percent == doctest::Approx(100));
    CHECK(entry(rows, "main").inclusive_weight == 10);
    CHECK(entry(rows, "mid").weight == 0);
    CHECK(entry(rows, "mid").inclusive.percent == doctest::Approx(60));
    CHECK(entry(rows, "mid").inclusive.stderr_pp == doctest::Approx(100.0 * std::sqrt(0.6 * 0.4 / 10)));
    CHECK(entry(rows, "leaf").inclusive.percent == doctest::Approx(60));
    CHECK(rows.back().key == "mid");   // ranked by self weight
    CHECK(t.total_weight() == 10);     // a sample counts once in the total, however deep its stack
}
