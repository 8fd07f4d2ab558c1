// C++ names against the GNU toolchain's c++filt, the oracle: every symbol of the C++
// reference images (firmware-ref/src/cxx, built by `make firmware`).
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "mcuprof/core/demangle.h"
#include "mcuprof/core/firmware.h"
#include "mcuprof/core/symbols.h"
#include "tool_output.h"

using namespace mcuprof::core;

namespace {

const char* const cxx_images[] = {"cxx_o2_m4", "cxx_os_m4", "cxx_lto_m4"};

std::string image_path(const std::string& name)
{
    return std::string(FIRMWARE_DIR) + "/" + name + ".elf";
}

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

// c++filt's reading of each name, one name a line in and out. The list's name is the
// process's own: ctest runs each test case as a process, two at a time under -j2.
std::vector<std::string> cxxfilt(const std::vector<std::string>& names)
{
    const std::string list = "demangle_test_names." + std::to_string(getpid()) + ".txt";
    {
        std::ofstream out(list);
        for (const std::string& n : names)
            out << n << '\n';
    }
    std::vector<std::string> shown = lines_of(tool_output("arm-none-eabi-c++filt < " + list));
    std::remove(list.c_str());
    return shown;
}

} // namespace

TEST_CASE("demangle: every symbol of the C++ reference images as arm-none-eabi-c++filt shows it")
{
    std::set<std::string> seen_kinds;
    for (const char* image : cxx_images) {
        CAPTURE(image);
        const std::vector<std::string> symbols =
            lines_of(tool_output("arm-none-eabi-nm --defined-only -j " + image_path(image)));
        REQUIRE(symbols.size() > 20);
        const std::vector<std::string> expected = cxxfilt(symbols);
        REQUIRE(expected.size() == symbols.size());
        for (size_t i = 0; i < symbols.size(); ++i) {
            CAPTURE(symbols[i]);
            CHECK(demangle(symbols[i]) == expected[i]);
            for (const char* kind : {"{lambda(", "[clone .constprop.", "[clone .isra.", "[clone .part.",
                                     "[clone .lto_priv.", "::operator+(", "dsp::Fir<float, 16u>::push(float)",
                                     "dsp::Fir<long, 8u>::push(long)", "(anonymous namespace)::mix("})
                if (expected[i].find(kind) != std::string::npos)
                    seen_kinds.insert(kind);
        }
    }
    // The images hold every shape of name the scenario is there for.
    CHECK(seen_kinds.size() == 9);
}

TEST_CASE("demangle: c++filt's long forms, and names that are not mangled stay as they are")
{
    // DMGL_VERBOSE: the standard substitution Ss spelled out, as c++filt does.
    CHECK(demangle("_ZNSs4swapERSs") == cxxfilt({"_ZNSs4swapERSs"}).front());
    CHECK(demangle("_ZNSs4swapERSs").find("std::basic_string<char, std::char_traits<char>") == 0);
    for (const char* plain : {"main", "i", "f", "hot_a.constprop.0", "_Z", "_Zjunk", ""})
        CHECK(demangle(plain) == plain);
}

TEST_CASE("symbols: one label per function, same-named statics told apart by their file")
{
    for (const char* image : cxx_images) {
        CAPTURE(image);
        const SymbolTable table = SymbolTable::load(Firmware::open(image_path(image)));
        std::set<std::string> labels;
        std::vector<std::string> symbols;
        for (const Function& f : table.functions()) {
            CHECK(labels.insert(f.name).second);   // unique
            symbols.push_back(f.symbol);
        }
        const std::vector<std::string> shown = cxxfilt(symbols);
        for (size_t i = 0; i < symbols.size(); ++i) {
            const Function& f = table.functions()[i];
            CAPTURE(f.symbol);
            // The label is c++filt's name, or that name and " (FILE)" where another function has it too.
            if (f.name != shown[i])
                CHECK(f.name == shown[i] + " (" + f.file + ")");
        }
        if (std::string(image) != "cxx_lto_m4") {   // LTO renames the statics (.lto_priv.N, .constprop.N)
            CHECK(labels.count("checksum(unsigned char const*, int) (unit_a.cpp)") == 1);
            CHECK(labels.count("checksum(unsigned char const*, int) (unit_b.cpp)") == 1);
            CHECK(labels.count("(anonymous namespace)::mix(unsigned int) (unit_a.cpp)") == 1);
            CHECK(labels.count("(anonymous namespace)::mix(unsigned int) (unit_b.cpp)") == 1);
        }
    }
}

TEST_CASE("symbols: label_functions tells same names apart by file, else by address")
{
    std::vector<Function> functions = {
        {0x100, 8, "f()", {}, "_Z1fv", "a.cpp"},
        {0x200, 8, "f()", {}, "_Z1fv", "b.cpp"},
        {0x300, 8, "g()", {}, "_Z1gv", "c.cpp"},
        {0x400, 8, "g()", {}, "_Z1gv", "c.cpp"},
        {0x500, 8, "h()", {}, "_Z1hv", ""},
    };
    label_functions(functions);
    CHECK(functions[0].name == "f() (a.cpp)");
    CHECK(functions[1].name == "f() (b.cpp)");
    CHECK(functions[2].name == "g() (0x00000300)");
    CHECK(functions[3].name == "g() (0x00000400)");
    CHECK(functions[4].name == "h()");
}
