#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "mcuprof/profile/decay.h"
#include "mcuprof/image/error.h"

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

namespace {

// One read of a burst-correlated series: its row and its time.
struct Read {
    int row = 0;
    double at = 0;
    bool starts_burst = false;
};

// A core that stays in its function for a while (tests/core/attribution_test.cc's model): each
// read is the function of the read before with probability `stay`, else a fresh draw from the
// shares 60, 30, 10 %, which stay the chain's stationary shares; the first read of a burst is a
// fresh draw (the bursts are independent, as after a random wait). Burst c is read at time c.
std::vector<Read> burst_series(std::mt19937& random, int bursts, int reads, double stay)
{
    auto uniform = [&] { return double(random()) / 4294967296.0; };   // portable, unlike std's distributions
    auto draw = [&] {
        const double u = uniform();
        return u < 0.6 ? 0 : u < 0.9 ? 1 : 2;
    };
    std::vector<Read> series;
    for (int c = 0; c < bursts; ++c) {
        int row = draw();
        for (int i = 0; i < reads; ++i) {
            if (i > 0 && uniform() >= stay)
                row = draw();
            series.push_back({row, double(c), i == 0});
        }
    }
    return series;
}

const char* const row_names[3] = {"a", "b", "c"};

DecayingTally tally_of(const std::vector<Read>& series, std::optional<double> half_life)
{
    DecayingTally t(half_life);
    for (const Read& r : series)
        t.add(row_names[r.row], r.at, {}, r.starts_burst);
    return t;
}

} // namespace

TEST_CASE("decay: bursts without decay give report's errors from the spread between bursts")
{
    // Bursts [a a b] [b b] [a b b b]: p(a) = 3/9; Y_c - p m_c = 2 - 1, 0 - 2/3, 1 - 4/3, whose
    // squares sum to 14/9; var = 3/2 * (14/9) / 9^2 = 21/729 (docs/live.md's formula).
    DecayingTally t(std::nullopt);
    const char* keys[] = {"a", "a", "b", "b", "b", "a", "b", "b", "b"};
    for (int i = 0; i < 9; ++i)
        t.add(keys[i], i, {keys[i]}, i == 0 || i == 3 || i == 5);
    CHECK(t.errors().bursts == 3);
    CHECK(t.errors().effective_bursts == 3);
    const auto rows = t.ranked();
    const auto& a = entry(rows, "a");
    CHECK(a.share.percent == doctest::Approx(100.0 / 3));
    CHECK(a.share.stderr_pp == doctest::Approx(100.0 * std::sqrt(21.0 / 729)));
    CHECK(entry(rows, "b").share.stderr_pp == doctest::Approx(100.0 * std::sqrt(21.0 / 729)));   // its complement
    CHECK(a.inclusive.stderr_pp == doctest::Approx(a.share.stderr_pp));   // the same estimator
    // 2 degrees of freedom: the interval is wider than the normal one of the same error.
    CHECK(a.share.high - a.share.low > 2 * 1.96 * a.share.stderr_pp);
}

TEST_CASE("decay: no mark, or one burst only, stays binomial")
{
    DecayingTally halting(std::nullopt), one(std::nullopt);
    for (int i = 0; i < 10; ++i) {
        halting.add(i < 4 ? "a" : "b", i);
        one.add(i < 4 ? "a" : "b", i, {}, i == 0);
    }
    for (const DecayingTally* t : {&halting, &one}) {
        CHECK(t->errors().bursts == 0);
        CHECK(entry(t->ranked(), "a").share.stderr_pp == doctest::Approx(100.0 * std::sqrt(0.4 * 0.6 / 10)));
    }
    // Reads before the first mark are a burst of their own: two bursts, [a a a a b] [b b b b b].
    DecayingTally late(std::nullopt);
    for (int i = 0; i < 10; ++i)
        late.add(i < 4 ? "a" : "b", i, {}, i == 5);
    CHECK(late.errors().bursts == 2);
    // Y_c - p m_c = 4 - 2, 0 - 2: var = 2 * 8 / 100.
    CHECK(entry(late.ranked(), "a").share.stderr_pp == doctest::Approx(100.0 * std::sqrt(0.16)));
}

TEST_CASE("decay: a half-life that forgets all but the newest burst gives binomial errors, and says so")
{
    // Bursts one time unit apart, a half-life of 0.1: each older burst weighs 2^-10 of the
    // next, so k = (sum W_c)^2 / sum W_c^2 is about 1.
    DecayingTally t(0.1);
    for (int c = 0; c < 5; ++c)
        for (int i = 0; i < 4; ++i)
            t.add(i < 2 ? "a" : "b", c, {}, i == 0);
    CHECK(t.errors().bursts == 5);
    CHECK(t.errors().effective_bursts < 1.01);
    const double n_eff = t.effective_samples();
    CHECK(entry(t.ranked(), "a").share.stderr_pp == doctest::Approx(100.0 * std::sqrt(0.25 / n_eff)));
}

TEST_CASE("decay: decayed burst errors equal the formula by hand, across rebasing")
{
    // Half-life 1, 1200 bursts one time unit apart: weights reach 2^1200 and are rescaled
    // twice; the tally must give what the formula gives on weights 2^(t - t_last).
    std::mt19937 random(7);
    const std::vector<Read> series = burst_series(random, 1200, 8, 0.9);
    const DecayingTally t = tally_of(series, 1.0);
    const double last = series.back().at;
    double total = 0, burst_squares = 0, open = 0;
    double weight[3] = {}, squares[3] = {}, cross[3] = {}, y[3] = {};
    auto close = [&] {
        for (int r = 0; r < 3; ++r) {
            squares[r] += y[r] * y[r];
            cross[r] += y[r] * open;
            y[r] = 0;
        }
        burst_squares += open * open;
        open = 0;
    };
    for (size_t i = 0; i < series.size(); ++i) {
        if (i > 0 && series[i].starts_burst)
            close();
        const double w = std::exp2(series[i].at - last);
        weight[series[i].row] += w;
        y[series[i].row] += w;
        open += w;
        total += w;
    }
    close();
    const double k = total * total / burst_squares;
    CHECK(t.errors().bursts == 1200);
    CHECK(t.errors().effective_bursts == doctest::Approx(k));
    // An endless series of bursts of equal weight ratio 1/2: k = (1 + r) / (1 - r) = 3.
    CHECK(k == doctest::Approx(3.0));
    const auto rows = t.ranked();
    for (int r = 0; r < 3; ++r) {
        if (weight[r] == 0)
            continue;
        const double p = weight[r] / total;
        const double var = k / (k - 1) * (squares[r] - 2 * p * cross[r] + p * p * burst_squares) / (total * total);
        CAPTURE(r);
        CHECK(entry(rows, row_names[r]).share.percent == doctest::Approx(100 * p));
        CHECK(entry(rows, row_names[r]).share.stderr_pp == doctest::Approx(100 * std::sqrt(var)));
    }
}

TEST_CASE("decay: decayed burst errors hold the true variance of correlated reads, and their intervals cover it")
{
    // 400 runs of 120 bursts of 16 reads, a half-life of 20 bursts (k about 57). The decayed
    // share p = sum w_i I_i / W is linear in the reads' indicators I_i (the weights are fixed
    // by the times), so its variance is exact: p(1-p) sum over pairs i, j of one burst of
    // w_i w_j stay^|i-j| (the chain's correlation at lag d is stay^d), over W^2; bursts are
    // independent. Asserted: the mean estimated variance is that within 6 % (its relative
    // standard error over 400 runs is about sqrt(2/57)/20 = 0.9 %; the k/(k-1) correction,
    // exact for equal weights, is 1.2 % short for these), and the 95 % intervals cover the
    // true shares 1140 +- 7.5 times of 1200 (95 %), where Kish's binomial ones, blind to the
    // correlation (a design effect near 8), cover far fewer.
    constexpr int runs = 400, bursts = 120, reads = 16;
    constexpr double stay = 0.9, half_life = 20;
    const double truth[3] = {0.6, 0.3, 0.1};
    std::mt19937 random(20261202);
    // The true variance's factor: the weights are the same in every run.
    double total = 0, pairs = 0;
    for (int c = 0; c < bursts; ++c) {
        const double w = std::exp2((c - (bursts - 1)) / half_life);
        total += reads * w;
        for (int i = 0; i < reads; ++i)
            for (int j = 0; j < reads; ++j)
                pairs += w * w * std::pow(stay, std::abs(i - j));
    }
    double estimated[3] = {}, binomial[3] = {};
    int covered = 0, covered_binomial = 0;
    for (int run = 0; run < runs; ++run) {
        const DecayingTally t = tally_of(burst_series(random, bursts, reads, stay), half_life);
        const auto rows = t.ranked();
        const double n_eff = t.effective_samples();
        for (int r = 0; r < 3; ++r) {
            auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& e) { return e.key == row_names[r]; });
            if (it == rows.end())
                continue;
            const double se = it->share.stderr_pp / 100;
            estimated[r] += se * se / runs;
            const double p = it->share.percent / 100;
            binomial[r] += p * (1 - p) / n_eff / runs;
            covered += it->share.low <= 100 * truth[r] && 100 * truth[r] <= it->share.high;
            covered_binomial += std::abs(p - truth[r]) <= 1.96 * std::sqrt(p * (1 - p) / n_eff);
        }
    }
    for (int r = 0; r < 3; ++r) {
        const double true_variance = truth[r] * (1 - truth[r]) * pairs / (total * total);
        CAPTURE(r);
        MESSAGE("row " << std::string(row_names[r]) << ": mean estimated variance / true " << estimated[r] / true_variance
                       << ", binomial / true " << binomial[r] / true_variance);
        CHECK(estimated[r] == doctest::Approx(true_variance).epsilon(0.06));
        CHECK(binomial[r] < 0.3 * true_variance);
    }
    MESSAGE("decayed burst intervals covered " << covered << " of 1200, binomial " << covered_binomial);
    CHECK(covered >= 1100);   // 95 % less 5 standard errors
    CHECK(covered <= 1170);   // and not so wide that it covers everything
    CHECK(covered_binomial < 960);
}
