#include "mcuprof/vprobe/rom_table.h"

#include "mcuprof/vprobe_signature.h"

namespace mcuprof::vprobe {

namespace {

// ARM's JEP106 identity: bank 5 (continuation code 4), code 0x3B.
constexpr uint32_t arm_jep106_continuation = 0x4;
constexpr uint32_t arm_jep106_code = 0x3B;

// A ROM table entry for the component at `address`: its offset from the table, with the
// "32-bit format" bit and "present" as given (ARMv7-M ARM, ROM table entries).
constexpr uint32_t rom_entry(uint32_t address, bool present)
{
    return ((address - cortex_m_components::rom_table) & 0xFFFFF000u) | 0x2u | (present ? 1u : 0u);
}

} // namespace

std::optional<uint32_t> coresight_id_register(const CoreSightId& id, uint32_t offset)
{
    switch (offset) {
    case 0xFD0: return arm_jep106_continuation;   // PIDR4: 4KB count 0 (one block), continuation code
    case 0xFD4:
    case 0xFD8:
    case 0xFDC: return 0;                         // PIDR5-7: reserved
    case 0xFE0: return id.part & 0xFFu;           // PIDR0: part[7:0]
    case 0xFE4: return ((id.part >> 8) & 0xFu) | ((arm_jep106_code & 0xFu) << 4);
    case 0xFE8: return (arm_jep106_code >> 4) | 0x8u | (uint32_t(id.revision & 0xF) << 4);   // bit 3: JEDEC code used
    case 0xFEC: return 0;                         // PIDR3: no customer modification
    case 0xFF0: return 0x0D;                      // CIDR0-3: the preamble 0xB105_000D with the class in CIDR1
    case 0xFF4: return uint32_t(id.component_class & 0xF) << 4;
    case 0xFF8: return 0x05;
    case 0xFFC: return 0xB1;
    default: return std::nullopt;
    }
}

uint32_t cortex_m_rom_table_word(uint32_t offset, bool with_dwt)
{
    using namespace cortex_m_components;
    switch (offset) {
    case 0x000: return rom_entry(scs, true);
    case 0x004: return rom_entry(dwt, with_dwt);
    case 0x008: return rom_entry(fpb, true);
    case 0x00C: return rom_entry(itm, true);
    case 0x010: return rom_entry(tpiu, false);
    case 0x014: return rom_entry(etm, false);
    case 0x018: return 0;   // end of table
    case 0xFCC: return 1;   // MEMTYPE.SYSMEM: system memory is present on this bus
    case vprobe_signature::address - rom_table:   // mcuprof/vprobe_signature.h: this is no real chip
        return vprobe_signature::words[0];
    case vprobe_signature::address - rom_table + 4:
        return vprobe_signature::words[1];
    default: break;
    }
    if (auto id = coresight_id_register(rom_table_id, offset))
        return *id;
    return 0;
}

} // namespace mcuprof::vprobe
