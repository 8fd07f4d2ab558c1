#pragma once
// Function names as their language's own tools show them, for every place that names a function:
// C++ as the GNU toolchain's c++filt, Rust as rustc-demangle's alternate form ("{:#}").
#include <string>

namespace mcuprof::core {

// The demangled form of a symbol:
//  - Rust, legacy (_ZN...17h<16 hex>E) or v0 (_R...): as rustc-demangle's "{:#}" prints it, the
//    way rustfilt, probe-rs, samply and the Firefox profiler show Rust code, without the legacy
//    hash and without v0's crate disambiguators ("fw::checksum::<u8>", "fw::run::{closure#0}");
//  - C++ (_Z...): exactly as arm-none-eabi-c++filt prints it, clones included
//    ("f(int) [clone .constprop.0]");
//  - any other name unchanged (C functions, "main", names no demangler accepts).
std::string demangle(const std::string& symbol);

} // namespace mcuprof::core
