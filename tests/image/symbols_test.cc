#include <doctest/doctest.h>

#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/symbols.h"

using mcuprof::core::Image;
using mcuprof::core::SymbolTable;

namespace {
const std::string fixture = std::string(FIXTURES_DIR) + "/symbols_fixture.elf";
}

TEST_CASE("symbols: functions of the fixture at the addresses it was written with")
{
    const SymbolTable table = SymbolTable::load(Image::open(fixture));
    // func_a, local_b, func_c, asm_tail: four starts (alias_a shares func_a's).
    REQUIRE(table.functions().size() == 4);

    SUBCASE("the Thumb bit is cleared and sizes are kept")
    {
        const auto* a = table.find(0x08000000);
        REQUIRE(a != nullptr);
        CHECK(a->name == "func_a");
        CHECK(a->start == 0x08000000);
        CHECK(a->size == 16);
        CHECK(table.find(0x0800000e)->name == "func_a");
    }
    SUBCASE("a weak alias at the same address is counted once, under the global name")
    {
        const auto* a = table.find(0x08000004);
        REQUIRE(a != nullptr);
        CHECK(a->name == "func_a");
        REQUIRE(a->aliases.size() == 1);
        CHECK(a->aliases[0] == "alias_a");
    }
    SUBCASE("local functions count")
    {
        const auto* b = table.find(0x08000010);
        REQUIRE(b != nullptr);
        CHECK(b->name == "local_b");
        CHECK(b->size == 14);
    }
    SUBCASE("filler between functions belongs to none")
    {
        CHECK(table.find(0x0800001e) == nullptr);
        CHECK(table.in_code(0x0800001e));
    }
    SUBCASE("a symbol without size owns the rest of its section")
    {
        const auto* tail = table.find(0x0800002e);
        REQUIRE(tail != nullptr);
        CHECK(tail->name == "asm_tail");
        CHECK(tail->size == 8);
        CHECK(table.find(0x08000030) == nullptr);
        CHECK_FALSE(table.in_code(0x08000030));
    }
    SUBCASE("addresses before the image")
    {
        CHECK(table.find(0x07ffffff) == nullptr);
        CHECK(table.find(0) == nullptr);
    }
}

TEST_CASE("symbols: files that are not ARM ELF are refused with the path in the message")
{
    CHECK_THROWS_WITH_AS(SymbolTable::load(Image::open("/nonexistent/fw.elf")), doctest::Contains("/nonexistent/fw.elf"),
                         mcuprof::core::Error);
    // A source file is not an ELF at all.
    CHECK_THROWS_AS(SymbolTable::load(Image::open(std::string(TEST_SOURCE_DIR) + "/data/elf/symbols_fixture.S")),
                    mcuprof::core::Error);
    // The test program itself is an ELF, but for this host, not for ARM.
    CHECK_THROWS_WITH_AS(SymbolTable::load(Image::open("/proc/self/exe")), doctest::Contains("not"), mcuprof::core::Error);
}

TEST_CASE("symbols: a damaged dynamic symbol table is refused, naming it")
{
    // The layout fixture with section 2 (.fixed) turned into SHT_DYNSYM of 4 bytes with
    // sh_entsize 0 (readelf: "Section 2 has invalid sh_entsize of 0"); found by fuzz_elf,
    // where LLVM's symbolizer leaked the error of reading it.
    const std::string elf = std::string(TEST_SOURCE_DIR) + "/fuzz/corpus/elf/damaged_dynsym_symbolizer_leak.elf";
    try {
        SymbolTable::load(Image::open(elf));
        FAIL("no error for a damaged dynamic symbol table");
    } catch (const mcuprof::core::Error& error) {
        CHECK(error.file() == elf);
        CHECK(error.place() == "dynamic symbol table");
        CHECK(error.problem().find("sh_entsize") != std::string::npos);
    }
}
