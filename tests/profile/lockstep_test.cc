#include <doctest/doctest.h>

#include <numeric>
#include <random>
#include <vector>

#include "mcuprof/profile/lockstep.h"

using mcuprof::core::detect_lockstep;

namespace {

// The seed's reference program as a map from the position inside one 5022-instruction
// iteration to an address: hot_a 3504 instructions of a 4-instruction loop, hot_b 1004,
// hot_c 504, run 10. Addresses are 2 bytes apart inside each loop.
uint32_t address_at(uint32_t position)
{
    if (position < 3504)
        return 0x08000100 + 2 * (position % 4);
    position -= 3504;
    if (position < 1004)
        return 0x08000200 + 2 * (position % 4);
    position -= 1004;
    if (position < 504)
        return 0x08000300 + 2 * (position % 4);
    return 0x08000400 + 2 * (position - 504);
}

} // namespace

TEST_CASE("lockstep: the seed's trap, a fixed period of 11961 instructions over a 5022-instruction loop")
{
    // Each sample advances the position by 11961 mod 5022 = 1917; gcd(1917, 5022) = 27,
    // so the sampler visits 5022 / 27 = 186 points and the sequence repeats every 186.
    CHECK(std::gcd(1917u, 5022u) == 27u);
    std::vector<uint32_t> pcs;
    uint64_t position = 1234;
    for (int i = 0; i < 10000; ++i) {
        pcs.push_back(address_at(uint32_t(position % 5022)));
        position += 11961;
    }
    const auto found = detect_lockstep(pcs);
    REQUIRE(found.has_value());
    CHECK(found->period == 186);
    CHECK(found->match_fraction == doctest::Approx(1.0));
    CHECK(found->chance_fraction < 0.5);
}

TEST_CASE("lockstep: randomized intervals over the same program raise no warning")
{
    std::mt19937 random(7);
    std::uniform_int_distribution<uint32_t> jitter(0, 1023);
    std::vector<uint32_t> pcs;
    uint64_t position = 1234;
    for (int i = 0; i < 10000; ++i) {
        pcs.push_back(address_at(uint32_t(position % 5022)));
        position += 11961 + jitter(random);
    }
    CHECK_FALSE(detect_lockstep(pcs).has_value());
}

TEST_CASE("lockstep: a period that is a multiple of the program's puts every sample on one address")
{
    std::vector<uint32_t> pcs(5000, 0x080002b4);
    const auto found = detect_lockstep(pcs);
    REQUIRE(found.has_value());
    CHECK(found->distinct == 1);
    CHECK(found->period == 1);
}

TEST_CASE("lockstep: one dominant address with random others is not lockstep")
{
    std::mt19937 random(3);
    std::uniform_int_distribution<int> die(0, 99);
    std::vector<uint32_t> pcs;
    for (int i = 0; i < 5000; ++i)
        pcs.push_back(die(random) < 95 ? 0x08000100 : 0x08000200 + 2 * uint32_t(die(random) % 8));
    CHECK_FALSE(detect_lockstep(pcs).has_value());
}

TEST_CASE("lockstep: too few samples to tell")
{
    std::vector<uint32_t> pcs = {1, 2, 1, 2, 1, 2};
    CHECK_FALSE(detect_lockstep(pcs).has_value());
}
