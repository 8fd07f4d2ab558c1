// C++ names against the GNU toolchain's c++filt, the oracle: every symbol of the C++
// reference images (firmware-ref/src/cxx, built by `make firmware`).
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "mcuprof/image/demangle.h"
#include "mcuprof/image/firmware.h"
#include "mcuprof/image/symbols.h"
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

// What a filter (c++filt, the Rust peer) prints for each name, one name a line in and out. The
// list's name is the process's own: ctest runs each test case as a process, two at a time under -j2.
std::vector<std::string> filtered(const std::string& filter, const std::vector<std::string>& names)
{
    const std::string list = "demangle_test_names." + std::to_string(getpid()) + ".txt";
    {
        std::ofstream out(list);
        for (const std::string& n : names)
            out << n << '\n';
    }
    std::vector<std::string> shown = lines_of(tool_output(filter + " < " + list));
    std::remove(list.c_str());
    return shown;
}

// c++filt's reading of each name.
std::vector<std::string> cxxfilt(const std::vector<std::string>& names)
{
    return filtered("arm-none-eabi-c++filt", names);
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
        const SymbolTable table = SymbolTable::load(Image::open(image_path(image)));
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

// ---- Rust: against rustc-demangle, the crate Rust's own tools print names with ----

namespace {

const char* const rust_images[] = {"rust_o2_m4", "rust_os_m4", "rust_v0_o2_m4", "rust_v0_os_m4"};

// rustc-demangle's alternate form ("{:#}") of each name (tests/peers/rust_demangle.rs, built
// with Debian's rustc from librust-rustc-demangle-dev's source).
std::vector<std::string> rust_peer(const std::vector<std::string>& names)
{
    REQUIRE_MESSAGE(access(RUST_DEMANGLE_PEER, X_OK) == 0,
                    RUST_DEMANGLE_PEER " is missing: rustc and librust-rustc-demangle-dev (scripts/setup.sh)");
    return filtered(RUST_DEMANGLE_PEER, names);
}

// Why the firmware build left a Rust image out (its NAME.unbuilt), or "" when it was built.
std::string unbuilt_reason(const std::string& image)
{
    std::ifstream unbuilt(std::string(FIRMWARE_DIR) + "/" + image + ".unbuilt");
    std::string why;
    if (unbuilt && !std::getline(unbuilt, why))
        why = "(no reason given)";
    return why;
}

bool rust_mangled(const std::string& symbol)
{
    // v0 (_R), or legacy: an Itanium-shaped name whose last component is the 17h<16 hex> hash.
    if (symbol.rfind("_R", 0) == 0)
        return true;
    const size_t n = symbol.size();
    return symbol.rfind("_ZN", 0) == 0 && n > 20 && symbol.compare(n - 20, 3, "17h") == 0 && symbol.back() == 'E';
}

} // namespace

TEST_CASE("demangle: Rust legacy and v0 names of each shape as rustc-demangle's alternate form prints them")
{
    // The inputs are rustc 1.63's symbols for the shapes of firmware-ref/src/rust/fw.rs (and a
    // legacy closure, which the images inline); what each must read as is the peer's answer.
    const std::vector<std::string> names = {
        "_ZN2fw8checksum17hba35b3e49d7fac6cE",                                   // legacy generic instance
        "_ZN2fw4left3mix17h713e916dbc52aceeE",                                   // legacy, in a module
        "_ZN56_$LT$fw..dsp..Fir$LT$_$GT$$u20$as$u20$fw..dsp..Stage$GT$4step17hcf66d1e34773203aE",  // trait impl
        "_ZN2fw5round28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE",       // legacy closure
        "_RINvCs7TBNNATzeH0_2fw8checksumhEB2_",                                  // v0 generic at u8
        "_RINvCs7TBNNATzeH0_2fw8checksumtEB2_",                                  // ... at u16
        "_RINvCs7TBNNATzeH0_2fw5applyNCNvB2_5round0EB2_",                        // v0 closure as a generic argument
        "_RNvXs_NtCs7TBNNATzeH0_2fw3dspINtB4_3FirKj8_ENtB4_5Stage4stepB6_",      // v0 trait impl, const generic
        "_RNvXs0_NtCs7TBNNATzeH0_2fw3dspNtB5_6BiquadNtB5_5Stage4step",
        "_RNvNtCs7TBNNATzeH0_2fw5right3mix",
    };
    const std::vector<std::string> expected = rust_peer(names);
    REQUIRE(expected.size() == names.size());
    std::set<std::string> shown;
    for (size_t i = 0; i < names.size(); ++i) {
        CAPTURE(names[i]);
        CHECK(demangle(names[i]) == expected[i]);
        // The peer did demangle it, without the hash or a disambiguator.
        CHECK(expected[i] != names[i]);
        CHECK(expected[i].find("::h") == std::string::npos);
        CHECK(expected[i].find('[') == std::string::npos);
        shown.insert(expected[i]);
    }
    // Legacy mangling drops generic arguments, v0 keeps them: the two instances differ under v0 only.
    CHECK(shown.count("fw::checksum") == 1);
    CHECK(demangle(names[4]) != demangle(names[5]));
    // A C++ name is still c++filt's, and one with an h-and-16-hex last component that is not
    // Rust's length-prefixed form stays C++.
    CHECK(demangle("_ZN3foo3barEv") == cxxfilt({"_ZN3foo3barEv"}).front());
}

TEST_CASE("demangle: every Rust symbol of the Rust reference images as rustc-demangle reads it")
{
    size_t checked = 0;
    for (const char* image : rust_images) {
        CAPTURE(image);
        // The build may leave an image out (make build goes on without the Rust part); a
        // test that needs it fails, naming it.
        if (const std::string why = unbuilt_reason(image); !why.empty()) {
            FAIL_CHECK(std::string(image) << " was not built: " << why);
            continue;
        }
        std::vector<std::string> symbols;
        for (const std::string& s : lines_of(tool_output("arm-none-eabi-nm --defined-only -j " + image_path(image))))
            if (rust_mangled(s))
                symbols.push_back(s);
        REQUIRE(symbols.size() > 20);
        const std::vector<std::string> expected = rust_peer(symbols);
        REQUIRE(expected.size() == symbols.size());
        for (size_t i = 0; i < symbols.size(); ++i) {
            CAPTURE(symbols[i]);
            CHECK(demangle(symbols[i]) == expected[i]);
        }
        checked += symbols.size();
    }
    MESSAGE(checked << " Rust symbols checked");
}

TEST_CASE("symbols: the two legacy instances of one Rust generic are two labels, told apart by address")
{
    const std::string image = "rust_o2_m4";
    if (const std::string why = unbuilt_reason(image); !why.empty())
        FAIL(image << " was not built: " << why);
    const SymbolTable table = SymbolTable::load(Image::open(image_path(image)));
    std::vector<const Function*> checksums;
    std::set<std::string> labels;
    for (const Function& f : table.functions()) {
        CHECK(labels.insert(f.name).second);
        if (f.name.rfind("fw::checksum (", 0) == 0)
            checksums.push_back(&f);
    }
    REQUIRE(checksums.size() == 2);
    for (const Function* f : checksums) {
        CHECK(rust_peer({f->symbol}).front() == "fw::checksum");
        char address[16];
        std::snprintf(address, sizeof address, "0x%08x", f->start);
        CHECK(f->name == "fw::checksum (" + std::string(address) + ")");
    }
}
