#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "mcuprof/image/data_layout.h"
#include "mcuprof/image/dwarf_check.h"
#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"

using namespace mcuprof::core;

namespace {

// Little-endian bytes, written as DWARF lays them out.
struct Bytes {
    std::string data;
    Bytes& u8(unsigned v) { data.push_back(char(v)); return *this; }
    Bytes& u16(unsigned v) { return u8(v & 0xff).u8(v >> 8); }
    Bytes& u32(uint32_t v) { return u16(v & 0xffff).u16(v >> 16); }
    Bytes& text(const std::string& s) { data += s; data.push_back('\0'); return *this; }
};

// Two abbreviations (DWARF 5 section 7.5.3), worked out by hand:
//   1: DW_TAG_compile_unit, children; DW_AT_name DW_FORM_string, DW_AT_language DW_FORM_data1
//   2: DW_TAG_variable, no children; DW_AT_location DW_FORM_exprloc, DW_AT_decl_line DW_FORM_udata
std::string abbreviations()
{
    return Bytes()
        .u8(1).u8(0x11).u8(1).u8(0x03).u8(0x08).u8(0x13).u8(0x0b).u8(0).u8(0)
        .u8(2).u8(0x34).u8(0).u8(0x02).u8(0x18).u8(0x3a).u8(0x0f).u8(0).u8(0)
        .u8(0)
        .data;
}

// One DWARF 4 unit of 0x18 bytes:
//   0x00 unit length 0x14, 0x04 version 4, 0x06 abbreviation offset 0, 0x0a address size 4
//   0x0b entry 1: "a", language 0x0c
//   0x0f entry 2: 0x10 exprloc of 5 bytes (DW_OP_addr 0x20000000), 0x16 decl_line 42
//   0x17 null entry (the end of the compile unit's children)
std::string unit()
{
    return Bytes()
        .u32(0x14).u16(4).u32(0).u8(4)
        .u8(1).text("a").u8(0x0c)
        .u8(2).u8(5).u8(0x03).u32(0x20000000).u8(42)
        .u8(0)
        .data;
}

// The check's error on these sections, or "" when they pass.
std::string check(const std::string& info, const std::string& abbrev = abbreviations())
{
    DebugSections sections;
    sections.units.push_back({".debug_info", info, false});
    sections.abbreviations = abbrev;
    try {
        check_debug_entries(sections, "fw.elf");
        return "";
    } catch (const Error& error) {
        CHECK(error.file() == "fw.elf");
        return error.what();
    }
}

// The error a call throws, or `none`.
template <typename Call>
std::string error_of(Call&& call, const std::string& none = "no error")
{
    try {
        call();
    } catch (const Error& error) {
        return error.what();
    }
    return none;
}

std::string with_byte(std::string bytes, size_t offset, unsigned value)
{
    return bytes.replace(offset, 1, 1, char(value));
}

} // namespace

TEST_CASE("dwarf check: well-formed units pass, in DWARF 4 and 5")
{
    REQUIRE(unit().size() == 0x18);
    CHECK(check(unit()) == "");
    CHECK(check(unit() + unit()) == "");
    // DWARF 5 (section 7.5.1.1): version, unit type DW_UT_compile, address size, then the
    // abbreviation offset; the unit is one byte longer.
    std::string v5 = Bytes().u32(0x15).u16(5).u8(1).u8(4).u32(0).data + unit().substr(0x0b);
    CHECK(check(v5) == "");
    // An empty section has no units to check.
    CHECK(check("") == "");
}

TEST_CASE("dwarf check: a block longer than its unit is the error LLVM 14 would read past the section on")
{
    // The exprloc's length at 0x10 says 0x40 bytes where 7 are left in the unit.
    CHECK(check(with_byte(unit(), 0x10, 0x40)) ==
          "fw.elf, .debug_info at 0x10: a DW_FORM_exprloc value of 0x40 bytes runs past the end of the unit at 0x0 (0x18)");
    // One byte too many is enough: 7 bytes follow the length in the unit.
    CHECK(check(with_byte(unit(), 0x10, 8)).starts_with("fw.elf, .debug_info at 0x10: a DW_FORM_exprloc value of 0x8 bytes"));
    // With 7 the block fits, and swallows the decl_line and the null entry: what follows,
    // decl_line's LEB128, is then read from past the unit.
    CHECK(check(with_byte(unit(), 0x10, 7)) ==
          "fw.elf, .debug_info at 0x18: a DW_FORM_udata value runs past the end of the unit at 0x0 (0x18)");
}

TEST_CASE("dwarf check: unit headers are checked against the section and what LLVM reads")
{
    CHECK(check(with_byte(unit(), 0x00, 0x15)) ==
          "fw.elf, .debug_info at 0x0: unit length 0x15 runs past the end of the section (0x18)");
    CHECK(check(Bytes().u32(0xfffffff3).data + unit()) ==
          "fw.elf, .debug_info at 0x0: unit length 0xfffffff3 is a reserved value");
    CHECK(check(with_byte(unit(), 0x04, 6)) == "fw.elf, .debug_info at 0x4: DWARF version 6 (2 to 5 are read)");
    CHECK(check(with_byte(unit(), 0x0a, 3)) == "fw.elf, .debug_info at 0xa: address size 3 (2, 4 or 8 are read)");
    CHECK(check(with_byte(unit(), 0x06, 0x40)) ==
          "fw.elf, .debug_info at 0x0: abbreviation offset 0x40 is past the end of .debug_abbrev (0x13 bytes)");
    // A header cut by its own length: 4 bytes of unit, the version and half an offset.
    CHECK(check(Bytes().u32(4).u16(4).u16(0).data) ==
          "fw.elf, .debug_info at 0x6: an abbreviation offset of 0x4 bytes runs past the end of the unit at 0x0 (0x8)");
    // A second unit after a good one is checked too, at its own offset.
    CHECK(check(unit() + with_byte(unit(), 0x04, 1)) == "fw.elf, .debug_info at 0x1c: DWARF version 1 (2 to 5 are read)");
}

TEST_CASE("dwarf check: entries are checked against their abbreviations")
{
    CHECK(check(with_byte(unit(), 0x0f, 7)) ==
          "fw.elf, .debug_info at 0xf: abbreviation code 7 is not in the unit's table at .debug_abbrev 0x0");
    // decl_line's LEB128 at 0x16 continues into the null entry's byte, and past the unit.
    CHECK(check(with_byte(with_byte(unit(), 0x16, 0x80), 0x17, 0x80)) ==
          "fw.elf, .debug_info at 0x16: a DW_FORM_udata value runs past the end of the unit at 0x0 (0x18)");
    // The name without its NUL inside the unit: a NUL in the next unit does not count.
    const std::string no_nul = unit().substr(0, 0x0d) + std::string(0x18 - 0x0d, 'x');
    const std::string expected =
        "fw.elf, .debug_info at 0xc: a DW_FORM_string value has no terminating NUL before the end of the unit at 0x0 (0x18)";
    CHECK(check(no_nul) == expected);
    CHECK(check(no_nul + unit()) == expected);
    // An unknown form (0x7f for DW_FORM_udata in abbreviation 2) at the value that uses it.
    std::string abbrev = abbreviations();
    REQUIRE(abbrev[15] == 0x0f);
    abbrev[15] = 0x7f;
    CHECK(check(unit(), abbrev) == "fw.elf, .debug_info at 0x16: an attribute of unknown form 0x7f");
}

TEST_CASE("dwarf check: abbreviation tables are read within .debug_abbrev")
{
    // Without the table's terminating 0 code and with its last declaration cut.
    CHECK(check(unit(), abbreviations().substr(0, 16)) ==
          "fw.elf, .debug_abbrev at 0x10: an attribute name runs past the end of the section (0x10)");
    std::string zero_form = abbreviations();
    zero_form[6] = 0;   // DW_AT_language with form 0
    CHECK(check(unit(), zero_form) == "fw.elf, .debug_abbrev at 0x5: abbreviation 1 has an attribute with form 0");
    // Code 0x100000001 (LEB128 81 80 80 80 10), which LLVM would keep as 1.
    const std::string long_code = Bytes().u8(0x81).u8(0x80).u8(0x80).u8(0x80).u8(0x10).data + abbreviations().substr(1);
    CHECK(check(unit(), long_code) == "fw.elf, .debug_abbrev at 0x0: abbreviation code 0x100000001 does not fit in 32 bits");
}

TEST_CASE("dwarf check: a long chain of DW_FORM_indirect is followed without recursion")
{
    // Abbreviation 1 with one attribute of DW_FORM_indirect; the entry's value is 200000
    // indirect forms and then DW_FORM_data1 with its byte.
    const std::string abbrev = Bytes().u8(1).u8(0x11).u8(0).u8(0x03).u8(0x16).u8(0).u8(0).u8(0).data;
    const size_t chain = 200000;
    std::string entries = Bytes().u8(1).data + std::string(chain, char(0x16)) + Bytes().u8(0x0b).u8(7).data;
    std::string info = Bytes().u32(uint32_t(7 + entries.size())).u16(4).u32(0).u8(4).data + entries;
    CHECK(check(info, abbrev) == "");
    // Cut before the final form: the last indirect form runs past the unit.
    info = Bytes().u32(uint32_t(7 + 1 + chain)).u16(4).u32(0).u8(4).data + entries.substr(0, 1 + chain);
    CHECK(check(info, abbrev).find("an indirect form runs past the end of the unit at 0x0") != std::string::npos);
}

TEST_CASE("dwarf check: every reference firmware image and test fixture passes")
{
    INFO("the reference firmware is built by `make firmware`: ", FIRMWARE_DIR);
    size_t images = 0;
    for (const auto& entry : std::filesystem::directory_iterator(FIRMWARE_DIR))
        if (entry.path().extension() == ".elf") {
            INFO(entry.path().string());
            CHECK_NOTHROW(SymbolTable::load(Image::open(entry.path().string())));
            ++images;
        }
    CHECK(images > 10);
    for (const char* fixture : {"layout_fixture.elf", "inline_fixture.elf", "symbols_fixture.elf"})
        CHECK_NOTHROW(SymbolTable::load(Image::open(std::string(FIXTURES_DIR) + "/" + fixture)));
}

TEST_CASE("dwarf check: the ELFs whose block lengths made LLVM 14 read past its buffer are one error")
{
    // The layout fixture with abbreviation 19's DW_AT_decl_file form changed from
    // DW_FORM_data1 to a block: as readelf --debug-dump=info shows, the attribute starts at
    // 0x238 in the unit at 0x0 that ends at 0x26e, and its block length ("Corrupt attribute
    // block length") is 0x3501 (DW_FORM_block2, found by the fuzzer) or 0x40000000
    // (DW_FORM_block4, made from it so that LLVM's read leaves the mapped memory: it crashed
    // `mcuprof report` with SIGSEGV).
    const std::string corpus = std::string(TEST_SOURCE_DIR) + "/fuzz/corpus/elf/";
    const std::pair<std::string, std::string> cases[] = {
        {"block2_length_past_unit_llvm14_overread.elf", "a DW_FORM_block2 value of 0x3501 bytes"},
        {"block4_length_far_past_section_segv.elf", "a DW_FORM_block4 value of 0x40000000 bytes"}};
    auto message = [](auto&& load) { return error_of(load); };
    for (const auto& [name, value] : cases) {
        const std::string elf = corpus + name;
        INFO(elf);
        const std::string problem = ".debug_info at 0x238: " + value + " runs past the end of the unit at 0x0 (0x26e)";
        // Every reader that hands the unit to LLVM's DWARF library checks it first: the data
        // layout (every unit) and the source locator, at a lookup in the unit (its only one,
        // 0x08000000 to 0x08000072 in .debug_aranges). The symbols read no DWARF entry, and
        // the unit's header and own entry are sound: they load.
        CHECK(message([&] { SymbolTable::load(Image::open(elf)); }) == "no error");
        CHECK(message([&] { const Image image = Image::open(elf); DataLayout layout(image); }) == elf + ", " + problem);
        CHECK(message([&] {
                  const Image image = Image::open(elf);
                  SourceLocator locator(image);
                  locator.frames(0x08000000);
              }) == elf + ", " + problem);
        // The image in memory (what the fuzzer hands in) too, under the name it is given.
        std::ifstream in(elf, std::ios::binary);
        const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK(message([&] { DataLayout::parse(image, "image"); }) == "image, " + problem);
        CHECK(message([&] { SourceLocator::parse(image, "image")->frames(0x08000040); }) == "image, " + problem);
    }
}

TEST_CASE("dwarf check: a unit's entries are checked when it is read, with the units it refers to")
{
    // Two units: unit() at 0x0 and, at 0x18, unit() with its exprloc's length (at 0x28) made
    // 0x40, past that unit's end at 0x30. The headers and each unit's own entry are sound.
    const std::string corrupt = with_byte(unit(), 0x10, 0x40);
    const std::string abbreviation_table = abbreviations();
    DebugSections sections;
    sections.abbreviations = abbreviation_table;
    const std::string two = unit() + corrupt;
    sections.units.push_back({".debug_info", two, false});
    auto problem = [](auto&& check) { return error_of(check, ""); };
    const std::string second = "fw.elf, .debug_info at 0x28: a DW_FORM_exprloc value of 0x40 bytes runs past the end "
                               "of the unit at 0x18 (0x30)";
    {
        DebugEntryCheck check(sections, "fw.elf");
        CHECK(problem([&] { check.check_unit_at(0x0); }) == "");
        CHECK(problem([&] { check.check_unit_at(0x40); }) == "");   // in no unit
        CHECK(problem([&] { check.check_unit_at(0x20); }) == second);
        CHECK(problem([&] { check.check_unit_at(0x20); }) == second);   // again: not marked checked
        CHECK(problem([&] { check.check_all(); }) == second);
    }
    // The first unit with a third entry, abbreviation 3 (DW_TAG_variable, DW_AT_type
    // DW_FORM_ref_addr), naming the second unit's variable: at 0x15 + 0xf = 0x24.
    //   0x00 length 0x11, version 4, abbreviations 0, address size 4; 0x0b entry 1;
    //   0x0f entry 3 with 0x24; 0x14 null entry
    const std::string refers = Bytes()
                                   .u32(0x11).u16(4).u32(0).u8(4)
                                   .u8(1).text("a").u8(0x0c)
                                   .u8(3).u32(0x24)
                                   .u8(0)
                                   .data;
    std::string abbrev = abbreviations();
    abbrev.insert(abbrev.size() - 1, Bytes().u8(3).u8(0x34).u8(0).u8(0x49).u8(0x10).u8(0).u8(0).data);
    DebugSections referring;
    referring.abbreviations = abbrev;
    const std::string linked = refers + corrupt;
    referring.units.push_back({".debug_info", linked, false});
    DebugEntryCheck check(referring, "fw.elf");
    CHECK(problem([&] { check.check_unit_at(0x0); }) ==
          "fw.elf, .debug_info at 0x25: a DW_FORM_exprloc value of 0x40 bytes runs past the end of the unit at 0x15 (0x2d)");
}
