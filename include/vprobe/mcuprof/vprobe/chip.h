#pragma once
// The chip the virtual probe shows a debugger (vprobe --chip NAME): what identifies the part
// on its debug port (the JTAG TAP's IDCODE, the SW-DP's DPIDR) and the read-only ID registers
// in its memory map that OpenOCD's stock target script and flash driver for it read
// (DBGMCU_IDCODE, the flash size word, the nRF51's FICR), with the values the chip's
// reference manual gives. NAME is OpenOCD's target script, target/NAME.cfg. Without --chip
// the probe shows the generic Cortex-M3 r2 / M4 DP of an STM32F2/F4 and no ID registers, as
// it always did. See docs/vprobe.md, "The chip".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcuprof/vprobe/mem_ap.h"

namespace mcuprof::vprobe {

struct ChipIdRegister {
    uint32_t address;   // word-aligned
    uint32_t value;
};

// Words [begin, end) that all read `value`: information flash the part has and QEMU's machine
// does not map (an erased word reads 0xFFFFFFFF).
struct ChipIdRange {
    uint32_t begin;
    uint32_t end;
    uint32_t value;
};

struct Chip {
    std::string_view name;           // OpenOCD's target/NAME.cfg; empty for the generic DP
    std::string_view part;           // the part QEMU's machine models
    std::string_view machine;        // that QEMU machine
    std::optional<uint32_t> jtag_idcode;   // nullopt: the part has no JTAG port (SWD only)
    uint32_t dpidr;                  // the SW-DP's DPIDR (ADIv5 DPIDR)
    std::vector<ChipIdRegister> id_registers;
    std::vector<ChipIdRange> id_ranges = {};
};

// The generic DP (no --chip): TAP 0x4BA00477, DPIDR 0x2BA01477, no ID registers.
const Chip& generic_chip();
// The chip of OpenOCD's target script `name`, or nullptr when the probe does not model it.
const Chip* find_chip(std::string_view name);
// The names find_chip knows, ", "-separated, for a usage error.
std::string chip_names();

// The bus the MEM-AP sees: the chip's ID registers answered here (read-only, as on the part:
// writes are ignored), every other access passed to `next` (the Cortex-M debug bus).
class ChipBus : public MemoryBus {
public:
    ChipBus(const Chip& chip, MemoryBus& next) : chip_(chip), next_(next) {}

    bool read(uint32_t address, unsigned size, uint32_t& value) override;
    bool write(uint32_t address, unsigned size, uint32_t value) override;

private:
    std::optional<uint32_t> id_register(uint32_t word_address) const;

    const Chip& chip_;
    MemoryBus& next_;
};

} // namespace mcuprof::vprobe
