#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "mcuprof/profile/diff.h"
#include "mcuprof/image/symbols.h"

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

TEST_CASE("diff: a side of correlated bursts varies by each row's design effect")
{
    // f: 600/1000 (A) against 500/1000 (B), as above, but A's reads came in bursts: its f row's
    // standard error is 3 times the binomial one (design effect 9), its g row's 2 (4); B is
    // binomial. z = -0.1 / sqrt(.55 * .45 * (9 / 1000 + 1 / 1000)) = -0.1 / 0.049749 = -2.0101.
    Profile a = profile(1000, false, {{"f", 600}, {"g", 400}});
    a.errors.bursts = 63;
    a.errors.largest_ratio = 3;
    a.rows[0].share.stderr_pp = 3 * 100 * std::sqrt(0.6 * 0.4 / 1000);
    a.rows[1].share.stderr_pp = 2 * 100 * std::sqrt(0.6 * 0.4 / 1000);
    const ProfileDiff d = diff_profiles(a, profile(1000, false, {{"f", 500}, {"g", 480}, {"h", 20}}));
    CHECK(row(d, "f").z == doctest::Approx(-2.0101).epsilon(1e-4));
    // g: pooled .44, sqrt(.44 * .56 * (4 + 1) / 1000) = 0.035100, z = 0.08 / 0.035100 = 2.2792.
    CHECK(row(d, "g").z == doctest::Approx(2.2792).epsilon(1e-4));
    // h, which A lacks, gets A's largest design effect: pooled .01, sqrt(.01 * .99 * 10 / 1000),
    // z = 0.02 / 0.0099499 = 2.0101.
    CHECK(row(d, "h").z == doctest::Approx(2.0101).epsilon(1e-4));
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

TEST_CASE("diff: a side whose errors are lower bounds gives upper-bound z-scores that flag nothing")
{
    // Two gmon.out profiles (back-to-back PCSR reads, no bursts: errors.lower_bounds). f: 600 of
    // 1000 against 500 of 1000, the binomial z of the first case, -4.4947: with independent reads
    // far beyond 3, but the reads repeat each other by an unknown factor, so that z only bounds
    // the true one from above.
    Profile a = profile(1000, false, {{"f", 600}, {"g", 400}});
    Profile b = profile(1000, false, {{"f", 500}, {"g", 480}, {"h", 20}});
    a.errors.lower_bounds = true;
    b.errors.lower_bounds = true;
    const ProfileDiff d = diff_profiles(a, b);
    CHECK(row(d, "f").z == doctest::Approx(-4.4947).epsilon(1e-4));
    for (const DiffRow& r : d.rows) {
        CAPTURE(r.name);
        CHECK(r.z_upper_bound);
        CHECK_FALSE(r.flagged);
    }
    CHECK(d.a_lower_bounds);
    CHECK(flagged_summary(d).find("0 of 3 rows") == 0);
    CHECK(flagged_summary(d).find("both sides' standard errors are lower bounds") != std::string::npos);
    // One such side is enough; against a census only the sampled side counts, so a census
    // carrying the flag (it cannot have errors) changes nothing.
    Profile independent = profile(1000, false, {{"f", 500}, {"g", 480}, {"h", 20}});
    const ProfileDiff one = diff_profiles(a, independent);
    CHECK_FALSE(row(one, "f").flagged);
    CHECK(row(one, "f").z_upper_bound);
    CHECK(flagged_summary(one).find("A's standard errors are lower bounds") != std::string::npos);
    Profile census = profile(10000, true, {{"f", 7000}});
    census.errors.lower_bounds = true;
    const ProfileDiff against_census = diff_profiles(profile(1000, false, {{"f", 650}}), census);
    CHECK(row(against_census, "f").z == doctest::Approx(3.4503).epsilon(1e-4));
    CHECK(row(against_census, "f").flagged);
    CHECK_FALSE(row(against_census, "f").z_upper_bound);
    // The text and JSON say so.
    std::ostringstream text;
    write_text(d, text, 0);
    CHECK(text.str().find("^ f") != std::string::npos);
    const nlohmann::json json = to_json(d);
    CHECK(json["a"]["errors_lower_bounds"] == true);
    CHECK(json["rows"][0]["z_upper_bound"] == true);
    CHECK(json["rows"][0]["flagged"] == false);
}

namespace {

const char* const on_chip = "on-chip sampler dump, raw PCs";

Profile named(Profile p, const std::string& origin)
{
    p.origin = origin;
    return p;
}

// irq_on: cpsie i; bx lr (4 bytes at 0x08000100), after locked (0x080000c0, 64 bytes).
SymbolTable firmware(uint16_t first_instruction)
{
    std::vector<Function> functions = {{0x080000c0, 64, "locked", {}, {}, {}}, {0x08000100, 4, "irq_on", {}, {}, {}},
                                       {0x08000104, 60, "hot_a", {}, {}, {}}};
    CodeSection text{".text", 0x080000c0, 0x80, std::vector<uint8_t>(0x80, 0)};
    text.bytes[0x40] = uint8_t(first_instruction);
    text.bytes[0x41] = uint8_t(first_instruction >> 8);
    text.bytes[0x42] = 0x70;   // bx lr = 0x4770
    text.bytes[0x43] = 0x47;
    return SymbolTable::from(functions, {text});
}

bool has_hint(const ProfileDiff& d, const std::string& kind, const std::string& function)
{
    for (const DiffHint& h : d.hints)
        if (h.kind == kind && h.function == function)
            return true;
    return false;
}

} // namespace

TEST_CASE("diff hints: a tiny function at cpsie i hot on-chip but not in the truth is the interrupt shadow")
{
    // The seed's scenario 3: locked holds 30 % by the truth; on-chip, irq_on takes it.
    const Profile truth = profile(10010, true, {{"locked", 3000}, {"irq_on", 10}, {"hot_a", 7000}});
    const Profile dump = named(profile(10000, false, {{"irq_on", 2992}, {"hot_a", 7008}}), on_chip);
    const SymbolTable code = firmware(0xB662);   // cpsie i
    const ProfileDiff d = diff_profiles(truth, dump, 3, &code);
    REQUIRE(has_hint(d, "interrupt-shadow", "irq_on"));
    CHECK(d.hints.front().message.find("cpsie i at 0x08000100") != std::string::npos);
    // locked lost its samples to irq_on: explained by the shadow, not an invisible handler.
    CHECK_FALSE(has_hint(d, "invisible-handler", "locked"));

    // Not at cpsie i (a nop there): no shadow hint; nor without the code, nor when both are on-chip.
    const SymbolTable nop = firmware(0xBF00);
    CHECK_FALSE(has_hint(diff_profiles(truth, dump, 3, &nop), "interrupt-shadow", "irq_on"));
    CHECK_FALSE(has_hint(diff_profiles(truth, dump, 3, nullptr), "interrupt-shadow", "irq_on"));
    CHECK_FALSE(has_hint(diff_profiles(named(truth, on_chip), dump, 3, &code), "interrupt-shadow", "irq_on"));
}

TEST_CASE("diff hints: a function with no on-chip sample that the other side sees is an invisible handler")
{
    // The seed's scenario 4: isr_work 29.97 % in the truth, none on-chip, main gets it.
    const Profile truth = profile(10000, true, {{"main", 4000}, {"isr_work", 2997}, {"EXTI0_IRQHandler", 3},
                                                {"hot_b", 3000}});
    const Profile dump = named(profile(10000, false, {{"main", 7035}, {"hot_b", 2965}}), on_chip);
    const ProfileDiff d = diff_profiles(truth, dump);
    REQUIRE(has_hint(d, "invisible-handler", "isr_work"));
    CHECK(d.hints.front().message.find("main has +30.35 points on-chip") != std::string::npos);
    // 0.03 % is within 3 standard errors of 0 with 10000 samples: no hint.
    CHECK_FALSE(has_hint(d, "invisible-handler", "EXTI0_IRQHandler"));
    // Two halting samplers, or the other way round: the on-chip side is the one that is blind.
    CHECK(diff_profiles(truth, named(dump, "recording (gdb)")).hints.empty());
    CHECK_FALSE(has_hint(diff_profiles(named(truth, on_chip), named(profile(10000, false, {{"main", 7035}, {"hot_b", 2965}}), "recording")),
                         "invisible-handler", "isr_work"));
}

TEST_CASE("diff hints: lockstep findings and rows caught at too few addresses")
{
    Profile truth = profile(100000, true, {{"hot_a", 70000}, {"run", 30000}});
    truth.rows[0].distinct_addresses = 100;
    truth.rows[1].distinct_addresses = 10;
    Profile sampled = profile(10000, false, {{"hot_a", 7000}, {"run", 3000}});
    sampled.rows[0].distinct_addresses = 3;    // 7000 samples on 3 of 100 addresses
    sampled.rows[1].distinct_addresses = 2;    // only 10 addresses to see: not judged
    const ProfileDiff d = diff_profiles(truth, sampled);
    CHECK(has_hint(d, "few-addresses", "hot_a"));
    CHECK_FALSE(has_hint(d, "few-addresses", "run"));
    CHECK_FALSE(has_hint(d, "lockstep", ""));

    sampled.rows[0].distinct_addresses = 60;   // spread as independent samples would be
    sampled.lockstep = LockstepFinding{81, 15, 10000, 1.0, 0.3};
    const ProfileDiff locked = diff_profiles(truth, sampled);
    CHECK_FALSE(has_hint(locked, "few-addresses", "hot_a"));
    REQUIRE(has_hint(locked, "lockstep", ""));
    CHECK(locked.hints.front().message.find("B's samples repeat every 81 samples over 15") != std::string::npos);
}

TEST_CASE("diff hints: a side halted by wall clock in an emulator carries its warning as a hint")
{
    const Profile truth = profile(100000, true, {{"hot_a", 70000}, {"run", 30000}});
    Profile wall = profile(1000, false, {{"hot_a", 690}, {"run", 310}});
    const ProfileDiff plain = diff_profiles(wall, truth);
    CHECK_FALSE(has_hint(plain, "emulator-bias", ""));

    wall.warnings.push_back({"emulator-bias", "QEMU halted by wall clock"});
    wall.warnings.push_back({"input", "something else"});
    const ProfileDiff flagged = diff_profiles(wall, truth);
    REQUIRE(has_hint(flagged, "emulator-bias", ""));
    for (const DiffHint& h : flagged.hints)
        if (h.kind == "emulator-bias")
            CHECK(h.message == "A: QEMU halted by wall clock");
}

TEST_CASE("diff: two censuses differ by no chance, so every row that moved is flagged and gates")
{
    // f: 600 of 1000 instructions against 601 of 1000: +0.1 pp, exact on both sides.
    Profile a = profile(1000, true, {{"f", 600}, {"g", 400}});
    Profile b = profile(1000, true, {{"f", 601}, {"g", 399}});
    const ProfileDiff d = diff_profiles(a, b);
    CHECK(row(d, "f").z == INFINITY);
    CHECK(row(d, "g").z == -INFINITY);
    CHECK(row(d, "f").flagged);
    CHECK(row(d, "g").flagged);
    CHECK(regressions(d, 0.05).size() == 1);     // f grew by 0.1 pp, more than 0.05
    CHECK(regressions(d, 0.1 + 1e-9).empty());
    CHECK(flagged_summary(d) == "2 of 2 rows moved; both sides are exact counts, so every move is real");
    // A row that did not move stays unflagged.
    const ProfileDiff same = diff_profiles(a, a);
    CHECK_FALSE(row(same, "f").flagged);
    CHECK(row(same, "f").z == 0);
}

TEST_CASE("diff: the runs' totals and their ratio, when both sides know them")
{
    Profile a = profile(1066725, true, {{"f", 1066725}});
    Profile b = profile(2412111, true, {{"f", 2412111}});
    ProfileDiff d = diff_profiles(a, b);
    CHECK_FALSE(total_ratio(d));   // the profiles carry no run total
    a.run_instructions = 1066725;
    b.run_instructions = 2412111;
    d = diff_profiles(a, b);
    REQUIRE(total_ratio(d));
    // 2412111 / 1066725 = 2.2612304 (by hand), +126.12 %.
    CHECK(*total_ratio(d) == doctest::Approx(2.2612304).epsilon(1e-7));
    CHECK(totals_summary(d) == "instructions of the whole run: A 1066725, B 2412111, B/A 2.261 (+126.12 %)");
    CHECK(total_grew(d, 126));
    ProfileDiff tenth;   // 1100 over 1000 is exactly 10 % more: not more than 10
    tenth.a_instructions = 1000;
    tenth.b_instructions = 1100;
    CHECK_FALSE(total_grew(tenth, 10));
    CHECK(total_grew(tenth, 9.99));
    CHECK_FALSE(total_grew(d, 126.2));
    // The other way round the run shrank: no gate fails however low its bound.
    const ProfileDiff back = diff_profiles(b, a);
    CHECK_FALSE(total_grew(back, 0));
    CHECK(total_grew(back, -60));   // -55.78 % is more than -60 %
    // One side without a total: no ratio, no line.
    b.run_instructions.reset();
    CHECK(totals_summary(diff_profiles(a, b)).empty());
}
