#include <doctest/doctest.h>

#include "mcuprof/sources/error.h"
#include "mcuprof/sources/truth_reader.h"

using namespace mcuprof::sources;

TEST_CASE("truth reader: address and count per line, as a census")
{
    const auto s = parse_truth("0x080002a8 3504\n0x080002aa 1004\n\n# comment\n0x80002ac 18446744073709551615\n",
                               "counts.txt");
    CHECK(s.exact);
    REQUIRE(s.counts.size() == 3);
    CHECK(s.counts[0].address == 0x080002a8);
    CHECK(s.counts[0].count == 3504);
    CHECK(s.counts[2].address == 0x080002ac);
    CHECK(s.counts[2].count == 18446744073709551615ull);
    CHECK_FALSE(s.run_instructions);   // the sum does not fit: no total rather than a wrapped one
    CHECK(parse_truth("0x080002a8 3504\n0x080002aa 1004\n", "counts.txt").run_instructions == 4508u);
}

TEST_CASE("truth reader: malformed lines name the line")
{
    CHECK_THROWS_WITH_AS(parse_truth("0x08000000 1\n0x08000002 x\n", "c.txt"),
                         "c.txt, line 2: '0x08000002 x' is not '0xADDRESS COUNT'", Error);
    CHECK_THROWS_WITH_AS(parse_truth("\n", "c.txt"), "c.txt: no counts in the file", Error);
}

TEST_CASE("truth reader: a census of a run cut at its budget says so and has no total")
{
    const std::string marker(cut_run_marker);
    const auto s = parse_truth("0x080002a8 3504\n" + marker + ": 1000 instructions asked, 3504 executed\n", "c.txt");
    CHECK_FALSE(s.run_instructions);
    REQUIRE(s.notes.size() == 1);
    CHECK(s.notes[0].find("run cut at the instruction budget: 1000 instructions asked, 3504 executed") == 0);
    CHECK(s.counts.size() == 1);
}
