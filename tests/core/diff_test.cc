#include <doctest/doctest.h>

#include "mcuprof/core/diff.h"

using namespace mcuprof::core;

namespace {

Profile profile(double total, bool exact, std::vector<std::pair<std::string, double>> rows)
{
    Profile p;
    p.total = total;
    p.exact = exact;
    for (auto& [name, n] : rows) {
        Row r;
        r.name = name;
        r.samples = n;
        p.rows.push_back(r);
    }
    return p;
}

const DiffRow& row(const ProfileDiff& d, const std::string& name)
{
    for (const DiffRow& r : d.rows)
        if (r.name == name)
            return r;
    FAIL("no row " << name);
    return d.rows.front();
}

} // namespace

TEST_CASE("diff: two sampled profiles, the pooled two-proportion z")
{
    // f: 600/1000 against 500/1000. Pooled p = 0.55, se = sqrt(.55 * .45 * 2 / 1000) = 0.022249,
    // z = -0.1 / 0.022249 = -4.4947.
    const ProfileDiff d = diff_profiles(profile(1000, false, {{"f", 600}, {"g", 400}}),
                                        profile(1000, false, {{"f", 500}, {"g", 480}, {"h", 20}}));
    CHECK(row(d, "f").z == doctest::Approx(-4.4947).epsilon(1e-4));
    CHECK(row(d, "f").delta_pp == doctest::Approx(-10.0));
    CHECK(row(d, "f").flagged);
    // g: 400 vs 480: p = .44, se = sqrt(.44 * .56 * .002) = 0.022199, z = 3.6038.
    CHECK(row(d, "g").z == doctest::Approx(3.6038).epsilon(1e-4));
    // h: 0 vs 20: p = .01, se = sqrt(.01 * .99 * .002) = 0.0044497, z = 4.4947.
    CHECK(row(d, "h").z == doctest::Approx(4.4947).epsilon(1e-4));
    CHECK(d.rows.front().name == "f");   // sorted by the larger share
}

TEST_CASE("diff: against a census only the sampled side varies")
{
    // 650 of 1000 samples against an exact 70 %: se = sqrt(.7 * .3 / 1000) = 0.014491, z = 3.4503.
    const ProfileDiff d = diff_profiles(profile(1000, false, {{"f", 650}}), profile(10000, true, {{"f", 7000}}));
    CHECK(row(d, "f").z == doctest::Approx(3.4503).epsilon(1e-4));
    CHECK(row(d, "f").flagged);
    const ProfileDiff loose = diff_profiles(profile(1000, false, {{"f", 650}}), profile(10000, true, {{"f", 7000}}), 4);
    CHECK_FALSE(row(loose, "f").flagged);
}
