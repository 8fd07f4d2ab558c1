#include "mcuprof/vprobe/chip.h"

#include "mcuprof/vprobe/jtag_dp.h"

namespace mcuprof::vprobe {

namespace {

// Addresses of the ID registers below.
constexpr uint32_t dbgmcu_idcode = 0xE0042000;        // STM32: DBGMCU_IDCODE (REV_ID [31:16], DEV_ID [11:0])
constexpr uint32_t stm32f1_flash_size = 0x1FFFF7E0;   // F_SIZE in KiB, bits 15:0 of this word
constexpr uint32_t stm32f2_f4_flash_size = 0x1FFF7A20; // F_SIZE is the halfword at 0x1FFF7A22: bits 31:16
constexpr uint32_t stm32l4_flash_size = 0x1FFF75E0;   // FLASH_SIZE in KiB, bits 15:0
constexpr uint32_t nrf51_ficr = 0x10000000;

// The Cortex-M3 r2 and M4 debug port every STM32F2/F4/L4 has (and the probe always showed):
// JTAG-DP TAP IDCODE 0x4BA00477, SW-DP DPIDR 0x2BA01477.
constexpr uint32_t arm_r2_tap = jtag_dp::cortex_m_idcode, arm_r2_dpidr = jtag_dp::cortex_m_dpidr;

const std::vector<Chip>& chips()
{
    static const std::vector<Chip> table = {
        // STM32F100RB (QEMU's stm32vldiscovery: 128 KiB of flash). RM0041 (STM32F100xx reference
        // manual), "Debug support": the Cortex-M3 r1 TAP's IDCODE 0x3BA00477, the SW-DP's
        // 0x1BA01477; "MCU device ID code": DBGMCU_IDCODE DEV_ID 0x420 (low- and medium-density
        // value line), REV_ID 0x1000 (revision A); "Device electronic signature", memory size
        // register at 0x1FFFF7E0: 128 (KiB).
        {"stm32f1x", "STM32F100RB", "stm32vldiscovery", 0x3BA00477, 0x1BA01477,
         {{dbgmcu_idcode, 0x10000420}, {stm32f1_flash_size, 0x0080}}},
        // STM32F205RG (QEMU's netduino2, whose stm32f205 has 1 MiB of flash). RM0033 (STM32F205xx/
        // 207xx/215xx/217xx reference manual), "Debug support": TAP 0x4BA00477, SW-DP 0x2BA01477;
        // DBGMCU_IDCODE DEV_ID 0x411, REV_ID 0x1000 (revision A); flash size register
        // (0x1FFF7A22): 1024 (KiB).
        {"stm32f2x", "STM32F205RG", "netduino2", arm_r2_tap, arm_r2_dpidr,
         {{dbgmcu_idcode, 0x10000411}, {stm32f2_f4_flash_size, 0x0400u << 16}}},
        // STM32F405RG (QEMU's netduinoplus2: 1 MiB of flash). RM0090 (STM32F405/415, 407/417,
        // 427/437, 429/439 reference manual), "Debug support": TAP 0x4BA00477, SW-DP 0x2BA01477;
        // DBGMCU_IDCODE DEV_ID 0x413 (STM32F405xx/07xx, 415xx/17xx), REV_ID 0x1000 (revision A);
        // flash size register (0x1FFF7A22): 1024 (KiB).
        {"stm32f4x", "STM32F405RG", "netduinoplus2", arm_r2_tap, arm_r2_dpidr,
         {{dbgmcu_idcode, 0x10000413}, {stm32f2_f4_flash_size, 0x0400u << 16}}},
        // STM32L475VG (QEMU's b-l475e-iot01a, QEMU 9 on: 1 MiB of flash). RM0351 (STM32L47x/48x/
        // 49x/4Ax reference manual), "Debug support": TAP 0x4BA00477, SW-DP 0x2BA01477;
        // DBGMCU_IDCODE DEV_ID 0x415 (STM32L475xx/476xx/486xx), REV_ID 0x1000; "Flash size data
        // register" at 0x1FFF75E0: 1024 (KiB).
        {"stm32l4x", "STM32L475VG", "b-l475e-iot01a", arm_r2_tap, arm_r2_dpidr,
         {{dbgmcu_idcode, 0x10000415}, {stm32l4_flash_size, 0x0400}}},
        // nRF51822-QFAA (QEMU's microbit). SWD only: the nRF51 has no JTAG port (nRF51 Series
        // Reference Manual v3.0, "Debugger support": a two-pin Serial Wire Debug interface). Its
        // DAP is the Cortex-M0's SW-DP, DPIDR 0x0BB11477 (Arm Cortex-M0 TRM, DDI 0432, "Debug":
        // DAP identification). FICR (same manual, "FICR"): CODEPAGESIZE 1024 at 0x010, CODESIZE
        // 256 pages at 0x014 (256 KiB), CONFIGID at 0x05C: HWID [15:0] 0x0072 (nRF51822 QFAA H0,
        // nRF51 Series Compatibility Matrix) and FWID [31:16] 0xFFFF (no SoftDevice loaded);
        // NUMRAMBLOCK at 0x034 and SIZERAMBLOCK[0..1] at 0x038, 0x03C: the QFAA's 16 KiB of RAM as
        // two blocks of 8 KiB (nRF51822 Product Specification, "Memory"). QEMU's FICR answers
        // CODEPAGESIZE and CODESIZE alike, the others 0xFFFFFFFF (unprogrammed), but maps only
        // its first 0x100 bytes: the rest of the FICR's 1 KiB page of information flash reads
        // erased here (OpenOCD's nrf5 driver reads INFO.PART at 0x100, an nRF52 register, first).
        {"nrf51", "nRF51822-QFAA", "microbit", std::nullopt, 0x0BB11477,
         {{nrf51_ficr + 0x010, 1024},
          {nrf51_ficr + 0x014, 256},
          {nrf51_ficr + 0x034, 2},
          {nrf51_ficr + 0x038, 0x2000},
          {nrf51_ficr + 0x03C, 0x2000},
          {nrf51_ficr + 0x05C, 0xFFFF0072}},
         {{nrf51_ficr + 0x100, nrf51_ficr + 0x400, 0xFFFFFFFF}}},
        // LM3S6965 (QEMU's lm3s6965evb), a Fury-class Stellaris part with a Cortex-M3 r1p2. TI's
        // LM3S6965 data sheet, "JTAG ID Register": 0x3BA00477; the SW-DP of the Cortex-M3 r1
        // (Arm Cortex-M3 TRM r1p1, DDI 0337, "SW-DP"): DPIDR 0x1BA01477. Its device
        // identification (DID0, DID1) and capabilities (DC0-DC4), which stellaris.cfg and the
        // stellaris flash driver read, QEMU's lm3s6965evb models itself.
        {"stellaris", "LM3S6965", "lm3s6965evb", 0x3BA00477, 0x1BA01477, {}},
    };
    return table;
}

} // namespace

const Chip& generic_chip()
{
    static const Chip chip{"", "Cortex-M3 r2 / M4 debug port", "", arm_r2_tap, arm_r2_dpidr, {}};
    return chip;
}

const Chip* find_chip(std::string_view name)
{
    for (const Chip& chip : chips())
        if (chip.name == name)
            return &chip;
    return nullptr;
}

std::string chip_names()
{
    std::string names;
    for (const Chip& chip : chips())
        names += (names.empty() ? "" : ", ") + std::string(chip.name);
    return names;
}

std::optional<uint32_t> ChipBus::id_register(uint32_t word_address) const
{
    for (const ChipIdRegister& r : chip_.id_registers)
        if (r.address == word_address)
            return r.value;
    for (const ChipIdRange& r : chip_.id_ranges)
        if (word_address >= r.begin && word_address < r.end)
            return r.value;
    return std::nullopt;
}

bool ChipBus::read(uint32_t address, unsigned size, uint32_t& value)
{
    const std::optional<uint32_t> word = id_register(address & ~3u);
    if (!word)
        return next_.read(address, size, value);
    // A byte or halfword read takes the lanes of its address (the flash size halfwords).
    const unsigned shift = 8 * (address & 3);
    value = size == 4 ? *word : (*word >> shift) & ((1u << (8 * size)) - 1);
    return true;
}

bool ChipBus::write(uint32_t address, unsigned size, uint32_t value)
{
    if (id_register(address & ~3u))
        return true;   // read-only on the part: the write is ignored, as the bus does there
    return next_.write(address, size, value);
}

} // namespace mcuprof::vprobe
