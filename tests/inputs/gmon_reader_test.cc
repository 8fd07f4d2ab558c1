#include <doctest/doctest.h>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/gmon_reader.h"

using namespace mcuprof::sources;

namespace {

std::string le32(uint32_t v)
{
    return {char(v), char(v >> 8), char(v >> 16), char(v >> 24)};
}

// A gmon.out as OpenOCD's profile writes it: header, one time histogram over
// [0x08000000, 0x08000010) in 4 bins of 4 bytes, counts 0, 7, 0, 65535.
std::string sample_gmon()
{
    std::string g = "gmon" + le32(1) + std::string(12, '\0');
    g += '\0';   // GMON_TAG_TIME_HIST
    g += le32(0x08000000) + le32(0x08000010) + le32(4) + le32(1000);
    g += std::string("seconds") + std::string(8, '\0') + "s";
    for (uint16_t c : {0, 7, 0, 0xFFFF})
        g += std::string{char(c), char(c >> 8)};
    g += '\x01' + le32(0x08000004) + le32(0x08000008) + le32(3);   // a call arc, skipped
    return g;
}

} // namespace

TEST_CASE("gmon reader: the time histogram becomes buckets; arcs are counted, not used")
{
    const auto s = parse_gmon(sample_gmon(), "gmon.out");
    REQUIRE(s.buckets.size() == 2);
    CHECK(s.buckets[0].start == 0x08000004);
    CHECK(s.buckets[0].size == 4);
    CHECK(s.buckets[0].count == 7);
    CHECK(s.buckets[1].start == 0x0800000c);
    CHECK(s.buckets[1].count == 65535);
    CHECK(s.origin.find("4 bins, 1000 samples/s") != std::string::npos);
    CHECK(s.origin.find("1 call arcs not used") != std::string::npos);
    REQUIRE(s.notes.size() == 3);
    CHECK(s.notes[0].find("no identity of the firmware") != std::string::npos);
    CHECK(s.notes[1].find("read back to back") != std::string::npos);
    CHECK(s.notes[2].find("saturated") != std::string::npos);
    CHECK(s.reads_pcsr);   // so its binomial errors are marked lower bounds (attribution_test.cc)
}

TEST_CASE("gmon reader: bins of a width that is no whole number cover the addresses OpenOCD put in them")
{
    // OpenOCD's `profile` without an address range over 0x08000322-0x0800066b: 420 bins of
    // 841 / 420 = 2.0024 bytes. Bin k holds count k + 1, so each address's bucket names its bin.
    const uint32_t low = 0x08000322, high = 0x0800066b, bins = 420;
    std::string g = "gmon" + le32(1) + std::string(12, '\0') + '\0';
    g += le32(low) + le32(high) + le32(bins) + le32(1000) + std::string("seconds") + std::string(8, '\0') + "s";
    for (uint32_t k = 0; k < bins; ++k)
        g += std::string{char((k + 1) & 0xFF), char((k + 1) >> 8)};
    const auto s = parse_gmon(g, "gmon.out");
    REQUIRE(s.buckets.size() == bins);
    size_t covered = 0;
    for (uint32_t pc = low; pc < high; ++pc) {
        // The bin OpenOCD's write_gmon (target.c) counts the PC in.
        const uint64_t openocd_bin = uint64_t(pc - low) * bins / (high - low);
        for (const auto& b : s.buckets)
            if (pc >= b.start && pc - b.start < b.size) {
                CHECK_MESSAGE(b.count == openocd_bin + 1, "pc " << pc);
                ++covered;
            }
    }
    CHECK(covered == high - low);   // every address in exactly one bucket
    CHECK(s.buckets.front().start == low);
    CHECK(s.buckets.back().start + s.buckets.back().size == high);
}

TEST_CASE("gmon reader: damaged files name the offset")
{
    const std::string g = sample_gmon();
    CHECK_THROWS_WITH_AS(parse_gmon("gmox", "x"), "x, offset 0: not a gmon.out file (no \"gmon\" magic)", Error);
    // Header 20 bytes, tag 1, histogram header 32: counts from 53, the fourth at 59..60.
    CHECK_THROWS_WITH_AS(parse_gmon(g.substr(0, 60), "x"), "x, offset 59: the file ends inside a histogram count", Error);
    std::string big_endian = g;
    big_endian.replace(4, 4, std::string("\0\0\0\1", 4));
    CHECK_THROWS_WITH_AS(parse_gmon(big_endian, "x"), doctest::Contains("big-endian"), Error);
    std::string bad_tag = g;
    bad_tag[20] = 9;
    CHECK_THROWS_WITH_AS(parse_gmon(bad_tag, "x"), "x, offset 20: unknown record tag 9", Error);
}
