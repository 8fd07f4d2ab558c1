#pragma once
// How every layer writes a 32-bit value (an address, a register, a word of memory) for people:
// "0x" and eight lower-case digits, as readelf, objdump and gdb print them. One style for
// every message and report; protocols keep their own (GDB RSP's bare digits, rsp_packet.h).
#include <cstdint>
#include <string>

namespace mcuprof {

std::string hex32(uint32_t value);

} // namespace mcuprof
