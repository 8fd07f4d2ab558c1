#include <doctest/doctest.h>

#include "mcuprof/profile/stats.h"

using mcuprof::core::share_of;
using mcuprof::core::share_with_variance;
using mcuprof::core::Share;

TEST_CASE("stats: standard error of a share is sqrt(p(1-p)/N)")
{
    // 7000 of 10000: p = 0.7, sqrt(0.21 / 10000) = 0.0045826 -> 0.45826 points.
    const auto s = share_of(7000, 10000, false);
    CHECK(s.percent == doctest::Approx(70.0));
    CHECK(s.stderr_pp == doctest::Approx(0.458258).epsilon(1e-5));
    // The seed's spread figure for a 70 % share over 100 samples: 4.58 points.
    CHECK(share_of(70, 100, false).stderr_pp == doctest::Approx(4.5826).epsilon(1e-4));
}

TEST_CASE("stats: the Wilson interval stays inside 0..100 and brackets the share")
{
    // 0 of 10: the upper bound is z^2 / (n + z^2) = 3.8415 / 13.8415 = 27.753 %.
    const auto none = share_of(0, 10, false);
    CHECK(none.low == doctest::Approx(0.0));
    CHECK(none.high == doctest::Approx(27.753).epsilon(1e-4));
    // 10 of 10 mirrors it.
    const auto all = share_of(10, 10, false);
    CHECK(all.high == doctest::Approx(100.0));
    CHECK(all.low == doctest::Approx(72.247).epsilon(1e-4));
    // 50 of 100: centre 0.5, half-width 1.96 * sqrt(0.25/100 + 3.8415/40000) / 1.038415 = 0.09617.
    const auto half = share_of(50, 100, false);
    CHECK(half.low == doctest::Approx(40.383).epsilon(1e-4));
    CHECK(half.high == doctest::Approx(59.617).epsilon(1e-4));
}

TEST_CASE("stats: a census has no sampling error")
{
    const auto s = share_of(3504, 5022, true);
    CHECK(s.percent == doctest::Approx(69.773).epsilon(1e-4));
    CHECK(s.stderr_pp == 0.0);
    CHECK(s.low == s.percent);
    CHECK(s.high == s.percent);
    CHECK(share_of(1, 0, false).percent == 0.0);
}

TEST_CASE("stats: a share with a variance from elsewhere: its root is the error, few degrees widen the interval")
{
    // p = 0.5, variance 0.01: a standard error of 10 points, an effective 25 samples.
    const Share many = share_with_variance(50, 100, 0.01, 1000);
    CHECK(many.percent == doctest::Approx(50));
    CHECK(many.stderr_pp == doctest::Approx(10));
    CHECK((many.high - many.low) / 2 == doctest::Approx(18.5).epsilon(0.05));   // Wilson at n = 25: +-18.5
    // Two degrees of freedom: Student's t 4.303 against 1.960, so Wilson's interval at an
    // effective 25 / (4.303 / 1.960)^2 = 5.2 samples: +-32.6, beyond 3 standard errors each side.
    const Share few = share_with_variance(50, 100, 0.01, 2);
    CHECK(few.stderr_pp == doctest::Approx(10));
    CHECK((few.high - few.low) / 2 == doctest::Approx(32.6).epsilon(0.05));
    CHECK(few.low < 20);
    CHECK(few.high > 80);
    CHECK(few.low >= 0);
    CHECK(few.high <= 100);
}
