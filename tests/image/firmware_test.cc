// core::Image against binutils' reading of the same images: the build attributes
// (`arm-none-eabi-readelf -A`), the section list (`readelf -S`), the memory image's words
// (`objdump -s`); core::ImageSet's images together against nm and addr2line of each; and the
// CPUID table of the target check against the Cortex-M parts.
#include <doctest/doctest.h>

#include <regex>
#include <sstream>
#include <string>

#include "mcuprof/image/data_layout.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/image_set.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"
#include "mcuprof/image/unwind/call_frames.h"
#include "mcuprof/sampler/firmware_check.h"
#include "tool_output.h"

using mcuprof::core::Image;
using mcuprof::core::ImageSet;

namespace {

std::string image(const char* name)
{
    return std::string(FIRMWARE_DIR) + "/" + name + ".elf";
}

// "Tag_CPU_arch: v7E-M" -> "v7E-M", as readelf -A prints it.
std::string readelf_attribute(const std::string& elf, const std::string& tag)
{
    std::istringstream text(tool_output("arm-none-eabi-readelf -A '" + elf + "'"));
    std::string line;
    const std::regex pattern("^\\s*" + tag + ": (.*)$");
    std::smatch match;
    while (std::getline(text, line))
        if (std::regex_match(line, match, pattern))
            return match[1];
    return {};
}

} // namespace

TEST_CASE("firmware: the build attributes are readelf's")
{
    for (const char* name : {"loops_m0", "loops_jit_m3", "fpu_o2_m4"}) {
        CAPTURE(name);
        const Image firmware = Image::open(image(name));
        const auto& attributes = firmware.attributes();
        REQUIRE(attributes.cpu_arch);
        // readelf names v6-M, v6S-M, v7, v7E-M: ours with "ARM" before and "-M" on v7.
        std::string expected = "ARM" + readelf_attribute(image(name), "Tag_CPU_arch");
        if (expected == "ARMv7")
            expected = "ARMv7-M";
        CHECK(attributes.architecture() == expected);
        CHECK(readelf_attribute(image(name), "Tag_CPU_arch_profile") == "Microcontroller");
        CHECK(attributes.profile == unsigned('M'));
    }
}

TEST_CASE("firmware: sections and the words of the memory image are readelf's and objdump's")
{
    const std::string elf = image("loops_m4");
    const Image firmware = Image::open(elf);
    const auto* text = firmware.section(".text");
    REQUIRE(text != nullptr);
    CHECK(text->executable());
    CHECK(text->loaded());
    // readelf -S: "[ n] .text PROGBITS 08000400 000400 0001a8 ..." (address, offset, size).
    std::istringstream headers(tool_output("arm-none-eabi-readelf -SW '" + elf + "'"));
    std::string line;
    std::smatch match;
    const std::regex row(R"(\]\s+\.text\s+PROGBITS\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+))");
    bool found = false;
    while (std::getline(headers, line))
        if (std::regex_search(line, match, row)) {
            CHECK(text->address == std::stoul(match[1], nullptr, 16));
            CHECK(text->size == std::stoul(match[2], nullptr, 16));
            found = true;
        }
    CHECK(found);
    // objdump -s -j .text: " 8000400 0348c046 ..." a line of 16 bytes in 4 groups, memory order.
    std::istringstream dump(tool_output("arm-none-eabi-objdump -s -j .text '" + elf + "'"));
    const std::regex bytes(R"(^ ([0-9a-f]+) ([0-9a-f]{8}) )");
    size_t words = 0;
    while (std::getline(dump, line) && words < 8)
        if (std::regex_search(line, match, bytes)) {
            const uint32_t address = uint32_t(std::stoul(match[1], nullptr, 16));
            const std::string b = match[2];
            const uint32_t little = uint32_t(std::stoul(b.substr(6, 2) + b.substr(4, 2) + b.substr(2, 2) + b.substr(0, 2), nullptr, 16));
            CHECK(firmware.word(address) == little);
            ++words;
        }
    CHECK(words == 8);
    CHECK_FALSE(firmware.word(0xE000ED00));
}

TEST_CASE("firmware: not ARM, not there")
{
    CHECK_THROWS_WITH_AS(Image::open("/proc/self/exe"), doctest::Contains("not a 32-bit"), mcuprof::core::Error);
    CHECK_THROWS_WITH_AS(Image::open("/nonexistent/fw.elf"), doctest::Contains("/nonexistent/fw.elf"),
                         mcuprof::core::Error);
    // A set opens each image in turn: the later one that is not there is named.
    CHECK_THROWS_WITH_AS(ImageSet::open({image("loops_m4"), "/nonexistent/fw.elf"}),
                         doctest::Contains("/nonexistent/fw.elf"), mcuprof::core::Error);
}

namespace {

// Each function's inline chain at its start, as the image's locator reads it: "name@file:line" a frame.
std::vector<std::string> chains_of(const Image& firmware)
{
    std::vector<std::string> chains;
    for (const mcuprof::core::Function& f : firmware.symbols().functions()) {
        std::string chain;
        for (const mcuprof::core::SourceFrame& frame : firmware.locator().frames(f.start))
            chain += frame.function + "@" + frame.file + ":" + std::to_string(frame.line) + ";";
        chains.push_back(chain);
    }
    return chains;
}

} // namespace

TEST_CASE("firmware: the locator, the data layout and the call frames share the image's DWARF, in any order")
{
    const std::string elf = image("rtos_m4");
    const Image locator_first = Image::open(elf), layout_first = Image::open(elf);
    const std::vector<std::string> chains = chains_of(locator_first);
    const size_t fdes = mcuprof::core::read_call_frames(locator_first).size();
    const auto current = locator_first.data_layout().variable("pxCurrentTCB");

    const auto current_again = layout_first.data_layout().variable("pxCurrentTCB");
    CHECK(mcuprof::core::read_call_frames(layout_first).size() == fdes);
    CHECK(chains_of(layout_first) == chains);
    // What each read is what the symbol table and the frame section say on their own.
    REQUIRE(current);
    REQUIRE(current_again);
    const auto symbol = locator_first.symbols().find_object("pxCurrentTCB");
    REQUIRE(symbol);
    CHECK(current->address == symbol->address);
    CHECK(current_again->address == symbol->address);
    CHECK(fdes > 0);
    size_t with_lines = 0;
    for (const std::string& chain : chains)
        with_lines += chain.find(".c:") != std::string::npos;
    CHECK(with_lines > chains.size() / 2);
}

TEST_CASE("firmware check: which Cortex-M runs which architecture (Tag_CPU_arch)")
{
    using mcuprof::sources::architecture_fits;
    using mcuprof::sources::cortex_m_name;
    // CPUID values from the parts' Technical Reference Manuals: implementer 0x41, PartNo bits 15:4.
    const uint32_t m0 = 0x410CC200, m3 = 0x412FC230, m4 = 0x410FC241, m33 = 0x410FD210;
    CHECK(cortex_m_name(m0) == "Cortex-M0");
    CHECK(cortex_m_name(m4) == "Cortex-M4");
    CHECK(architecture_fits(m0, 11));          // ARMv6-M on an M0
    CHECK_FALSE(architecture_fits(m0, 13));    // ARMv7E-M does not run on an M0
    CHECK_FALSE(architecture_fits(m4, 11));    // an M0 image on an M4: another part's build
    CHECK(architecture_fits(m4, 10));          // ARMv7-M (an M3 build) on an M4
    CHECK(architecture_fits(m4, 13));
    CHECK_FALSE(architecture_fits(m3, 13));    // DSP instructions an M3 lacks
    CHECK(architecture_fits(m33, 17));
    CHECK(architecture_fits(0x410FFFF0, 13));  // a part the table does not know: not judged
    CHECK(cortex_m_name(0x410FFFF0).empty());
}

namespace {

// nm's address of a symbol (Thumb bit cleared), 0 when nm does not list it.
uint32_t nm_address(const std::string& elf, const std::string& name)
{
    std::istringstream text(tool_output("arm-none-eabi-nm '" + elf + "'"));
    std::string address, kind, symbol;
    while (text >> address >> kind >> symbol)
        if (symbol == name)
            return uint32_t(std::stoul(address, nullptr, 16)) & ~1u;
    return 0;
}

} // namespace

TEST_CASE("firmware: a bootloader and its application, opened together")
{
    const std::string app = image("vendor_app_m4"), boot = image("vendor_boot_m4");
    const ImageSet both = ImageSet::open({app, boot});
    REQUIRE(both.images().size() == 2);
    CHECK(&both.main() == &both.images().front());
    CHECK(both.main().path() == app);
    CHECK(both.describe() == app + " and " + boot);
    CHECK(both.notes().empty());
    const mcuprof::core::SymbolTable& symbols = both.symbols();
    // Each image's functions at nm's addresses; the names both images have, told apart by file.
    for (const auto& [elf, file] : {std::pair{app, "vendor_app_m4.elf"}, std::pair{boot, "vendor_boot_m4.elf"}})
        for (const char* name : {"main", "Reset_Handler", "SystemInit"}) {
            CAPTURE(elf);
            CAPTURE(name);
            const uint32_t at = nm_address(elf, name);
            REQUIRE(at != 0);
            const auto* f = symbols.find(at);
            REQUIRE(f != nullptr);
            CHECK(f->name == std::string(name) + " (" + file + ")");
            CHECK(f->start == at);
        }
    const uint32_t crc = nm_address(boot, "boot_crc32"), mix = nm_address(app, "mix_step");
    REQUIRE(symbols.find(crc) != nullptr);
    CHECK(symbols.find(crc)->name == "boot_crc32");   // one image's alone: as it is
    CHECK(symbols.find(mix)->name == "mix_step");
    CHECK(symbols.in_code(crc));
    CHECK(symbols.in_code(mix));
    // Each address's image: the one whose code holds it, by nm's addresses of each.
    REQUIRE(both.image_at(crc) != nullptr);
    CHECK(both.image_at(crc)->path() == boot);
    REQUIRE(both.image_at(mix) != nullptr);
    CHECK(both.image_at(mix)->path() == app);
    CHECK(both.image_at(0xE000ED00) == nullptr);   // the System Control Space: no image's code
    // One image's own symbols know only its functions, by its own names.
    const auto* own_main = both.images()[1].symbols().find(nm_address(boot, "main"));
    REQUIRE(own_main != nullptr);
    CHECK(own_main->name == "main");
    CHECK_FALSE(both.main().symbols().in_code(crc));
    // Lines from each image's own DWARF, as addr2line reads that image.
    for (const auto& [elf, address] : {std::pair{boot, crc + 4}, std::pair{app, mix + 4}}) {
        CAPTURE(elf);
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%x", address);
        std::string expected = tool_output("arm-none-eabi-addr2line -e '" + elf + "' " + hex);
        expected = expected.substr(0, expected.find_first_of(" \n"));
        CHECK(both.locator().line_at(address) == expected);
        CHECK(mcuprof::core::SourceLocator::line_of(both.locator().frames(address)) == expected);
    }
    // The firmware check reads each image where it loads.
    const auto check = mcuprof::sources::firmware_check(both, false);
    bool of_boot = false, of_app = false;
    for (const auto& region : check.regions) {
        of_boot = of_boot || (region.of == " of " + boot && region.address < 0x08004000u);
        of_app = of_app || (region.of == " of " + app && region.address >= 0x08004000u);
    }
    CHECK(of_boot);
    CHECK(of_app);
}

TEST_CASE("firmware: two images that load the same flash are refused; RAM code both run is the first's")
{
    // Both fixtures are linked at 0x08000000.
    CHECK_THROWS_WITH_AS(ImageSet::open({std::string(FIXTURES_DIR) + "/symbols_fixture.elf",
                                         std::string(FIXTURES_DIR) + "/inline_fixture.elf"}),
                         doctest::Contains("is loaded too: two images of one target cannot share flash"),
                         mcuprof::core::Error);
    // Sections apart, segments not: the later image's segment carries its ELF headers from the
    // 64 KiB page's base, 0x08000000, over the first image's code (what QEMU refuses).
    const std::string low = std::string(FIXTURES_DIR) + "/symbols_fixture.elf",
                      high = std::string(FIXTURES_DIR) + "/headers_segment_fixture.elf";
    CHECK_THROWS_WITH_AS(ImageSet::open({low, high}),
                         (high + ", LOAD segment 0: loads 0x08000000 over " + low +
                          "'s LOAD segment 0 (0x08000000-0x0800002f): " + high +
                          "'s segment holds its ELF headers, from 0x08000000, below its first section at 0x08004000: "
                          "link it with -Wl,-n (no page alignment), a PHDRS command without FILEHDR and PHDRS, or "
                          "-Wl,-z,max-page-size=4096")
                             .c_str(),
                         mcuprof::core::Error);
    // ... and the other way round: the earlier image is the one whose headers are loaded.
    const std::string headers_first = high + "'s segment holds its ELF headers, from 0x08000000";
    CHECK_THROWS_WITH_AS(ImageSet::open({high, low}), doctest::Contains(headers_first.c_str()), mcuprof::core::Error);
    // Images already open are checked alike.
    std::vector<Image> opened;
    opened.push_back(Image::open(high));
    opened.push_back(Image::open(low));
    CHECK_THROWS_WITH_AS(ImageSet(std::move(opened)), doctest::Contains(headers_first.c_str()), mcuprof::core::Error);
    // vendor_m4 in the bootloader's place: its RAM code runs where the application's does.
    const std::string app = image("vendor_app_m4"), other = image("vendor_m4");
    const ImageSet both = ImageSet::open({app, other});
    REQUIRE(both.notes().size() >= 1);
    CHECK(both.notes().front().find(other + "'s code run from RAM") == 0);
    const uint32_t ram = nm_address(app, "ram_scale");
    REQUIRE(ram != 0);
    REQUIRE(both.symbols().find(ram) != nullptr);
    CHECK(both.symbols().find(ram)->name == "ram_scale");   // the application's, alone
    REQUIRE(both.image_at(ram) != nullptr);
    CHECK(both.image_at(ram)->path() == app);   // the earlier image's, as its name
}

TEST_CASE("firmware: an image or a set moved after its locator was made still answers, as a fresh one")
{
    const std::string elf = image("calltree_o2_m4");
    const Image fresh = Image::open(elf);
    const std::vector<mcuprof::core::Function>& functions = fresh.symbols().functions();
    REQUIRE(functions.size() >= 2);
    Image first = Image::open(elf);
    CHECK(first.locator().line_at(functions[0].start) == fresh.locator().line_at(functions[0].start));
    const Image moved = std::move(first);
    const std::string line = fresh.locator().line_at(functions[1].start);
    CHECK_FALSE(line.empty());
    CHECK(moved.locator().line_at(functions[1].start) == line);   // a unit not read before the move

    const std::string app = image("vendor_app_m4"), boot = image("vendor_boot_m4");
    const uint32_t crc = nm_address(boot, "boot_crc32"), mix = nm_address(app, "mix_step");
    ImageSet set = ImageSet::open({app, boot});
    const std::string mix_line = set.locator().line_at(mix);
    const ImageSet moved_set = std::move(set);
    CHECK(moved_set.locator().line_at(mix) == mix_line);
    CHECK(moved_set.locator().line_at(crc) == ImageSet::open({app, boot}).locator().line_at(crc));
}
