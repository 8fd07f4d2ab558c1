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

TEST_CASE("pcsr profile reader: a first chunk places the 256 KiB window; then each chunk's PCs, outside reads counted")
{
    const std::string path =
        (std::filesystem::temp_directory_path() / ("mcuprof-test-pcsr-" + std::to_string(::getpid()) + ".gmon")).string();
    std::vector<std::string> asked;
    fakes::FakeTclServer server([&](const std::string& message) -> std::optional<std::vector<std::string>> {
        asked.push_back(message);
        std::ofstream out(path, std::ios::binary);
        if (message.find("134283264") == std::string::npos) {
            // No window yet: OpenOCD's own range, lowest PC 0x08012344 (bucket contents unused).
            out << gmon(0x08012344, 0x08012349, {{0, 1024}}, 2);
            return std::vector<std::string>{"0 Starting Cortex-M profiling.\nProfiling completed. 1024 samples.\n"};
        }
        // The window [0x08010000, 0x08050000): 0x08012344 three times, 0x080102dc five times,
        // and 2 of the 10 reads outside (OpenOCD drops them).
        out << gmon(0x08010000, 0x08050000, {{0x2344 / 2, 3}, {0x02dc / 2, 5}}, 128 * 1024);
        return std::vector<std::string>{"0 Profiling completed. 10 samples.\nWrote " + path + "\n"};
    });
    mcuprof::transport::TclClient tcl({"127.0.0.1", server.port()}, {});
    PcsrProfileReader reader(path, 7);
    std::vector<uint32_t> pcs = reader.read(tcl, 100);
    CHECK(reader.window_low() == 0x08010000);   // 64 KiB below the first chunk's lowest PC
    std::sort(pcs.begin(), pcs.end());
    CHECK(pcs == std::vector<uint32_t>{0x080102dc, 0x080102dc, 0x080102dc, 0x080102dc, 0x080102dc, 0x08012344,
                                       0x08012344, 0x08012344});
    CHECK(reader.reads() == 1034);
    CHECK(reader.outside() == 2);
    CHECK(reader.unused() == 1024);   // the placing chunk
    // Fewer wanted than read: a subset, the rest counted as unused.
    CHECK(reader.read(tcl, 4).size() == 4);
    CHECK(reader.unused() == 1024 + 4);
    REQUIRE(asked.size() == 3);
    CHECK(asked[1].find("profile") != std::string::npos);
    std::remove(path.c_str());
}
