#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mcuprof/image/error.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/source_locator.h"
#include "mcuprof/image/symbols.h"
#include "tool_output.h"

using namespace mcuprof::core;

TEST_CASE("source locator: an address inside hot_a inlined into run inlined into main")
{
    const std::string elf = std::string(FIXTURES_DIR) + "/inline_fixture.elf";
    const SymbolTable symbols = SymbolTable::load(Image::open(elf));
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
    const Image locator_image = Image::open(elf);
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
    const Image locator_image = Image::open(std::string(FIXTURES_DIR) + "/symbols_fixture.elf");
    SourceLocator locator(locator_image);
    const auto& frames = locator.frames(0x08000004);
    // The symbol table still names the function; there is no file or line.
    for (const auto& f : frames)
        CHECK(f.file.empty());
    CHECK(SourceLocator::line_of(frames).empty());
    // A file that cannot be read is an error of the image, before any locator is made.
    CHECK_THROWS_AS(Image::open("/nonexistent.elf"), Error);
}

namespace {

// arm-none-eabi-addr2line's inline chain of each address (-i: innermost first), as
// "file:line" without the discriminator: the oracle for which code runs at an address.
std::map<uint32_t, std::vector<std::string>> addr2line_chains(const std::string& elf, const std::vector<uint32_t>& at)
{
    std::string command = "arm-none-eabi-addr2line -a -i -e " + elf;
    char hex[16];
    for (uint32_t a : at) {
        std::snprintf(hex, sizeof hex, " 0x%x", a);
        command += hex;
    }
    std::map<uint32_t, std::vector<std::string>> chains;
    std::istringstream out(tool_output(command));
    uint32_t address = 0;
    for (std::string line; std::getline(out, line);) {
        if (line.starts_with("0x"))
            address = uint32_t(std::stoul(line, nullptr, 16));
        else
            chains[address].push_back(line.substr(0, line.find(" (discriminator")));
    }
    return chains;
}

std::string base_line(const std::string& place)
{
    return place.substr(place.find_last_of('/') + 1);
}

} // namespace

TEST_CASE("source locator: inlined functions are told apart by their abstract origin, as addr2line places them")
{
    // cxx_o2_m4's main inlines two std::sort instances whose DWARF names print alike, and
    // the sorting code inlines the lambdas each hands its comparison to: every lambda's
    // operator() has the one DWARF name "operator()". Each must be a function of its own.
    const std::string elf = std::string(FIRMWARE_DIR) + "/cxx_o2_m4.elf";
    const Image image = Image::open(elf);
    std::vector<uint32_t> addresses;   // every function's code
    for (const Function& f : image.symbols().functions())
        for (uint32_t a = f.start; a < f.start + f.size; a += 2)
            addresses.push_back(a);
    const auto oracle = addr2line_chains(elf, addresses);

    SourceLocator locator(image);
    std::map<std::string, std::set<std::string>> lambdas;      // label -> addr2line's innermost lines
    std::map<std::string, std::set<std::string>> sort_sites;   // sort's call site -> its labels
    size_t chains = 0;
    for (uint32_t a : addresses) {
        const auto& frames = locator.frames(a);
        const std::vector<std::string>& expected = oracle.at(a);
        CAPTURE(a);
        // Compiled code only: addr2line reads libgcc's assembly (.S) differently, its symbols
        // as frames.
        if (frames.empty() || frames.front().file.empty() || frames.back().file.ends_with(".S"))
            continue;
        // The same chain, frame for frame, as addr2line's.
        REQUIRE(frames.size() == expected.size());
        for (size_t i = 0; i < frames.size(); ++i)
            CHECK(frames[i].file + ":" + std::to_string(frames[i].line) == expected[i]);
        chains += frames.size() > 1;
        if (frames.front().function.starts_with("operator() ("))
            lambdas[frames.front().function].insert(base_line(expected.front()));
        for (size_t i = 0; i + 1 < frames.size(); ++i)
            if (frames[i].function.starts_with("std::sort<app::Record*"))
                sort_sites[base_line(expected[i + 1])].insert(frames[i].function);
    }
    CHECK(chains > 50);
    // A lambda's code is on the line it is written on: its label names that line.
    REQUIRE(lambdas.size() >= 2);
    for (const auto& [label, lines] : lambdas) {
        CAPTURE(label);
        REQUIRE(lines.size() == 1);
        CHECK(label == "operator() (" + *lines.begin() + ")");
    }
    // Two call sites, one sort each, two functions.
    REQUIRE(sort_sites.size() == 2);
    std::set<std::string> sorts;
    for (const auto& [site, labels] : sort_sites) {
        CAPTURE(site);
        CHECK(labels.size() == 1);
        sorts.insert(labels.begin(), labels.end());
    }
    CHECK(sorts.size() == 2);
    for (const std::string& label : sorts)
        CHECK(label.find(" (DIE 0x") != std::string::npos);
}

TEST_CASE("source locator: an inlined function without a linkage name is qualified by its scopes, as gdb names it")
{
    // GCC gives no linkage name to a function of internal linkage that exists only inlined
    // (next_random in main.cpp's anonymous namespace), nor to the inlined template functions
    // of the standard library: c++filt has no symbol to name them from. gdb names them from
    // DWARF, qualified by their namespaces and classes: the oracle, one block per inlined call
    // ("N symbols in 0xLOW..0xHIGH, function NAME"). Its names with a parameter list or a
    // mangled name are of functions with a linkage name, which the other tests check.
    const std::string elf = std::string(FIRMWARE_DIR) + "/cxx_o2_m4.elf";
    std::istringstream out(tool_output("gdb-multiarch -nx -batch -ex 'maint expand-symtabs' -ex 'maint print symbols' " + elf));
    // gdb 13 and later say "N symbols in 0x...", gdb 12 "N syms/buckets in 0x..."; gdb 16
    // prints only the symbol tables it has read, hence maint expand-symtabs, which brings in
    // libgcc's assembly too: only the C++ tables' blocks are the oracle's.
    std::map<uint32_t, std::string> blocks;   // an inlined call's first address -> gdb's name
    bool cxx = false;
    for (std::string line; std::getline(out, line);) {
        if (line.starts_with("Language: "))
            cxx = line == "Language: c++";
        if (!cxx)
            continue;
        std::string marker = " syms/buckets in 0x";
        size_t at = line.find(marker);
        if (at == std::string::npos)
            at = line.find(marker = " symbols in 0x");
        const size_t named = line.find(", function ");
        if (at == std::string::npos || named == std::string::npos)
            continue;
        const std::string name = line.substr(named + 11);
        if (name.starts_with("_Z") || name.ends_with(")"))
            continue;
        blocks.emplace(uint32_t(std::stoul(line.substr(at + marker.size()), nullptr, 16)), name);
    }
    const Image image = Image::open(elf);
    SourceLocator locator(image);
    std::set<std::string> named;
    for (const auto& [address, name] : blocks) {
        CAPTURE(address);
        CAPTURE(name);
        const auto& frames = locator.frames(address);
        // A namesake carries its label after the name: " (main.cpp:116)", " (DIE 0x409c)".
        const bool found = std::any_of(frames.begin(), frames.end(), [&](const SourceFrame& f) {
            return f.function == name || f.function.starts_with(name + " (");
        });
        CHECK(found);
        named.insert(name);
    }
    CHECK(named.count("(anonymous namespace)::next_random") == 1);
    CHECK(std::any_of(named.begin(), named.end(), [](const std::string& n) { return n.starts_with("std::sort<"); }));
    CHECK(named.size() >= 10);
}

TEST_CASE("source locator: one linkage name is one inlined function in the Rust images")
{
    // rustc writes several abstract instances of one function into the unit that inlines it
    // (core's wrapping_mul, once per place it is inlined from): one linkage name, one label.
    // Under v0 every name carries its generic arguments, so no inlined function needs a label.
    for (const char* image : {"rust_o2_m4", "rust_v0_o2_m4"}) {
        CAPTURE(image);
        const std::string elf = std::string(FIRMWARE_DIR) + "/" + image + ".elf";
        // make build goes on without the Rust part; a test that needs it fails, naming it.
        if (FILE* unbuilt = std::fopen((std::string(FIRMWARE_DIR) + "/" + image + ".unbuilt").c_str(), "r")) {
            std::fclose(unbuilt);
            FAIL_CHECK(std::string(image) << " was not built (see its .unbuilt)");
            continue;
        }
        const Image firmware = Image::open(elf);
        const SymbolTable symbols = SymbolTable::load(firmware);
        SourceLocator locator(firmware);
        std::map<std::string, std::set<std::string>> labels_of_linkage;
        size_t inlined = 0;
        for (const Function& f : symbols.functions()) {
            if (f.name.rfind("fw::", 0) != 0 && f.name.rfind("<fw::", 0) != 0)
                continue;
            for (uint32_t address = f.start; address < f.start + f.size; address += 2) {
                const std::vector<SourceFrame>& frames = locator.frames(address);
                for (size_t i = 0; i + 1 < frames.size(); ++i) {
                    labels_of_linkage[frames[i].symbol].insert(frames[i].function);
                    ++inlined;
                }
            }
        }
        CHECK(inlined > 100);
        for (const auto& [linkage, labels] : labels_of_linkage) {
            CAPTURE(linkage);
            CHECK(labels.size() == 1);
            if (std::string(image).find("_v0_") != std::string::npos)
                for (const std::string& label : labels)
                    CHECK(label.find(" (DIE ") == std::string::npos);
        }
    }
}
