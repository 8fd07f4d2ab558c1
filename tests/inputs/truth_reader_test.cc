#include <doctest/doctest.h>

#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/truth_reader.h"

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

TEST_CASE("truth reader: a multi-core census has the core of every line, and every core named")
{
    // The plugin on mps2-an521: "# vcpus 2", then "0xADDR COUNT CORE"; core 1 ran nothing at
    // 0x10000200, which has no line for it.
    const auto s = parse_truth("# vcpus 2\n0x10000200 7 0\n0x10000300 5 1\n0x10000302 4 1\n", "smp.txt");
    REQUIRE(s.counts.size() == 3);
    CHECK(s.counts[0].core == 0);
    CHECK(s.counts[1].core == 1);
    CHECK(s.counts[2].count == 4);
    CHECK(s.run_instructions == 16u);
    CHECK(s.core_names.size() == 2);
    CHECK(s.core_names.at(1) == "core 1");
    CHECK_THROWS_WITH_AS(parse_truth("# vcpus 2\n0x10000200 7 2\n", "smp.txt"),
                         "smp.txt, line 2: '0x10000200 7 2' is not '0xADDRESS COUNT' or '0xADDRESS COUNT CORE' "
                         "with a core below 2",
                         Error);
    CHECK_THROWS_AS(parse_truth("# vcpus 2\n0x10000200 7 4294967296\n", "smp.txt"), Error);   // not core 0
    CHECK_THROWS_WITH_AS(parse_truth("0x10000200 7 0\n", "one.txt"),
                         "one.txt, line 1: '0x10000200 7 0' is not '0xADDRESS COUNT'", Error);
    CHECK_THROWS_WITH_AS(parse_truth("# vcpus 0\n0x10000200 7\n", "smp.txt"),
                         "smp.txt, line 1: '# vcpus 0' is not '# vcpus N' with N from 1 to 8", Error);
}
