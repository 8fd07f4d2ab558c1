#pragma once
// CoreSight identification as a Cortex-M3/M4 presents it: the ROM table at 0xE00FF000
// that the MEM-AP's BASE points to, and the component and peripheral ID registers at the
// top of each component's 4 KiB block (ARM IHI 0029 CoreSight Architecture, "Component
// and Peripheral Identification"; ARMv7-M ARM, "The ARMv7-M ROM table").
#include <cstdint>
#include <optional>

namespace mcuprof::vprobe {

struct CoreSightId {
    uint16_t part = 0;            // PIDR0/PIDR1: the component's part number
    uint8_t revision = 0;         // PIDR2[7:4]
    uint8_t component_class = 0;  // CIDR1[7:4]: 0x1 ROM table, 0xE generic IP (Cortex-M components)
};

// The ID register at `offset` inside a 4 KiB component block (0xFD0..0xFFC; PIDR4-7,
// PIDR0-3, CIDR0-3), for an ARM-designed component (JEP106 continuation 4, code 0x3B).
// nullopt for any other offset.
std::optional<uint32_t> coresight_id_register(const CoreSightId& id, uint32_t offset);

namespace cortex_m_components {
constexpr uint32_t itm = 0xE0000000;
constexpr uint32_t dwt = 0xE0001000;
constexpr uint32_t fpb = 0xE0002000;
constexpr uint32_t scs = 0xE000E000;
constexpr uint32_t tpiu = 0xE0040000;
constexpr uint32_t etm = 0xE0041000;
constexpr uint32_t rom_table = 0xE00FF000;

// Part numbers ARM gives its Cortex-M4 components (OpenOCD's `dap info` names them).
constexpr CoreSightId rom_table_id{0x4C4, 0, 0x1};
constexpr CoreSightId scs_id{0x00C, 0, 0xE};
constexpr CoreSightId dwt_id{0x002, 3, 0xE};
constexpr CoreSightId fpb_id{0x003, 2, 0xE};
constexpr CoreSightId itm_id{0x001, 3, 0xE};
} // namespace cortex_m_components

// A word of the Cortex-M ROM table block, by offset: entries (signed offsets from the
// table, bit 0 "present", bit 1 "32-bit format") for SCS, DWT (absent without `with_dwt`),
// FPB and ITM, TPIU and ETM listed as absent as on parts without them, the end marker, MEMTYPE
// (system memory is on this bus), and the ID registers. Other offsets read as zero.
uint32_t cortex_m_rom_table_word(uint32_t offset, bool with_dwt = true);

} // namespace mcuprof::vprobe
