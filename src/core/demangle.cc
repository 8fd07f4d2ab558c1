#include "mcuprof/core/demangle.h"

#include <cstdlib>
#include <memory>

#include <libiberty/demangle.h>

namespace mcuprof::core {

std::string demangle(const std::string& symbol)
{
    // Only mangled names: the demangler would read "i" or "f" as the types int and float.
    if (symbol.size() < 3 || symbol.compare(0, 2, "_Z") != 0)
        return symbol;
    // libiberty's cp-demangle is the code c++filt runs, with c++filt's default flags
    // (binutils' cxxfilt.c: DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE). libstdc++'s
    // abi::__cxa_demangle is the same code without DMGL_VERBOSE, which prints the standard
    // substitutions short (Ss as "std::string", where c++filt writes std::basic_string<...>);
    // LLVM's demangler writes clones as "(.constprop.0)" and fails on some valid names.
    std::unique_ptr<char, decltype(&std::free)> text(
        cplus_demangle(symbol.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE), &std::free);
    return text ? std::string(text.get()) : symbol;
}

} // namespace mcuprof::core
