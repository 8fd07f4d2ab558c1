#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "mcuprof/vprobe/pc_file.h"

using mcuprof::vprobe::PcFile;

namespace {

// A PC file as the truth plugin lays it out (firmware-ref/truth/truth.c, pcfile=): the bytes
// "PCF1", the vCPU count, then one little-endian word per vCPU, written here byte by byte.
std::string write_file(const std::string& name, const std::vector<uint32_t>& words)
{
    const std::string path = "/tmp/mcuprof-pc-file-test-" + std::to_string(::getpid()) + "-" + name;
    std::ofstream out(path, std::ios::binary);
    for (uint32_t w : words)
        for (int byte = 0; byte < 4; ++byte)
            out.put(char((w >> (8 * byte)) & 0xFF));
    return path;
}

constexpr uint32_t pcf1 = 'P' | ('C' << 8) | ('F' << 16) | (uint32_t('1') << 24);

} // namespace

TEST_CASE("pc file: each core's slot, none before its first instruction, and what it sees change")
{
    const std::string path = write_file("two", {pcf1, 2, 0x08000100, 0xFFFFFFFF});
    PcFile file(path);
    CHECK(file.cores() == 2);
    CHECK(file.pc(0) == 0x08000100u);
    CHECK_FALSE(file.pc(1).has_value());   // 0xFFFFFFFF: that vCPU has run nothing yet
    CHECK_FALSE(file.pc(2).has_value());   // no such core
    // The mapping is shared: a store by the plugin's process shows at the next read.
    {
        std::fstream update(path, std::ios::binary | std::ios::in | std::ios::out);
        update.seekp(12);
        const char word[4] = {char(0x2A), char(0x03), char(0x00), char(0x08)};
        update.write(word, 4);
    }
    CHECK(file.pc(1) == 0x0800032Au);
    std::remove(path.c_str());
}

TEST_CASE("pc file: anything else is refused with the option named")
{
    const std::string wrong_magic = write_file("magic", {0x12345678, 1, 0x08000100});
    const std::string too_short = write_file("short", {pcf1});
    const std::string fewer_slots = write_file("slots", {pcf1, 3, 0x08000100});
    for (const std::string& path : {wrong_magic, too_short, fewer_slots, std::string("/nonexistent/pc")}) {
        CAPTURE(path);
        try {
            PcFile file(path);
            FAIL("accepted");
        } catch (const std::runtime_error& e) {
            CHECK(std::string(e.what()).rfind("--pc-file " + path, 0) == 0);
        }
        std::remove(path.c_str());
    }
}
