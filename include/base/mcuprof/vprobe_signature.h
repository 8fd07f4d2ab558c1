#pragma once
// How mcuprof's virtual probe (`mcuprof vprobe`) makes itself known to a client that reaches it
// through OpenOCD: two words in the Cortex-M ROM table's 4 KB block, past its entries, where
// a real table reads as zero (ARMv7-M ARM C1.2, the ROM table: reserved words RAZ). OpenOCD
// passes memory reads through unchanged, on its Tcl port and its GDB port alike, so a sampler
// reads them to tell QEMU behind a virtual probe from a chip behind a real one.
#include <cstdint>

namespace mcuprof::vprobe_signature {

inline constexpr uint32_t address = 0xE00FF800;
inline constexpr uint32_t words[2] = {0x7063756D, 0x62727076};   // "mcup", "vprb" (little-endian ASCII)

} // namespace mcuprof::vprobe_signature
