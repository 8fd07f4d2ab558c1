#include <doctest/doctest.h>

#include "mcuprof/sources/dump_reader.h"
#include "mcuprof/sources/error.h"
#include "mcuprof/sources/text_file.h"

using namespace mcuprof::sources;

namespace {

// A capture as the UART gives it: boot noise, a task table, two raw dumps with tags,
// and a histogram dump.
const char* const capture =
    "boot v1.2\r\n"
    "task 20000100 motor\n"
    "task 20000200 link\n"
    "span=12345\n"
    "prof raw n=10\n"
    "p 080002b4 080002b8 080002ac 080002b2 080002ce 080002aa 080002b0 080002b0\n"
    "p 08000300 08000302\n"
    "g 20000100 20000100 20000100 20000100 20000100 20000100 20000200 20000200\n"
    "g 20000200 20000200\n"
    "end\n"
    "noise ###\n"
    "prof raw n=3\n"
    "p 080002b4 080002b4 080002b4\n"
    "g 20000100 20000100 20000100\n"
    "end\n"
    "prof hist base=0x08000000 shift=4 n=12 out=2\n"
    "h 0000 0003 0000 0007\n"
    "end\n";

} // namespace

TEST_CASE("dump reader: chunks, tags, tasks, spans and skipped lines")
{
    const Dump dump = parse_dump(capture, "uart.txt");
    REQUIRE(dump.chunks.size() == 3);
    CHECK(dump.skipped_lines == 2);   // "boot v1.2" and "noise ###"
    CHECK(dump.tasks.at(0x20000100) == "motor");
    CHECK(dump.tasks.at(0x20000200) == "link");

    const DumpChunk& first = dump.chunks[0];
    CHECK(first.kind == DumpChunk::Kind::raw);
    CHECK(first.span == 12345u);
    CHECK(first.announced == 10);
    REQUIRE(first.pcs.size() == 10);
    CHECK(first.pcs[0] == 0x080002b4);
    CHECK(first.pcs[9] == 0x08000302);
    CHECK(first.tags.size() == 10);
    CHECK(first.ended);
    CHECK_FALSE(dump.chunks[1].span.has_value());

    const DumpChunk& hist = dump.chunks[2];
    CHECK(hist.kind == DumpChunk::Kind::histogram);
    CHECK(hist.base == 0x08000000);
    CHECK(hist.shift == 4);
    CHECK(hist.outside == 2);
    CHECK(hist.counts == std::vector<uint32_t>{0, 3, 0, 7});
}

TEST_CASE("dump reader: all chunks merged, or one, or the first N samples")
{
    const Dump dump = parse_dump(capture, "uart.txt");
    const auto all = to_samples(dump, {});
    CHECK(all.pcs.size() == 13);
    CHECK(all.tags.size() == 13);
    REQUIRE(all.sequences.size() == 2);
    CHECK(all.sequences[1].begin == 10);
    REQUIRE(all.buckets.size() == 2);   // the two non-empty buckets
    CHECK(all.buckets[0].start == 0x08000010);
    CHECK(all.buckets[0].size == 16);
    CHECK(all.buckets[1].start == 0x08000030);
    CHECK(all.buckets[1].count == 7);
    CHECK(all.outside_buckets == 2);
    CHECK(all.tag_names.size() == 2);

    DumpSelection second;
    second.chunk = 2;
    const auto two = to_samples(dump, second);
    CHECK(two.pcs == std::vector<uint32_t>{0x080002b4, 0x080002b4, 0x080002b4});
    CHECK(two.buckets.empty());

    DumpSelection first;
    first.first = 12;
    const auto twelve = to_samples(dump, first);
    CHECK(twelve.pcs.size() == 12);
    CHECK(twelve.tags.size() == 12);
    CHECK(twelve.sequences.back().end == 12);

    DumpSelection missing;
    missing.chunk = 4;
    CHECK_THROWS_WITH_AS(to_samples(dump, missing), doctest::Contains("holds 3 dump(s)"), Error);
}

TEST_CASE("dump reader: a wrapped ring and a missing end are noted, not fatal")
{
    const Dump dump = parse_dump("prof raw n=5000\np 08000000 08000002\n", "cut.txt");
    const auto samples = to_samples(dump, {});
    CHECK(samples.pcs.size() == 2);
    REQUIRE(samples.notes.size() == 2);
    CHECK(samples.notes[0].find("no 'end'") != std::string::npos);
    CHECK(samples.notes[1].find("last 2 of 5000") != std::string::npos);
}

TEST_CASE("dump reader: a saturated bucket is a lower bound")
{
    const Dump dump = parse_dump("prof hist base=0x08000000 shift=2 n=65536 out=1\nh ffff\nend\n", "sat.txt");
    const auto samples = to_samples(dump, {});
    REQUIRE_FALSE(samples.notes.empty());
    CHECK(samples.notes[0].find("saturated") != std::string::npos);
}

TEST_CASE("dump reader: malformed lines are errors naming the file and the line")
{
    CHECK_THROWS_WITH_AS(parse_dump("prof raw n=2\np 08000000 0800zz02\n", "bad.txt"),
                         "bad.txt, line 2: word 2 of the 'p' line, '0800zz02', is not a hex number", Error);
    CHECK_THROWS_WITH_AS(parse_dump("p 08000000\n", "bad.txt"),
                         "bad.txt, line 1: 'p' line outside a 'prof raw' dump", Error);
    CHECK_THROWS_WITH_AS(parse_dump("prof raw n=1\np 08000000 08000002\nend\n", "bad.txt"),
                         "bad.txt, line 1: dump holds 2 samples but its header says n=1", Error);
    CHECK_THROWS_WITH_AS(parse_dump("prof raw n=2\np 08000000 08000002\ng 20000000\nend\n", "bad.txt"),
                         doctest::Contains("1 tags ('g') for 2 samples"), Error);
    CHECK_THROWS_WITH_AS(parse_dump("prof hist base=0x08000000 n=1 out=0\n", "bad.txt"),
                         "bad.txt, line 1: header has no shift= field", Error);
    CHECK_THROWS_WITH_AS(parse_dump("prof raw n=-3\n", "bad.txt"),
                         doctest::Contains("n=-3 is not a decimal number"), Error);
    CHECK_THROWS_WITH_AS(to_samples(parse_dump("hello\n", "empty.txt"), {}), doctest::Contains("no dump in the file"),
                         Error);
    CHECK_THROWS_WITH_AS(to_samples(parse_dump("prof raw n=0\nend\n", "none.txt"), {}),
                         doctest::Contains("holds no samples"), Error);
}

TEST_CASE("dump reader: eight hex digits at once, every digit and letter, both cases")
{
    uint32_t v = 0;
    CHECK(parse_hex8("080002b4", v));
    CHECK(v == 0x080002b4u);
    CHECK(parse_hex8("0123abcd", v));
    CHECK(v == 0x0123abcdu);
    CHECK(parse_hex8("4567EFef", v));
    CHECK(v == 0x4567efefu);
    CHECK(parse_hex8("89AbCdEf", v));
    CHECK(v == 0x89abcdefu);
    CHECK(parse_hex8("ffffffff", v));
    CHECK(v == 0xffffffffu);
    // Every character next to the hex ranges is refused, in every position.
    for (const char bad : {'/', ':', '@', 'G', '`', 'g', ' ', '\x80', '\xff', 'x'}) {
        for (int at = 0; at < 8; ++at) {
            char word[9] = "00000000";
            word[at] = bad;
            CHECK_FALSE(parse_hex8(word, v));
        }
    }
}
