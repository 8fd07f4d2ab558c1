#include <doctest/doctest.h>

#include "mcuprof/core/error.h"
#include "mcuprof/core/firmware.h"
#include "mcuprof/core/source_locator.h"
#include "mcuprof/core/symbols.h"

using namespace mcuprof::core;

TEST_CASE("source locator: an address inside hot_a inlined into run inlined into main")
{
    const std::string elf = std::string(FIXTURES_DIR) + "/inline_fixture.elf";
    const SymbolTable symbols = SymbolTable::load(Firmware::open(elf));
    const Function* main_function = nullptr;
    for (const Function& f : symbols.functions())
        if (f.name == "main")
            main_function = &f;
    REQUIRE(main_function != nullptr);
    // At -O2 hot_a and run leave no symbols of their own: only main holds the code.
    for (const Function& f : symbols.functions()) {
        CHECK(f.name != "hot_a");
        CHECK(f.name != "run");
    }

    // The loop's store, "sink = i;", is line 8 of inline_fixture.c; somewhere in main an
    // instruction must carry it with the chain hot_a <- run <- main.
    const Firmware locator_image = Firmware::open(elf);
    SourceLocator locator(locator_image);
    bool found = false;
    for (uint32_t a = main_function->start; a < main_function->start + main_function->size; a += 2) {
        const auto& frames = locator.frames(a);
        if (frames.size() == 3 && frames[0].line == 8) {
            found = true;
            CHECK(frames[0].function == "hot_a");
            CHECK(frames[1].function == "run");
            CHECK(frames[2].function == "main");
            CHECK(frames[0].file.ends_with("inline_fixture.c"));
            CHECK(SourceLocator::line_of(frames).ends_with("inline_fixture.c:8"));
        }
    }
    CHECK(found);
}

TEST_CASE("source locator: no debug information gives empty chains, not errors")
{
    const Firmware locator_image = Firmware::open(std::string(FIXTURES_DIR) + "/symbols_fixture.elf");
    SourceLocator locator(locator_image);
    const auto& frames = locator.frames(0x08000004);
    // The symbol table still names the function; there is no file or line.
    for (const auto& f : frames)
        CHECK(f.file.empty());
    CHECK(SourceLocator::line_of(frames).empty());
    // A file that cannot be read is an error of the image, before any locator is made.
    CHECK_THROWS_AS(Firmware::open("/nonexistent.elf"), Error);
}
