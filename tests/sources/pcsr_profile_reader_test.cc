#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "../fakes/fake_tcl_server.h"
#include "mcuprof/sources/pcsr_profile_reader.h"
#include "mcuprof/transport/error.h"

using mcuprof::sources::PcsrProfileReader;

namespace {

void put32(std::string& out, uint32_t value)
{
    for (int i = 0; i < 4; ++i)
        out.push_back(char((value >> (8 * i)) & 0xFF));
}

// A gmon.out as OpenOCD's write_gmon lays it out (src/target/target.c), written by hand.
std::string gmon(uint32_t low, uint32_t high, const std::map<uint32_t, uint16_t>& counts, uint32_t buckets)
{
    std::string out = "gmon";
    put32(out, 1);
    out.append(12, '\0');
    out.push_back('\0');   // GMON_TAG_TIME_HIST
    put32(out, low);
    put32(out, high);
    put32(out, buckets);
    put32(out, 1000);      // rate
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

} // namespace

TEST_CASE("pcsr profile reader: the gmon.out histogram of OpenOCD's profile, read back")
{
    const auto h = PcsrProfileReader::parse_gmon(gmon(0x08000000, 0x08000010, {{1, 3}, {7, 300}}, 8), "g");
    CHECK(h.low == 0x08000000);
    CHECK(h.high == 0x08000010);
    REQUIRE(h.buckets.size() == 8);
    CHECK(h.buckets[1] == 3);
    CHECK(h.buckets[7] == 300);
    CHECK_THROWS_AS(PcsrProfileReader::parse_gmon("gmon", "g"), mcuprof::transport::Error);
    std::string cut = gmon(0, 16, {}, 8);
    cut.resize(cut.size() - 1);
    CHECK_THROWS_AS(PcsrProfileReader::parse_gmon(cut, "g"), mcuprof::transport::Error);
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
    std::remove(path.c_str());
}
