#include "mcuprof/image/demangle.h"

#include <cstdlib>
#include <memory>

#include <libiberty/demangle.h>

namespace mcuprof::core {

namespace {

using Text = std::unique_ptr<char, decltype(&std::free)>;

} // namespace

std::string demangle(const std::string& symbol)
{
    // Only mangled names: the demangler would read "i" or "f" as the types int and float.
    const bool itanium = symbol.compare(0, 2, "_Z") == 0;
    const bool rust_v0 = symbol.compare(0, 2, "_R") == 0;
    if (symbol.size() < 3 || !(itanium || rust_v0))
        return symbol;
    // Rust first, since a legacy Rust symbol is also a valid Itanium name (c++filt reads
    // _ZN2fw8checksum17h0123456789abcdefE as "fw::checksum::h0123456789abcdef"). libiberty's
    // rust_demangle accepts a legacy name only when its last component is the hash (17h and 16
    // hex digits, as rustc writes it) and a v0 name only when it parses, so C++ names fall
    // through. Without DMGL_VERBOSE it prints what rustc-demangle's alternate form does: no
    // legacy hash, no v0 crate disambiguator (with it, "fw[5bfafe2f6614823c]::run_chain").
    if (Text rust(rust_demangle(symbol.c_str(), DMGL_PARAMS | DMGL_ANSI), &std::free); rust)
        return rust.get();
    if (!itanium)
        return symbol;
    // libiberty's cp-demangle is the code c++filt runs, with c++filt's default flags
    // (binutils' cxxfilt.c: DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE). libstdc++'s
    // abi::__cxa_demangle is the same code without DMGL_VERBOSE, which prints the standard
    // substitutions short (Ss as "std::string", where c++filt writes std::basic_string<...>);
    // LLVM's demangler writes clones as "(.constprop.0)" and fails on some valid names.
    Text text(cplus_demangle(symbol.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE), &std::free);
    return text ? std::string(text.get()) : symbol;
}

} // namespace mcuprof::core
