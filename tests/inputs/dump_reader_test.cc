#include <doctest/doctest.h>

#include "mcuprof/inputs/dump_reader.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/inputs/text_file.h"

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

TEST_CASE("dump reader: a top-N table becomes one bucket per used entry, its decay stated")
{
    const char* const table =
        "prof topn n=120 shift=4 total=150 ignored=20 entries=4\n"
        "t 08000100 90 600\n"
        "t 08000230 50 400\n"
        "t 08000100 0 0\n"   // a free entry: its stale block is not a bucket
        "t 00000000 0 0\n"
        "end\n";
    Dump dump = parse_dump(table, "uart.txt");
    REQUIRE(dump.chunks.size() == 1);
    const DumpChunk& c = dump.chunks[0];
    CHECK(c.kind == DumpChunk::Kind::table);
    CHECK(c.announced == 120);
    CHECK(c.shift == 4);
    CHECK(c.total == 150);
    CHECK(c.ignored == 20);
    REQUIRE(c.entries.size() == 4);
    CHECK(c.entries[1].block == 0x08000230);
    CHECK(c.entries[1].hits == 50);
    CHECK(c.entries[1].permille == 400);

    const mcuprof::core::SampleSet s = to_samples(std::move(dump), {});
    REQUIRE(s.buckets.size() == 2);
    CHECK(s.buckets[0].start == 0x08000100);
    CHECK(s.buckets[0].size == 16);
    CHECK(s.buckets[0].count == 90);
    CHECK(s.buckets[1].count == 50);
    CHECK(s.pcs.empty());
    REQUIRE(s.notes.size() == 2);
    CHECK(s.notes[0].find("add up to 1000") != std::string::npos);
    CHECK(s.notes[1].find("20 of 120 samples fell in the ignore list") != std::string::npos);

    SUBCASE("malformed tables are errors naming the line")
    {
        auto error_of = [](const char* text) {
            try {
                parse_dump(text, "uart.txt");
            } catch (const Error& e) {
                return e.place() + ": " + e.what();
            }
            return std::string("no error");
        };
        CHECK(error_of("prof topn n=1 shift=4 total=2 ignored=0 entries=2\nt 08000100 2 1000\nend\n")
                  .find("line 1") == 0);
        CHECK(error_of("prof topn n=1 shift=4 total=2 ignored=0 entries=1\nt 08000108 2 1000\nend\n")
                  .find("not aligned") != std::string::npos);
        CHECK(error_of("prof topn n=1 shift=4 total=2 ignored=0 entries=1\nt 08000100 x 1000\nend\n")
                  .find("line 2") == 0);
        CHECK(error_of("prof topn n=1 total=2 ignored=0 entries=1\n").find("shift=") != std::string::npos);
        CHECK(error_of("t 08000100 2 1000\n").find("outside a 'prof topn'") != std::string::npos);
    }
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

TEST_CASE("text: the decimal after a marker, or nothing (QEMU's HMP 'info replay' answer)")
{
    using mcuprof::sources::decimal_after;
    CHECK(decimal_after("Replaying execution 'r.bin': instruction count = 1936732\n", "instruction count = ") ==
          uint64_t(1936732));
    CHECK(decimal_after("instruction count = 18446744073709551615", "instruction count = ") == UINT64_MAX);
    CHECK_FALSE(decimal_after("instruction count = 18446744073709551616", "instruction count = "));   // 2^64
    CHECK_FALSE(decimal_after("instruction count = \n", "instruction count = "));   // stoull threw here
    CHECK_FALSE(decimal_after("Record/replay is not active", "instruction count = "));
}
