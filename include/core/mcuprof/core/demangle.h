#pragma once
// C++ names as the GNU toolchain's c++filt shows them, for every place that names a function.
#include <string>

namespace mcuprof::core {

// The demangled form of an Itanium-ABI symbol (_Z...), exactly as arm-none-eabi-c++filt
// prints it, clones included ("f(int) [clone .constprop.0]"); any other name unchanged
// (C functions, "main", names the demangler does not accept).
std::string demangle(const std::string& symbol);

} // namespace mcuprof::core
