#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "../fakes/fake_tcl_server.h"
#include "mcuprof/inputs/error.h"
#include "mcuprof/target/pcsr_profile_reader.h"
#include "mcuprof/link/error.h"

using mcuprof::sources::PcsrProfileReader;

namespace {

void put32(std::string& out, uint32_t value)
{
    for (int i = 0; i < 4; ++i)
        out.push_back(char((value >> (8 * i)) & 0xFF));
}

// A gmon.out as OpenOCD's write_gmon lays it out (src/target/target.c), written by hand.
std::string gmon(uint32_t low, uint32_t high, const std::map<uint32_t, uint16_t>& counts, uint32_t buckets,
                 uint32_t rate = 1000)
{
    std::string out = "gmon";
    put32(out, 1);
    out.append(12, '\0');
    out.push_back('\0');   // GMON_TAG_TIME_HIST
    put32(out, low);
    put32(out, high);
    put32(out, buckets);
    put32(out, rate);      // reads per second
    std::string dimension = "seconds";
    dimension.resize(15, '\0');
    out += dimension + "s";
    std::string data(2 * size_t(buckets), '\0');
    for (const auto& [bucket, n] : counts) {
        data[2 * bucket] = char(n & 0xFF);
        data[2 * bucket + 1] = char(n >> 8);
    }
    return out + data;
}

// The SECONDS of the `profile` call in a message (its words escaped by TclClient's quoting);
// -1 when there is none.
long seconds_asked(const std::string& message)
{
    size_t at = message.find("profile");
    if (at == std::string::npos)
        return -1;
    at += 7;
    while (at < message.size() && (message[at] == '\\' || message[at] == ' '))
        ++at;
    const size_t digits = message.find_first_not_of("0123456789", at);
    return digits == at ? -1 : std::stol(message.substr(at, digits - at));
}

} // namespace

TEST_CASE("pcsr profile reader: the gmon.out histogram of OpenOCD's profile, read back")
{
    // Through the gmon.out reader that `mcuprof report gmon.out` uses.
    const auto file = mcuprof::sources::parse_gmon_records(gmon(0x08000000, 0x08000010, {{1, 3}, {7, 300}}, 8, 2500), "g");
    REQUIRE(file.histograms.size() == 1);
    const auto& h = file.histograms[0];
    CHECK(h.low == 0x08000000);
    CHECK(h.high == 0x08000010);
    CHECK(h.rate == 2500);
    REQUIRE(h.counts.size() == 8);
    CHECK(h.counts[1] == 3);
    CHECK(h.counts[7] == 300);
    CHECK_THROWS_AS(mcuprof::sources::parse_gmon_records("gmon", "g"), mcuprof::sources::Error);
    std::string cut = gmon(0, 16, {}, 8);
    cut.resize(cut.size() - 1);
    CHECK_THROWS_WITH_AS(mcuprof::sources::parse_gmon_records(cut, "g"),
                         doctest::Contains("the file ends inside a histogram count"), mcuprof::sources::Error);
}

TEST_CASE("pcsr profile reader: one read places the 256 KiB window; then each chunk's PCs, outside reads counted")
{
    const std::string path =
        (std::filesystem::temp_directory_path() / ("mcuprof-test-pcsr-" + std::to_string(::getpid()) + ".gmon")).string();
    std::vector<std::string> asked;
    uint32_t first_pc = 0x08032344;
    fakes::FakeTclServer server([&](const std::string& message) -> std::optional<std::vector<std::string>> {
        asked.push_back(message);
        if (message.find("read_memory") != std::string::npos)
            return std::vector<std::string>{"0 " + std::to_string(first_pc)};
        // The window [0x08000000, 0x08040000): 0x08032344 three times, 0x080002dc five times,
        // and 2 of the 10 reads outside (OpenOCD drops them). (The window at 0x08040000, asked
        // for further down, gets an empty histogram.)
        std::ofstream out(path, std::ios::binary);
        if (message.find(std::to_string(0x08080000)) != std::string::npos)   // its end
            out << gmon(0x08040000, 0x08080000, {}, 128 * 1024);
        else
            out << gmon(0x08000000, 0x08040000, {{0x32344 / 2, 3}, {0x02dc / 2, 5}}, 128 * 1024);
        return std::vector<std::string>{"0 Starting Cortex-M profiling.\nProfiling completed. 10 samples.\nWrote " +
                                        path + "\n"};
    });
    mcuprof::transport::TclClient tcl({"127.0.0.1", server.port()}, {});
    PcsrProfileReader reader(path, 7);
    std::vector<uint32_t> pcs = reader.read(tcl, 100);
    CHECK(reader.window_low() == 0x08000000);   // the 256 KiB-aligned block of the first PC
    std::sort(pcs.begin(), pcs.end());
    CHECK(pcs == std::vector<uint32_t>{0x080002dc, 0x080002dc, 0x080002dc, 0x080002dc, 0x080002dc, 0x08032344,
                                       0x08032344, 0x08032344});
    CHECK(reader.reads() == 11);
    CHECK(reader.outside() == 2);
    CHECK(reader.unused() == 1);   // the placing read
    // Fewer wanted than read: a subset, the rest counted as unused.
    CHECK(reader.read(tcl, 4).size() == 4);
    CHECK(reader.unused() == 1 + 4);
    REQUIRE(asked.size() == 3);
    CHECK(asked[1].find("profile") != std::string::npos);
    CHECK(asked[1].find(std::to_string(0x08000000)) != std::string::npos);   // the window, as OpenOCD's range

    // A PC past the first 256 KiB: the next block.
    first_pc = 0x08052344;
    PcsrProfileReader next(path, 7);
    CHECK(next.read(tcl, 100).empty());
    CHECK(next.window_low() == 0x08040000);

    // A file OpenOCD wrote wrong (another window; cut short) ends the chunk as a protocol
    // error of the link, which the sampling loop survives with its samples kept.
    std::string written;
    fakes::FakeTclServer wrong_files([&](const std::string&) -> std::optional<std::vector<std::string>> {
        std::ofstream(path, std::ios::binary) << written;
        return std::vector<std::string>{"0 Profiling completed. 10 samples.\n"};
    });
    mcuprof::transport::TclClient wrong_tcl({"127.0.0.1", wrong_files.port()}, {});
    PcsrProfileReader wrong(path, 7);
    wrong.place(0x08052344);   // the window at 0x08040000
    written = gmon(0x08000000, 0x08040000, {}, 128 * 1024);
    CHECK_THROWS_WITH_AS(wrong.read(wrong_tcl, 100), doctest::Contains("not the window asked for"),
                         mcuprof::transport::Error);
    written = gmon(0x08040000, 0x08080000, {}, 128 * 1024);
    written.resize(written.size() / 2);
    CHECK_THROWS_WITH_AS(wrong.read(wrong_tcl, 100), doctest::Contains("the file ends inside a histogram count"),
                         mcuprof::transport::Error);
    std::remove(path.c_str());
}

TEST_CASE("pcsr profile reader: the file OpenOCD wrote for it goes with it")
{
    const std::string path =
        (std::filesystem::temp_directory_path() / ("mcuprof-test-pcsr-gone-" + std::to_string(::getpid()) + ".gmon"))
            .string();
    std::ofstream(path, std::ios::binary) << gmon(0x08000000, 0x08040000, {}, 128 * 1024);
    {
        PcsrProfileReader reader(path, 7);
        CHECK(std::filesystem::exists(path));
    }
    CHECK_FALSE(std::filesystem::exists(path));
    PcsrProfileReader never_written(path, 7);   // and no error when OpenOCD wrote none
}

TEST_CASE("pcsr profile reader: each call sized by time to gather up to the 10000 reads a profile call makes")
{
    using R = PcsrProfileReader;
    // The rate not known yet: a second when the cap is wanted, else one pass (`profile 0`).
    CHECK(R::seconds_for(20000, 0, 1024) == 10);       // the longest: a call stops at the cap
    CHECK(R::seconds_for(5000, 0, 1024) == 0);
    // A pass (1024) enough: one pass.
    CHECK(R::seconds_for(1024, 3000, 1024) == 0);
    CHECK(R::seconds_for(500, 1e6, 1024) == 0);
    // 10000 or more wanted: seconds that reach the cap at a rate 1.25 times lower; 1 at a
    // real probe's speed.
    CHECK(R::seconds_for(10000, 3000, 1024) == 5);     // 12500 / 3000 = 4.2
    CHECK(R::seconds_for(50000, 2500, 1024) == 5);     // exactly 5
    CHECK(R::seconds_for(50000, 2400, 1024) == 6);     // 5.2
    CHECK(R::seconds_for(1000000, 500000, 1024) == 1);
    // Fewer: the most seconds whose passes (the last one ends after them) stay within, at
    // a rate 1.25 times the last call's.
    CHECK(R::seconds_for(9216, 2000, 1024) == 3);      // at 2500/s: passes end at 0.41 s, 0.82 s ...: 3 s read 8
    CHECK(R::seconds_for(7168, 3000, 1024) == 1);      // at 3750/s 2 s would read 8 passes (8192)
    CHECK(R::seconds_for(6144, 2000, 1024) == 2);      // at 2500/s 2 s read 5 passes (5120), 3 s 8
    CHECK(R::seconds_for(2000, 3000, 1024) == 0);      // one second would read 3 passes
    // A slow target: at most 10 s a call (Ctrl-C waits for one call).
    CHECK(R::seconds_for(10000, 100, 1024) == 10);
    CHECK(R::seconds_for(9000, 500, 1024) == 10);
    // One read a pass (hla): at least a second, never a call per read.
    CHECK(R::seconds_for(500, 1900, 1) == 1);
    CHECK(R::seconds_for(5000, 1600, 1) == 2);         // about 4000 reads at 2000/s
    CHECK(R::seconds_for(1, 1900, 1) == 0);
}

TEST_CASE("pcsr profile reader: placed by a read made elsewhere; a long call's reads, delivered as wanted")
{
    const std::string path =
        (std::filesystem::temp_directory_path() / ("mcuprof-test-pcsr-calls-" + std::to_string(::getpid()) + ".gmon"))
            .string();
    std::vector<std::string> asked;
    // A probe that reads 20000 words a second (what OpenOCD writes into gmon.out): `profile 0`
    // reads one pass of 1024, a second the cap of 10000. Of each call's reads, 24 fall
    // outside the window.
    fakes::FakeTclServer server([&](const std::string& message) -> std::optional<std::vector<std::string>> {
        asked.push_back(message);
        const uint16_t reads = seconds_asked(message) == 0 ? 1024 : 10000;
        std::ofstream out(path, std::ios::binary);
        out << gmon(0x08000000, 0x08040000, {{0x100 / 2, uint16_t(reads - 124)}, {0x2000 / 2, 100}}, 128 * 1024,
                    20000);
        return std::vector<std::string>{"0 Profiling completed. " + std::to_string(reads) + " samples.\nWrote " + path +
                                        "\n"};
    });
    mcuprof::transport::TclClient tcl({"127.0.0.1", server.port()}, {});
    PcsrProfileReader reader(path, 7);
    reader.place(0xFFFFFFFF);   // halted: not placed by it, but counted
    reader.place(0x08000200);
    CHECK(reader.window_low() == 0x08000000);

    // The first call: its rate is not known yet, one pass for 1000.
    CHECK(reader.read(tcl, 1000).size() == 1000);
    // Then at 20000 a second, a second reaches the cap: 9976 of the reads in the window.
    const std::vector<uint32_t> pcs = reader.read(tcl, 9000 + 1024);
    CHECK(pcs.size() == 9976);
    CHECK(std::count(pcs.begin(), pcs.end(), 0x08002000u) == 100);
    // A pass is enough for what is left.
    CHECK(reader.read(tcl, 600).size() == 600);

    REQUIRE(asked.size() == 3);   // no read_memory: the window was placed
    CHECK(seconds_asked(asked[0]) == 0);
    CHECK(seconds_asked(asked[1]) == 1);
    CHECK(seconds_asked(asked[2]) == 0);
    CHECK(reader.calls() == 3);
    CHECK(reader.reads_per_call() == (1024 + 10000 + 1024 + 1) / 3);
    CHECK(reader.reads() == 2 + 1024 + 10000 + 1024);
    CHECK(reader.outside() == 3 * 24);
    CHECK(reader.unused() == 2 + (1000 - 600));   // the two placing reads, the last call's surplus
    std::remove(path.c_str());
}
